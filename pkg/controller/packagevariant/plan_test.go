package packagevariant

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// TestPlanDownstream: what a sync sets out to do, decided from the
// revisions in the cache alone.
func TestPlanDownstream(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	manual := pv.DeepCopy()
	manual.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	v2 := upstreamRev("v2", 2, porchv1alpha1.PackageRevisionLifecyclePublished)
	v3 := upstreamRev("v3", 3, porchv1alpha1.PackageRevisionLifecyclePublished)
	own := func(ws string, lifecycle porchv1alpha1.PackageRevisionLifecycle, upstreamRef string) *porchv1alpha1.PackageRevision {
		pr := withLock(revision("ns", "deploy", "app", ws, pv), upstreamRef)
		pr.Spec.Lifecycle = lifecycle
		return pr
	}
	draft, published, proposed := porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecyclePublished, porchv1alpha1.PackageRevisionLifecycleProposed
	foreign := revision("ns", "deploy", "app", "theirs", variant("ns", "other", "uid-2", [2]string{"b", "a"}, [2]string{"deploy", "app"}))

	cases := map[string]struct {
		reason string
		pv     *configv1alpha1.PackageVariant
		revs   []*porchv1alpha1.PackageRevision
		want   []string
	}{
		"NothingYet": {
			reason: "an empty downstream package is cloned",
			want:   []string{"clone"},
		},
		"Foreign": {
			reason: "a package of someone else's is left alone",
			revs:   []*porchv1alpha1.PackageRevision{foreign},
			want:   []string{"foreign"},
		},
		"DeletionProposed": {
			reason: "a deletion proposal waits for its decision",
			revs:   []*porchv1alpha1.PackageRevision{own("v1", porchv1alpha1.PackageRevisionLifecycleDeletionProposed, "app/v3")},
			want:   []string{"deletionProposed"},
		},
		"PublishedCurrent": {
			reason: "a published revision on the selected upstream is checked (and edited when the variant would change it)",
			revs:   []*porchv1alpha1.PackageRevision{own("v1", published, "app/v3")},
			want:   []string{"published", "deploy.app.v1 on blueprints.app.v3"},
		},
		"PublishedStale": {
			reason: "a published revision on an old upstream is upgraded",
			revs:   []*porchv1alpha1.PackageRevision{own("v1", published, "app/v2")},
			want:   []string{"upgrade", "deploy.app.v1 on blueprints.app.v3 stale"},
		},
		"PublishedStaleHeld": {
			reason: "spec.upgradePolicy: Manual keeps a published revision on its upstream and says an upgrade is available",
			pv:     manual,
			revs:   []*porchv1alpha1.PackageRevision{own("v1", published, "app/v2")},
			want:   []string{"published", "deploy.app.v1 on blueprints.app.v2 held"},
		},
		"Proposed": {
			reason: "a Proposed revision waits for approval, even beside a published one",
			revs:   []*porchv1alpha1.PackageRevision{own("v1", published, "app/v3"), own("p1", proposed, "app/v2")},
			want:   []string{"proposed", "deploy.app.p1 on blueprints.app.v3 stale"},
		},
		"DraftsUpToTheFirstStale": {
			reason: "drafts are worked through by name; the first stale one ends the pass",
			revs: []*porchv1alpha1.PackageRevision{own("d3", draft, "app/v3"), own("d2", draft, "app/v2"), own("d1", draft, "app/v3"),
				own("v1", published, "app/v2")},
			want: []string{"drafts", "deploy.app.d1 on blueprints.app.v3", "deploy.app.d2 on blueprints.app.v3 stale"},
		},
	}
	kinds := map[planKind]string{planClone: "clone", planDrafts: "drafts", planProposed: "proposed", planUpgrade: "upgrade",
		planPublished: "published", planDeletionProposed: "deletionProposed", planForeign: "foreign"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := pv
			if tc.pv != nil {
				v = tc.pv
			}
			st := &state{pv: v, upstream: v3, upRevs: []*porchv1alpha1.PackageRevision{v2, v3}, dsRevs: tc.revs}
			st.classify()
			p := planDownstream(st)
			got := []string{kinds[p.kind]}
			for _, s := range p.steps {
				line := fmt.Sprintf("%s on %s", s.rev.Name, s.base.Name)
				if s.hold != "" {
					line += " held"
				}
				if s.stale {
					line += " stale"
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: plan (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
