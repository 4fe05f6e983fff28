package helper

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// revision is a Draft of repo/pkg in workspace ws.
func revision(ns, repo, pkg, ws string) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: repo + "." + pkg + "." + ws},
		Spec: porchv1alpha1.PackageRevisionSpec{
			RepositoryName: repo, PackageName: pkg, WorkspaceName: porchv1alpha1.WorkspaceName(ws),
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
		},
	}
}

// upstreamRev is a revision of blueprints/app in workspace ws.
func upstreamRev(ws string, rev int, lifecycle porchv1alpha1.PackageRevisionLifecycle) *porchv1alpha1.PackageRevision {
	pr := revision("ns", "blueprints", "app", ws)
	pr.Spec.Revision = rev
	pr.Spec.Lifecycle = lifecycle
	return pr
}

func placeholder() *porchv1alpha1.PackageRevision {
	return upstreamRev("main", porchv1alpha1.PlaceholderRevision, porchv1alpha1.PackageRevisionLifecyclePublished)
}

func labelledLatest(pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	pr.Labels = map[string]string{porchv1alpha1.LatestPackageRevisionLabel: "true"}
	return pr
}

// withLock sets status.upstreamLock.git.ref.
func withLock(pr *porchv1alpha1.PackageRevision, ref string) *porchv1alpha1.PackageRevision {
	pr.Status.UpstreamLock = &porchv1alpha1.UpstreamLock{Type: "git", Git: &kptfilev1.GitLock{Ref: ref}}
	return pr
}

