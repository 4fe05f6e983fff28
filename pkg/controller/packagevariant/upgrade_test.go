package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// upstreamRev is a revision of blueprints/app in workspace ws.
func upstreamRev(ws string, rev int, lifecycle porchv1alpha1.PackageRevisionLifecycle) *porchv1alpha1.PackageRevision {
	pr := revision("ns", "blueprints", "app", ws, nil)
	pr.Spec.Revision = rev
	pr.Spec.Lifecycle = lifecycle
	return pr
}

// withLock sets status.upstreamLock.git.ref.
func withLock(pr *porchv1alpha1.PackageRevision, ref string) *porchv1alpha1.PackageRevision {
	pr.Status.UpstreamLock = &porchv1alpha1.UpstreamLock{Type: "git", Git: &kptfilev1.GitLock{Ref: ref}}
	return pr
}

func TestNeedsUpgrade(t *testing.T) {
	v3 := upstreamRev("v3", 3, porchv1alpha1.PackageRevisionLifecyclePublished)
	downstream := func() *porchv1alpha1.PackageRevision {
		return revision("ns", "deploy", "app", "packagevariant-1", nil)
	}
	locked := func(ref string) *porchv1alpha1.PackageRevision { return withLock(downstream(), ref) }
	cases := map[string]struct {
		reason string
		pr     *porchv1alpha1.PackageRevision
		want   bool
	}{
		"BasedOnOlder":    {"a downstream locked to v2 needs the upgrade to v3", locked("app/v2"), true},
		"BasedOnSelected": {"a downstream locked to v3 is current", locked("app/v3"), false},
		"BasedOnNewer":    {"pinning an older revision moves the downstream back too", locked("app/v4"), true},
		"BasedOnDraft":    {"a downstream cloned from an upstream draft is always replaced by a published base", locked("drafts/app/wip"), true},
		"NoLock":          {"without a lock (adopted, made by init) the downstream is taken as current, as the reference does", downstream(), false},
		"UnreadableLock":  {"a lock that names no revision is taken as current", locked("main"), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, needsUpgrade(tc.pr, v3)); diff != "" {
				t.Errorf("%s: needsUpgrade (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
