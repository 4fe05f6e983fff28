package packagevariant

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

const (
	draftLC     = porchv1alpha1.PackageRevisionLifecycleDraft
	publishedLC = porchv1alpha1.PackageRevisionLifecyclePublished
	proposedLC  = porchv1alpha1.PackageRevisionLifecycleProposed
)

// planVariant is the variant the plan tests plan for: deploy/app from
// blueprints/app, whose upstream revisions v1..v3 are published.
var planVariant = variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})

// own is one of planVariant's revisions of deploy/app, in workspace ws,
// based on upstreamRef ("app/v2").
func own(ws string, lifecycle porchv1alpha1.PackageRevisionLifecycle, upstreamRef string) *porchv1alpha1.PackageRevision {
	pr := withLock(revision("ns", "deploy", "app", ws, planVariant), upstreamRef)
	pr.Spec.Lifecycle = lifecycle
	return pr
}

func revs(prs ...*porchv1alpha1.PackageRevision) []*porchv1alpha1.PackageRevision { return prs }

// planOf is the plan for pv (nil: planVariant) with downstream revisions
// ds, its steps decided from the caches alone.
func planOf(pv *configv1alpha1.PackageVariant, ds []*porchv1alpha1.PackageRevision) (*state, plan) {
	if pv == nil {
		pv = planVariant
	}
	up := revs(upstreamRev("v1", 1, publishedLC), upstreamRev("v2", 2, publishedLC), upstreamRev("v3", 3, publishedLC))
	st := &state{pv: pv, upstream: up[2], upRevs: up, dsRevs: ds}
	st.classify()
	return st, planDownstream(st)
}

var foreignRev = revision("ns", "deploy", "app", "theirs", variant("ns", "other", "uid-2", [2]string{"b", "a"}, [2]string{"deploy", "app"}))