func TestResolveUpstream(t *testing.T) {
	const published = porchv1alpha1.PackageRevisionLifecyclePublished
	// Three published revisions and the placeholder; v2 carries the
	// latest-revision label in the cases that want one.
	revs := func(latest string) []*porchv1alpha1.PackageRevision {
		out := []*porchv1alpha1.PackageRevision{placeholder()}
		for i, ws := range []string{"v1", "v2", "v3"} {
			pr := upstreamRev(ws, i+1, published)
			if ws == latest {
				labelledLatest(pr)
			}
			out = append(out, pr)
		}
		return out
	}
	const where = `upstream package "app" in repository "blueprints"`

	cases := map[string]struct {
		reason  string
		up      configv1alpha1.Upstream
		revs    []*porchv1alpha1.PackageRevision
		want    string
		wantErr string
	}{
		"RevisionN": {
			reason: "revision N selects the Published revision N, not the latest",
			up:     configv1alpha1.Upstream{Revision: 1},
			revs:   revs("v3"),
			want:   "blueprints.app.v1",
		},
		"WorkspaceName": {
			reason: "workspaceName selects that revision",
			up:     configv1alpha1.Upstream{WorkspaceName: "v2"},
			revs:   revs("v3"),
			want:   "blueprints.app.v2",
		},
		"BothAgree": {
			reason: "revision and workspaceName naming the same revision select it",
			up:     configv1alpha1.Upstream{Revision: 2, WorkspaceName: "v2"},
			revs:   revs("v3"),
			want:   "blueprints.app.v2",
		},
		"BothDisagree": {
			reason: "revision and workspaceName naming different revisions are reported with both values",
			up:     configv1alpha1.Upstream{Revision: 3, WorkspaceName: "v2"},
			revs:   revs("v3"),
			wantErr: where + `: spec.upstream.revision 3 and spec.upstream.workspaceName "v2" disagree (workspace "v2" is revision 2); ` +
				"set only one, or make them agree",
		},
		"NeitherFollowsLatestLabel": {
			reason: "with neither set the latest-revision label wins over the highest revision number",
			revs:   revs("v2"),
			want:   "blueprints.app.v2",
		},
		"NeitherWithoutLabelTakesHighest": {
			reason: "without the label the highest published revision is the latest",
			revs:   revs(""),
			want:   "blueprints.app.v3",
		},
		"NeitherIgnoresDrafts": {
			reason: "a draft (revision 0) or proposed revision is never the latest",
			revs: append(revs(""),
				upstreamRev("wip", 0, porchv1alpha1.PackageRevisionLifecycleDraft),
				upstreamRev("review", 0, porchv1alpha1.PackageRevisionLifecycleProposed)),
			want: "blueprints.app.v3",
		},
		"LabelOnTwoRevisionsTakesTheHigher": {
			reason: "Porch computes the label and moves it; a cache that shows it on two revisions follows the higher one",
			revs: []*porchv1alpha1.PackageRevision{
				labelledLatest(upstreamRev("v2", 2, published)),
				labelledLatest(upstreamRev("v1", 1, published)),
			},
			want: "blueprints.app.v2",
		},
		"LabelOnDeletionProposedIgnored": {
			reason: "a latest-revision label left on a revision proposed for deletion does not select it",
			revs: []*porchv1alpha1.PackageRevision{
				labelledLatest(upstreamRev("v1", 1, porchv1alpha1.PackageRevisionLifecycleDeletionProposed)),
				labelledLatest(upstreamRev("v2", 2, published)),
			},
			want: "blueprints.app.v2",
		},
		"PlaceholderOnly": {
			reason: "the placeholder is never cloned; status says so",
			revs:   []*porchv1alpha1.PackageRevision{placeholder()},
			wantErr: where + " has only its placeholder revision (main), which cannot be cloned; " +
				"publish a revision of the upstream package",
		},
		"PlaceholderByWorkspace": {
			reason: "naming the placeholder's workspace explicitly is refused too",
			up:     configv1alpha1.Upstream{WorkspaceName: "main"},
			revs:   revs("v3"),
			wantErr: where + `: workspace "main" is the placeholder revision, which cannot be cloned; ` +
				"name a published revision",
		},
		"DraftByWorkspace": {
			reason: "a Draft named by workspaceName is reported as not Published",
			up:     configv1alpha1.Upstream{WorkspaceName: "wip"},
			revs:   append(revs("v3"), upstreamRev("wip", 0, porchv1alpha1.PackageRevisionLifecycleDraft)),
			wantErr: where + `: revision in workspace "wip" is Draft, not Published; ` +
				"publish it, or point spec.upstream at a published revision",
		},
		"UnknownWorkspace": {
			reason:  "a workspace the package does not have is reported",
			up:      configv1alpha1.Upstream{WorkspaceName: "v9"},
			revs:    revs("v3"),
			wantErr: where + ` has no revision in workspace "v9"; check spec.upstream.workspaceName`,
		},
		"MissingPackage": {
			reason:  "an upstream package without any revision is reported as not found, not as a missing revision",
			up:      configv1alpha1.Upstream{Revision: 1},
			wantErr: "could not find " + where + "; check spec.upstream, or wait for the package to be published",
		},
		"MissingPackageByWorkspace": {
			reason:  "a missing package is reported as such, not as a missing workspace",
			up:      configv1alpha1.Upstream{WorkspaceName: "v1"},
			wantErr: "could not find " + where + "; check spec.upstream, or wait for the package to be published",
		},
		"MissingPackageFollowingLatest": {
			reason:  "the same when following the latest revision",
			wantErr: "could not find " + where + "; check spec.upstream, or wait for the package to be published",
		},
		"RevisionNotPublished": {
			reason:  "revision N that is not (yet) published is reported",
			up:      configv1alpha1.Upstream{Revision: 4},
			revs:    append(revs("v3"), upstreamRev("v4", 4, porchv1alpha1.PackageRevisionLifecycleProposed)),
			wantErr: where + " has no published revision 4; publish it, or change spec.upstream.revision",
		},
		"OnlyDrafts": {
			reason:  "a package with only drafts has nothing to clone yet",
			revs:    []*porchv1alpha1.PackageRevision{placeholder(), upstreamRev("wip", 0, porchv1alpha1.PackageRevisionLifecycleDraft)},
			wantErr: where + " has no published revision yet; publish one",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			up := tc.up
			up.Repo, up.Package = "blueprints", "app"
			pr, err := ResolveUpstream(&up, tc.revs)
			var got, gotErr string
			if pr != nil {
				got = pr.Name
			}
			if err != nil {
				gotErr = err.Error()
				var uerr *UpstreamError
				if !errors.As(err, &uerr) {
					t.Errorf("%s: error %T is not an UpstreamError, so it would be retried instead of reported", tc.reason, err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: selected revision (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("%s: error (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestLockedUpstreamRevision(t *testing.T) {
	type result struct {
		Rev int
		OK  bool
	}
	// locked is a draft whose upstream lock has the git ref ref.
	locked := func(ref string) *porchv1alpha1.PackageRevision {
		return withLock(upstreamRev("d", 1, porchv1alpha1.PackageRevisionLifecycleDraft), ref)
	}
	cases := map[string]struct {
		reason string
		pr     *porchv1alpha1.PackageRevision
		want   result
	}{
		"PlainTag":         {reason: "a ref v<N> is revision N", pr: locked("v3"), want: result{Rev: 3, OK: true}},
		"PackageTag":       {reason: "Porch writes <package>/v<N>", pr: locked("app/v3"), want: result{Rev: 3, OK: true}},
		"NestedPackageTag": {reason: "only the last path segment counts", pr: locked("team/app/v12"), want: result{Rev: 12, OK: true}},
		"DraftUpstream":    {reason: "a drafts/... ref says nothing about a published revision", pr: locked("drafts/app/v3")},
		"NoLock":           {reason: "no upstream lock, no revision", pr: upstreamRev("d", 1, porchv1alpha1.PackageRevisionLifecycleDraft)},
		"LockWithoutGit": {
			reason: "a lock without git says nothing",
			pr: func() *porchv1alpha1.PackageRevision {
				pr := upstreamRev("d", 1, porchv1alpha1.PackageRevisionLifecycleDraft)
				pr.Status.UpstreamLock = &porchv1alpha1.UpstreamLock{Type: "git"}
				return pr
			}(),
		},
		"EmptyRef":     {reason: "an empty ref says nothing", pr: locked("")},
		"Branch":       {reason: "a branch name is not a revision", pr: locked("main")},
		"Garbage":      {reason: "a ref that is not v<number> is not a revision", pr: locked("app/vthree")},
		"RevisionZero": {reason: "revisions start at 1", pr: locked("app/v0")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rev, ok := LockedUpstreamRevision(tc.pr)
			if diff := cmp.Diff(tc.want, result{Rev: rev, OK: ok}); diff != "" {
				t.Errorf("%s: LockedUpstreamRevision (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPublishedRevision(t *testing.T) {
	revs := []*porchv1alpha1.PackageRevision{
		placeholder(),
		upstreamRev("v1", 1, porchv1alpha1.PackageRevisionLifecyclePublished),
		upstreamRev("v2", 2, porchv1alpha1.PackageRevisionLifecycleDeletionProposed),
		upstreamRev("wip", 3, porchv1alpha1.PackageRevisionLifecycleProposed),
	}
	cases := map[string]struct {
		reason string
		n      int
		want   string
	}{
		"Published":        {reason: "a published revision is found", n: 1, want: "blueprints.app.v1"},
		"DeletionProposed": {reason: "a revision proposed for deletion still has final contents", n: 2, want: "blueprints.app.v2"},
		"NotPublished":     {reason: "an unpublished revision cannot be the old upstream of a merge", n: 3},
		"Placeholder":      {reason: "the placeholder is never an upstream", n: -1},
		"Missing":          {reason: "a revision that does not exist is not found", n: 9},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got string
			if pr := PublishedRevision(revs, tc.n); pr != nil {
				got = pr.Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: PublishedRevision(%d) (-want +got):\n%s", tc.reason, tc.n, diff)
			}
		})
	}
}

func TestPackageRevisionName(t *testing.T) {
	cases := map[string]struct {
		reason              string
		repo, pkg, ws, want string
	}{
		"Flat": {
			reason: "<repository>.<package>.<workspace>",
			repo:   "deploy", pkg: "app", ws: "packagevariant-1",
			want: "deploy.app.packagevariant-1",
		},
		"Nested": {
			reason: "a nested package path has its slashes turned into dots, as Porch names it",
			repo:   "deploy", pkg: "team/app/base", ws: "packagevariant-12",
			want: "deploy.team.app.base.packagevariant-12",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PackageRevisionName(tc.repo, tc.pkg, tc.ws)); diff != "" {
				t.Errorf("%s: PackageRevisionName (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNextWorkspace(t *testing.T) {
	revs := func(workspaces ...string) []*porchv1alpha1.PackageRevision {
		var out []*porchv1alpha1.PackageRevision
		for _, ws := range workspaces {
			out = append(out, revision("ns", "deploy", "app", ws))
		}
		return out
	}
	cases := map[string]struct {
		reason string
		revs   []*porchv1alpha1.PackageRevision
		want   string
	}{
		"NoRevisions": {
			reason: "the first draft is packagevariant-1",
			want:   "packagevariant-1",
		},
		"MaxPlusOne": {
			reason: "one more than the highest N, not the count, and not numbered by string order",
			revs:   revs("packagevariant-2", "packagevariant-10", "packagevariant-9"),
			want:   "packagevariant-11",
		},
		"IgnoresOtherWorkspaces": {
			reason: "workspaces not made by a variant do not count, however numeric",
			revs:   revs("main", "v7", "99", "packagevariant-1", "my-packagevariant-50"),
			want:   "packagevariant-2",
		},
		"IgnoresGarbageNumbers": {
			reason: "a packagevariant- workspace without a number does not count",
			revs:   revs("packagevariant-", "packagevariant-x", "packagevariant-3a", "packagevariant-3.5", "packagevariant-3"),
			want:   "packagevariant-4",
		},
		"IgnoresNegative": {
			reason: "a negative number never lowers the next one",
			revs:   revs("packagevariant--5"),
			want:   "packagevariant-1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NextWorkspace("packagevariant-", tc.revs)); diff != "" {
				t.Errorf("%s: NextWorkspace (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestIsPackagePath(t *testing.T) {
	cases := map[string]struct {
		pkg  string
		want bool
	}{
		"one segment":          {"app", true},
		"nested":               {"team/app", true},
		"empty":                {"", false},
		"empty segment":        {"team//app", false},
		"leading slash":        {"/app", false},
		"trailing slash":       {"app/", false},
		"dot segment":          {"team/./app", false},
		"dot-dot segment":      {"../app", false},
		"dots inside a name":   {"app..v2", true},
		"dot-prefixed segment": {"team/.app", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsPackagePath(tc.pkg); got != tc.want {
				t.Errorf("IsPackagePath(%q) = %v, want %v", tc.pkg, got, tc.want)
			}
		})
	}
}

func TestNextRevision(t *testing.T) {
	cases := map[string]struct {
		revs []*porchv1alpha1.PackageRevision
		want int
	}{
		"first publish": {nil, 1},
		"drafts only":   {[]*porchv1alpha1.PackageRevision{upstreamRev("d1", 0, porchv1alpha1.PackageRevisionLifecycleDraft)}, 1},
		"after the highest, gaps kept": {[]*porchv1alpha1.PackageRevision{
			upstreamRev("v1", 1, porchv1alpha1.PackageRevisionLifecyclePublished),
			upstreamRev("v3", 3, porchv1alpha1.PackageRevisionLifecycleDeletionProposed),
		}, 4},
		"placeholder aside": {[]*porchv1alpha1.PackageRevision{placeholder()}, 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NextRevision(tc.revs); got != tc.want {
				t.Errorf("NextRevision = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTaskUpstream(t *testing.T) {
	ref := func(name string) porchv1alpha1.PackageRevisionRef {
		return porchv1alpha1.PackageRevisionRef{Name: name}
	}
	cases := map[string]struct {
		task          porchv1alpha1.Task
		want          string
		wantDescribed string
	}{
		"clone names its upstreamRef": {porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{
			Upstream: porchv1alpha1.UpstreamPackage{UpstreamRef: &porchv1alpha1.PackageRevisionRef{Name: "up.v1"}}}}, "up.v1", "clone of up.v1"},
		"clone from git names none": {porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{}}, "", "clone"},
		"upgrade names its new upstream": {porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeUpgrade, Upgrade: &porchv1alpha1.PackageUpgradeTaskSpec{
			OldUpstream: ref("up.v1"), NewUpstream: ref("up.v2"), LocalPackageRevisionRef: ref("down.v1")}}, "up.v2", "upgrade of down.v1 from up.v1 to up.v2"},
		"edit names none": {porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{Source: &porchv1alpha1.PackageRevisionRef{Name: "down.v1"}}}, "", "edit of down.v1"},
		"init names none": {porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit}, "", "init"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := TaskUpstream(tc.task); got != tc.want {
				t.Errorf("TaskUpstream = %q, want %q", got, tc.want)
			}
			if got := DescribeTask(tc.task); got != tc.wantDescribed {
				t.Errorf("DescribeTask = %q, want %q", got, tc.wantDescribed)
			}
		})
	}
}

func TestUnmetReadinessGates(t *testing.T) {
	pr := revision("ns", "edge", "app", "v1")
	if got := UnmetReadinessGates(pr); got != nil {
		t.Errorf("no gates: got %q", got)
	}
	pr.Spec.ReadinessGates = []porchv1alpha1.ReadinessGate{
		{ConditionType: "config.injection.ConfigMap.met"},
		{ConditionType: "config.injection.ConfigMap.gone"},
		{ConditionType: "never.reported"},
	}
	pr.Status.Conditions = []porchv1alpha1.Condition{
		{Type: "config.injection.ConfigMap.met", Status: porchv1alpha1.ConditionTrue, Reason: "ConfigInjected"},
		{Type: "config.injection.ConfigMap.gone", Status: porchv1alpha1.ConditionFalse, Reason: "NoResourceSelected", Message: "no ConfigMap gone"},
		{Type: "not.a.gate", Status: porchv1alpha1.ConditionFalse},
	}
	want := []string{
		"config.injection.ConfigMap.gone is False (NoResourceSelected: no ConfigMap gone)",
		"never.reported is Unknown (no such condition)",
	}
	if diff := cmp.Diff(want, UnmetReadinessGates(pr)); diff != "" {
		t.Errorf("UnmetReadinessGates (-want +got):\n%s", diff)
	}
}