// TestPlanDownstream: what a sync sets out to do, decided from the
// revisions in the cache alone.
func TestPlanDownstream(t *testing.T) {
	manual := planVariant.DeepCopy()
	manual.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	cases := map[string]struct {
		reason string
		pv     *configv1alpha1.PackageVariant
		revs   []*porchv1alpha1.PackageRevision
		want   []string
	}{
		"NothingYet": {reason: "an empty downstream package is cloned", want: []string{"clone"}},
		"Foreign":    {reason: "a package of someone else's is left alone", revs: revs(foreignRev), want: []string{"foreign"}},
		"DeletionProposed": {reason: "a deletion proposal waits for its decision",
			revs: revs(own("v1", porchv1alpha1.PackageRevisionLifecycleDeletionProposed, "app/v3")), want: []string{"deletionProposed"}},
		"PublishedCurrent": {reason: "a published revision on the selected upstream is checked (and edited when the variant would change it)",
			revs: revs(own("v1", publishedLC, "app/v3")), want: []string{"published", "deploy.app.v1 on blueprints.app.v3"}},
		"PublishedStale": {reason: "a published revision on an old upstream is upgraded",
			revs: revs(own("v1", publishedLC, "app/v2")), want: []string{"upgrade", "deploy.app.v1 on blueprints.app.v3 stale"}},
		"PublishedStaleHeld": {reason: "spec.upgradePolicy: Manual keeps a published revision on its upstream and says an upgrade is available",
			pv: manual, revs: revs(own("v1", publishedLC, "app/v2")), want: []string{"published", "deploy.app.v1 on blueprints.app.v2 held"}},
		"Proposed": {reason: "a Proposed revision waits for approval, even beside a published one",
			revs: revs(own("v1", publishedLC, "app/v3"), own("p1", proposedLC, "app/v2")), want: []string{"proposed", "deploy.app.p1 on blueprints.app.v3 stale"}},
		"DraftsUpToTheFirstStale": {reason: "drafts are worked through by name; the first stale one ends the pass",
			revs: revs(own("d3", draftLC, "app/v3"), own("d2", draftLC, "app/v2"), own("d1", draftLC, "app/v3"), own("v1", publishedLC, "app/v2")),
			want: []string{"drafts", "deploy.app.d1 on blueprints.app.v3", "deploy.app.d2 on blueprints.app.v3 stale"}},
	}
	kinds := map[planKind]string{planClone: "clone", planDrafts: "drafts", planProposed: "proposed", planUpgrade: "upgrade",
		planPublished: "published", planDeletionProposed: "deletionProposed", planForeign: "foreign"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, p := planOf(tc.pv, tc.revs)
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

// TestDecide: the actions a plan takes, decided from its steps and what
// observe read of them, each with the decision that made it.
func TestDecide(t *testing.T) {
	manual := planVariant.DeepCopy()
	manual.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	failedRender := planVariant.DeepCopy()
	failedRender.Status.DownstreamTargets = []configv1alpha1.DownstreamTarget{{Name: "deploy.app.d1", RenderStatus: porchv1alpha1.RenderStatus{Err: "render failed"}}}
	upToDate := &reading{upToDate: true}
	changed := &reading{prr: &porchv1alpha1.PackageRevisionResources{}}
	changed.res.Changed = true
	unchanged := &reading{prr: &porchv1alpha1.PackageRevisionResources{}}
	pending := &reading{pending: &renderPending{draft: "deploy.app.d1"}}
	blocked := &reading{blocked: &mutationError{fmt.Errorf("no package context")}}
	read := func(name string, rd *reading) map[string]*reading { return map[string]*reading{name: rd} }
	v1, p1, d1 := own("v1", publishedLC, "app/v3"), own("p1", proposedLC, "app/v3"), own("d1", draftLC, "app/v3")

	cases := map[string]struct {
		reason string
		pv     *configv1alpha1.PackageVariant
		revs   []*porchv1alpha1.PackageRevision
		reads  map[string]*reading
		want   []string
	}{
		"Clone":   {reason: "an empty package is cloned", want: []string{"clone", "done Ready"}},
		"Foreign": {reason: "another owner's package waits", revs: revs(foreignRev), want: []string{"wait Foreign", "done Ready"}},
		"DeletionProposed": {reason: "a deletion proposal waits",
			revs: revs(own("v1", porchv1alpha1.PackageRevisionLifecycleDeletionProposed, "app/v3")), want: []string{"wait DeletionProposed", "done Ready"}},
		"Upgrade": {reason: "a published revision on an old upstream is upgraded from the revision it is based on",
			revs: revs(own("v1", publishedLC, "app/v2")), want: []string{"upgrade deploy.app.v1 from blueprints.app.v2 to blueprints.app.v3", "done Ready"}},
		"UpgradeBesideAnotherOwnersDraft": {reason: "another owner's open draft blocks the upgrade: a package has one open draft at a time",
			revs: revs(own("v1", publishedLC, "app/v2"), foreignRev), want: []string{"blocked deploy.app.v1 by an open revision of PackageVariant other", "done Ready"}},
		"UpgradeFromAGoneRevision": {reason: "an upstream revision no longer published leaves Porch nothing to merge from",
			revs: revs(own("v1", publishedLC, "app/v9")), want: []string{"wait CannotUpgrade", "done Ready"}},
		"PublishedUpToDate": {reason: "nothing changed since the last write",
			revs: revs(v1), reads: read(v1.Name, upToDate), want: []string{"none deploy.app.v1", "done Ready"}},
		"PublishedChanged": {reason: "the variant would change a published revision: an edit draft",
			revs: revs(v1), reads: read(v1.Name, changed), want: []string{"edit deploy.app.v1", "done Ready"}},
		"PublishedUnchanged": {reason: "a published revision that holds all the variant asks is recorded",
			revs: revs(v1), reads: read(v1.Name, unchanged), want: []string{"record deploy.app.v1", "done Ready"}},
		"PublishedBlocked": {reason: "a variant that cannot be applied blocks",
			revs: revs(v1), reads: read(v1.Name, blocked), want: []string{"blocked deploy.app.v1", "done Ready"}},
		"ProposedStale": {reason: "an upgrade waits for the approval of a Proposed revision",
			revs: revs(own("p1", proposedLC, "app/v2")), want: []string{"wait ApprovalBeforeUpgrade", "done ReadyProposed"}},
		"ProposedChanged": {reason: "the variant's changes wait for the approval of a Proposed revision",
			revs: revs(p1), reads: read(p1.Name, changed), want: []string{"wait ApprovalBeforeChanges", "done ReadyProposed"}},
		"ProposedUpToDate": {reason: "a Proposed revision with all the variant asks is ready, waiting for approval",
			revs: revs(p1), reads: read(p1.Name, upToDate), want: []string{"none deploy.app.p1", "done ReadyProposed"}},
		"Drafts": {reason: "drafts are kept current in order, and the first stale one is replaced",
			revs:  revs(d1, own("d2", draftLC, "app/v3"), own("d3", draftLC, "app/v2"), own("d4", draftLC, "app/v3")),
			reads: map[string]*reading{"deploy.app.d1": upToDate, "deploy.app.d2": changed},
			want:  []string{"none deploy.app.d1", "write deploy.app.d2", "replace deploy.app.d3", "done Ready"}},
		"DraftUnchanged": {reason: "a draft that holds all the variant asks is recorded, not written",
			revs: revs(d1), reads: read(d1.Name, unchanged), want: []string{"record deploy.app.d1", "done Ready"}},
		"DraftRenderFailed": {reason: "a draft whose last render failed is written again, so that Porch renders again",
			pv: failedRender, revs: revs(d1), reads: read(d1.Name, unchanged), want: []string{"write deploy.app.d1", "done Ready"}},
		"DraftRenderPending": {reason: "a failed render is retried on its backoff",
			pv: failedRender, revs: revs(d1), reads: read(d1.Name, pending), want: []string{"renderWait deploy.app.d1", "done Ready"}},
		"DraftHeldOnAGoneRevision": {reason: "spec.upgradePolicy: Manual keeps a draft based on an upstream revision no longer published: replacing it would move the variant by itself",
			pv: manual, revs: revs(own("d1", draftLC, "app/v9")), want: []string{"wait HeldOnGone", "done Ready"}},
		"DraftOnAGoneRevision": {reason: "without a hold, a draft based on an upstream revision no longer published is replaced from the selected one",
			revs: revs(own("d1", draftLC, "app/v9")), want: []string{"replace deploy.app.d1", "done Ready"}},
	}
	progressNames := map[progressKind]string{progressReady: "Ready", progressReadyProposed: "ReadyProposed", progressForeign: "Foreign",
		progressDeletionProposed: "DeletionProposed", progressCannotUpgrade: "CannotUpgrade", progressHeldOnGone: "HeldOnGone",
		progressApprovalBeforeUpgrade: "ApprovalBeforeUpgrade", progressApprovalBeforeChanges: "ApprovalBeforeChanges"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st, p := planOf(tc.pv, tc.revs)
			p.decide(st, tc.reads)
			var got []string
			for _, a := range p.actions {
				line := a.kind.String()
				switch {
				case a.kind == actWait:
					line += " " + progressNames[a.wait.kind]
				case a.kind == actBlocked && errors.As(a.err, new(*otherDraftOpen)):
					line += fmt.Sprintf(" %s by an open revision of PackageVariant %s", a.rev.Name, a.err.(*otherDraftOpen).revisions[0].OwnerReferences[0].Name)
				case a.kind == actUpgrade:
					line += fmt.Sprintf(" %s from %s to %s", a.rev.Name, a.from.Name, a.base.Name)
				case a.rev != nil:
					line += " " + a.rev.Name
				}
				if a.why == "" {
					t.Errorf("%s: action %s says no why", tc.reason, line)
				}
				got = append(got, line)
			}
			got = append(got, "done "+progressNames[p.done.kind])
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: actions (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
