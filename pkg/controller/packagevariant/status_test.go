package packagevariant

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

func TestSetTargets(t *testing.T) {
	rs := func(err string) porchv1alpha1.RenderStatus { return porchv1alpha1.RenderStatus{Err: err} }
	target := func(name string) *porchv1alpha1.PackageRevision {
		pr := revision("ns", "deploy", "app", "x", nil)
		pr.Name = name
		return pr
	}
	cases := map[string]struct {
		reason   string
		previous []configv1alpha1.DownstreamTarget
		targets  []*porchv1alpha1.PackageRevision
		rendered map[string]porchv1alpha1.RenderStatus
		want     []configv1alpha1.DownstreamTarget
	}{
		"SortedWithRenderStatus": {
			reason:   "targets are listed by name, with the render outcome of this sync",
			targets:  []*porchv1alpha1.PackageRevision{target("c"), target("a"), target("b")},
			rendered: map[string]porchv1alpha1.RenderStatus{"a": rs("a failed")},
			want:     []configv1alpha1.DownstreamTarget{{Name: "a", RenderStatus: rs("a failed")}, {Name: "b"}, {Name: "c"}},
		},
		"KeepsKnownRenderStatus": {
			reason:   "a target not rendered in this sync keeps the outcome recorded before; a new render replaces it; gone targets go",
			previous: []configv1alpha1.DownstreamTarget{{Name: "a", RenderStatus: rs("old a")}, {Name: "b", RenderStatus: rs("old b")}, {Name: "gone", RenderStatus: rs("x")}},
			targets:  []*porchv1alpha1.PackageRevision{target("b"), target("a")},
			rendered: map[string]porchv1alpha1.RenderStatus{"b": rs("")},
			want:     []configv1alpha1.DownstreamTarget{{Name: "a", RenderStatus: rs("old a")}, {Name: "b", RenderStatus: rs("")}},
		},
		"NoTargets": {
			reason:   "no targets clears the list",
			previous: []configv1alpha1.DownstreamTarget{{Name: "a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := targetsOf(tc.previous, tc.targets, tc.rendered)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: status.downstreamTargets (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// setInvalid, setValid, setReady and setNotReady make the edits
// calculateStatus makes (conditionEdits) on pv at its generation.
func setInvalid(pv *configv1alpha1.PackageVariant, stalledMessage, readyMessage string) {
	conditions.Make(&pv.Status.Conditions, pv.Generation, conditions.StalledNotReady(ReasonValidationError, stalledMessage, ReasonError, readyMessage)...)
}

func setValid(pv *configv1alpha1.PackageVariant) {
	conditions.Make(&pv.Status.Conditions, pv.Generation, conditions.Valid())
}

func setReady(pv *configv1alpha1.PackageVariant, message string) {
	conditions.Make(&pv.Status.Conditions, pv.Generation, edit(ConditionReady, metav1.ConditionTrue, ReasonNoErrors, message))
}

func setNotReady(pv *configv1alpha1.PackageVariant, reason, message string) {
	conditions.Make(&pv.Status.Conditions, pv.Generation, edit(ConditionReady, metav1.ConditionFalse, reason, message))
}

func TestConditionsCarryObservedGeneration(t *testing.T) {
	type cond struct {
		Type               string
		Status             metav1.ConditionStatus
		Reason             string
		ObservedGeneration int64
	}
	cases := map[string]struct {
		reason string
		set    func(pv *configv1alpha1.PackageVariant)
		want   []cond
	}{
		"Invalid": {
			reason: "an invalid variant is Stalled and not Ready",
			set:    func(pv *configv1alpha1.PackageVariant) { setInvalid(pv, "bad", "bad") },
			want: []cond{
				{ConditionReady, metav1.ConditionFalse, ReasonError, 7},
				{ConditionStalled, metav1.ConditionTrue, ReasonValidationError, 7},
			},
		},
		"ValidAndReady": {
			reason: "a valid, up to date variant",
			set:    func(pv *configv1alpha1.PackageVariant) { setValid(pv); setReady(pv, readyMessage) },
			want: []cond{
				{ConditionReady, metav1.ConditionTrue, ReasonNoErrors, 7},
				{ConditionStalled, metav1.ConditionFalse, ReasonValid, 7},
			},
		},
		"NotReady": {
			reason: "waiting for approval",
			set:    func(pv *configv1alpha1.PackageVariant) { setNotReady(pv, ReasonWaitingForApproval, "m") },
			want:   []cond{{ConditionReady, metav1.ConditionFalse, ReasonWaitingForApproval, 7}},
		},
		"UpdatesGenerationOfExisting": {
			reason: "a condition set in an older generation gets the new one even when nothing else changed",
			set: func(pv *configv1alpha1.PackageVariant) {
				pv.Generation = 6
				setReady(pv, readyMessage)
				pv.Generation = 7
				setReady(pv, readyMessage)
			},
			want: []cond{{ConditionReady, metav1.ConditionTrue, ReasonNoErrors, 7}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
			tc.set(pv)
			var got []cond
			for _, c := range pv.Status.Conditions {
				got = append(got, cond{c.Type, c.Status, c.Reason, c.ObservedGeneration})
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b cond) bool { return a.Type < b.Type })); diff != "" {
				t.Errorf("%s: conditions (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWriteStatus(t *testing.T) {
	cached := func() *configv1alpha1.PackageVariant {
		pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
		pv.Generation = 2
		pv.Status.ObservedGeneration = 2
		setValid(pv)
		setReady(pv, readyMessage)
		return pv
	}
	cases := map[string]struct {
		reason    string
		change    func(pv *configv1alpha1.PackageVariant)
		wantWrite bool
		want      func(pv *configv1alpha1.PackageVariant)
	}{
		"Unchanged": {
			reason: "an unchanged status costs no API call",
			change: func(*configv1alpha1.PackageVariant) {},
		},
		"SameConditionsAgain": {
			reason: "setting the same conditions again is no change (no flapping transition times)",
			change: func(pv *configv1alpha1.PackageVariant) { setValid(pv); setReady(pv, readyMessage) },
		},
		"ConditionChanged": {
			reason:    "a changed condition is written once",
			change:    func(pv *configv1alpha1.PackageVariant) { setNotReady(pv, ReasonWaitingForApproval, "waiting") },
			wantWrite: true,
			want:      func(pv *configv1alpha1.PackageVariant) { setNotReady(pv, ReasonWaitingForApproval, "waiting") },
		},
		"NewGeneration": {
			reason:    "a new generation alone is reported (status.observedGeneration and the conditions' observedGeneration)",
			change:    func(pv *configv1alpha1.PackageVariant) { pv.Generation = 3; setValid(pv); setReady(pv, readyMessage) },
			wantWrite: true,
			want: func(pv *configv1alpha1.PackageVariant) {
				pv.Generation = 3
				pv.Status.ObservedGeneration = 3
				setValid(pv)
				setReady(pv, readyMessage)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			old := cached()
			f := newFixture(t)
			f.pvs = append(f.pvs, old)
			f.Objects = append(f.Objects, old)
			c, _ := f.newController(ctx)
			desired := old.DeepCopy()
			tc.change(desired)
			if err := c.writeStatus(ctx, old, desired); err != nil {
				t.Fatalf("writeStatus: %v", err)
			}
			actions := f.WriteActions()
			if !tc.wantWrite {
				if len(actions) != 0 {
					t.Errorf("%s: want no API call, got %v", tc.reason, actions)
				}
				return
			}
			if len(actions) != 1 || actions[0].GetVerb() != "update" || actions[0].GetSubresource() != "status" {
				t.Fatalf("%s: want exactly one status update, got %v", tc.reason, actions)
			}
			written := actions[0].(core.UpdateAction).GetObject().(*configv1alpha1.PackageVariant)
			want := cached()
			tc.want(want)
			if diff := cmp.Diff(want.Status, written.Status, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s: written status (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCalculateStatus: the conditions and targets a user reads on a
// variant, for each outcome of a sync. Messages are spelled out: they are
// what a person acts on; the order of the conditions is the order a first
// sync adds them in.
func TestCalculateStatus(t *testing.T) {
	const gen = 5
	earlier := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cond := func(condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: gen}
	}
	valid := cond(ConditionStalled, metav1.ConditionFalse, ReasonValid, "all validation checks passed")
	ready := cond(ConditionReady, metav1.ConditionTrue, ReasonNoErrors, readyMessage)
	notReady := func(reason, message string) metav1.Condition {
		return cond(ConditionReady, metav1.ConditionFalse, reason, message)
	}
	stored := func(c metav1.Condition) metav1.Condition {
		c.ObservedGeneration, c.LastTransitionTime = gen-1, earlier
		return c
	}
	upgradeMsg := "upstream blueprints/app revision 3 (blueprints.app.v3) is available; deploy.app.d1 is based on revision 2. spec.upgradePolicy is Manual: set spec.upstream.revision to 3 (or the policy to Automatic) to get an upgrade draft"
	upgrade := cond(ConditionUpgradeAvailable, metav1.ConditionTrue, ReasonNewRevision, upgradeMsg)
	notPublished := func(message string) metav1.Condition {
		return cond(ConditionPublished, metav1.ConditionFalse, configv1alpha1.ReasonNotPublished, message)
	}
	draftWaits := cond(ConditionPublished, metav1.ConditionFalse, ReasonWaitingForApproval,
		"deploy.app.d1 of the variant waits for approval: the change is finished once it is published")

	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	other := variant("ns", "older", "uid-0", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	draft := revision("ns", "deploy", "app", "d1", pv)
	proposed := revision("ns", "deploy", "app", "p1", pv)
	proposed.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	published := withLock(revision("ns", "deploy", "app", "v1", pv), "drafts/app/v1")
	published.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	foreign := revision("ns", "deploy", "app", "theirs", other)
	upstreamV2 := revision("ns", "blueprints", "app", "v2", nil)
	withDraft := func() *state {
		return &state{drafts: []*porchv1alpha1.PackageRevision{draft}, rendered: map[string]porchv1alpha1.RenderStatus{draft.Name: {Err: "boom"}}}
	}
	apiRefusal := apierrors.NewForbidden(porchv1alpha1.Resource("packagerevisions"), "x", errors.New("no"))

	cases := map[string]struct {
		reason      string
		before      []metav1.Condition
		targets     []configv1alpha1.DownstreamTarget
		outcome     outcome
		want        []metav1.Condition
		wantTargets []configv1alpha1.DownstreamTarget
	}{
		"Invalid": {
			reason:  "an invalid spec stalls the variant and takes a stale Conflict away; targets and UpgradeAvailable stay",
			before:  []metav1.Condition{stored(cond(ConditionConflict, metav1.ConditionTrue, ReasonConflict, "x")), stored(upgrade)},
			targets: []configv1alpha1.DownstreamTarget{{Name: "kept"}},
			outcome: outcome{invalid: &invalid{stalled: "missing required field spec.downstream", ready: "invalid packagevariant object: fix the problems the Stalled condition lists"}},
			want: []metav1.Condition{stored(upgrade),
				cond(ConditionStalled, metav1.ConditionTrue, ReasonValidationError, "missing required field spec.downstream"),
				notReady(ReasonError, "invalid packagevariant object: fix the problems the Stalled condition lists"),
				notPublished("the variant is invalid: fix the problems the Stalled condition lists")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: "kept"}},
		},
		"Conflict": {
			reason:  "the losing variant of a shared downstream says which variant wins, in Conflict, Stalled and Ready",
			outcome: outcome{conflictWith: other},
			want: func() []metav1.Condition {
				msg := "downstream package deploy/app is managed by PackageVariant ns/older; this variant writes nothing until that one is deleted or this one targets another downstream"
				return []metav1.Condition{cond(ConditionConflict, metav1.ConditionTrue, ReasonConflict, msg),
					cond(ConditionStalled, metav1.ConditionTrue, ReasonConflict, msg), notReady(ReasonConflict, msg),
					notPublished("another variant manages the downstream package: see the Conflict condition")}
			}(),
		},
		"UpToDate": {
			reason:      "an up to date downstream is Ready; its targets carry this sync's render outcome; the conflict is over",
			before:      []metav1.Condition{stored(cond(ConditionConflict, metav1.ConditionTrue, ReasonConflict, "x"))},
			outcome:     outcome{progress: progress{kind: progressReady}, st: withDraft()},
			want:        []metav1.Condition{valid, ready, draftWaits},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: draft.Name, RenderStatus: porchv1alpha1.RenderStatus{Err: "boom"}}},
		},
		"ReadinessGatesNotMet": {
			reason: "a draft with a readiness gate that is not True cannot be published by the rules: Published names the gate, not an approval",
			outcome: outcome{progress: progress{kind: progressReady}, st: func() *state {
				gated := draft.DeepCopy()
				gated.Spec.ReadinessGates = []porchv1alpha1.ReadinessGate{{ConditionType: "config.injection.ConfigMap.env"}}
				gated.Status.Conditions = []porchv1alpha1.Condition{{Type: "config.injection.ConfigMap.env", Status: porchv1alpha1.ConditionFalse, Reason: "NoResourceSelected", Message: "no ConfigMap env"}}
				return &state{drafts: []*porchv1alpha1.PackageRevision{gated}}
			}()},
			want: []metav1.Condition{valid, ready, cond(ConditionPublished, metav1.ConditionFalse, configv1alpha1.ReasonReadinessGatesNotMet,
				"readiness gates not met, so the change cannot be published by the rules: deploy.app.d1: config.injection.ConfigMap.env is False (NoResourceSelected: no ConfigMap env); make what they name exist (an injected object that is gone?) and the next sync fills them")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: draft.Name}},
		},
		"Published": {
			reason:      "an up to date Published revision and no open draft: the variant's change is published",
			outcome:     outcome{progress: progress{kind: progressReady}, st: &state{published: published, upstream: upstreamV2}},
			want:        []metav1.Condition{valid, ready, cond(ConditionPublished, metav1.ConditionTrue, configv1alpha1.ReasonPublished, "deploy.app.v1 carries upstream blueprints.app.v2 and the variant's changes")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: published.Name}},
		},
		"PublishedButUpgradeHeld": {
			reason:  "a Published revision that spec.upgradePolicy Manual keeps on an older upstream has not published the change",
			outcome: outcome{upgrade: &upgradeNote{message: upgradeMsg}, progress: progress{kind: progressReady}, st: &state{published: published, upstream: upstreamV2}},
			want: []metav1.Condition{valid, upgrade, ready,
				notPublished("deploy.app.v1 is not based on the selected upstream revision: the upgrade is held (see UpgradeAvailable)")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: published.Name}},
		},
		"NotPublishedYet": {
			reason:  "a package with no revision of the variant yet has nothing published",
			outcome: outcome{mutation: &mutationError{errors.New("cannot apply the variant: no Kptfile")}, st: &state{upstream: upstreamV2}},
			want: []metav1.Condition{valid, notReady(ReasonError, "cannot apply the variant: no Kptfile; fix the upstream package or the variant"),
				notPublished("downstream package deploy/app has no published revision of this variant yet")},
		},
		"PublishedStale": {
			reason:  "a Published revision the variant's changes would change, while the sync could not make the edit draft",
			outcome: outcome{otherDraft: &otherDraftOpen{pv: pv, revisions: []*porchv1alpha1.PackageRevision{foreign}}, st: &state{published: published, upstream: upstreamV2}},
			want: []metav1.Condition{valid, notReady(ReasonOtherDraftOpen,
				"downstream package deploy/app has an open revision this variant does not manage: deploy.app.theirs (Draft); controlled by PackageVariant older. The variant makes no second draft beside it: publish or delete it, or set spec.adoptionPolicy: adoptExisting to take over revisions nobody controls"),
				notPublished("deploy.app.v1 does not carry the variant's current spec yet: see the Ready condition")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: published.Name}},
		},
		"Paused": {
			reason:  "a paused variant says so and keeps every other condition as it was, generation and all",
			before:  []metav1.Condition{stored(valid), stored(ready)},
			targets: []configv1alpha1.DownstreamTarget{{Name: "kept"}},
			outcome: outcome{paused: true},
			want: []metav1.Condition{stored(valid), stored(ready), cond(ConditionPaused, metav1.ConditionTrue, configv1alpha1.ReasonPaused,
				"the annotation config.porch.kpt.dev/paused=true holds this PackageVariant: the controller writes nothing for it until it is removed (kubectl annotate -n ns PackageVariant pv config.porch.kpt.dev/paused-)")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: "kept"}},
		},
		"Unpaused": {
			reason:  "the Paused condition goes with the annotation",
			before:  []metav1.Condition{stored(cond(ConditionPaused, metav1.ConditionTrue, configv1alpha1.ReasonPaused, "x"))},
			outcome: outcome{progress: progress{kind: progressReady}},
			want:    []metav1.Condition{valid, ready},
		},
		"NothingNew": {
			reason:      "a sync that stopped before acting (waiting for a draft to reach the cache) keeps Ready as it was, generation and all, and the targets",
			before:      []metav1.Condition{stored(valid), stored(ready)},
			targets:     []configv1alpha1.DownstreamTarget{{Name: "kept"}},
			want:        []metav1.Condition{valid, stored(ready)},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: "kept"}},
		},
		"DeletionProposed": {
			reason:  "a downstream proposed for deletion blocks the variant; a held upgrade is no longer news",
			before:  []metav1.Condition{stored(valid), stored(upgrade)},
			outcome: outcome{upgrade: &upgradeNote{}, progress: progress{kind: progressDeletionProposed, revision: published}},
			want: []metav1.Condition{valid, notReady(ReasonDeletionProposed,
				"downstream deploy.app.v1 is proposed for deletion, so the variant changes nothing; approve the deletion and delete or retarget this variant, or set the revision back to Published")},
		},
		"UpgradeHeld": {
			reason:  "spec.upgradePolicy: Manual reports the upgrade it holds, before Ready",
			outcome: outcome{upgrade: &upgradeNote{message: upgradeMsg}, progress: progress{kind: progressReady}},
			want:    []metav1.Condition{valid, upgrade, ready},
		},
		"UpgradeHeldAgainAfterRelease": {
			reason:  "a held upgrade taken away and held again in one sync (two drafts) moves to the end of the list",
			before:  []metav1.Condition{stored(upgrade), stored(valid), stored(ready)},
			outcome: outcome{upgrade: &upgradeNote{message: upgradeMsg, removedFirst: true}, progress: progress{kind: progressReady}},
			want:    []metav1.Condition{valid, cond(ConditionReady, metav1.ConditionTrue, ReasonNoErrors, readyMessage), upgrade},
		},
		"MutationError": {
			reason:  "a mutation that cannot be applied asks for a fix",
			outcome: outcome{mutation: &mutationError{errors.New("cannot apply the variant to deploy.app.d1: no Kptfile")}},
			want:    []metav1.Condition{valid, notReady(ReasonError, "cannot apply the variant to deploy.app.d1: no Kptfile; fix the upstream package or the variant")},
		},
		"OtherDraftOpen": {
			reason:  "another owner's open draft keeps the variant from making one",
			outcome: outcome{otherDraft: &otherDraftOpen{pv: pv, revisions: []*porchv1alpha1.PackageRevision{foreign}}},
			want: []metav1.Condition{valid, notReady(ReasonOtherDraftOpen,
				"downstream package deploy/app has an open revision this variant does not manage: deploy.app.theirs (Draft); controlled by PackageVariant older. The variant makes no second draft beside it: publish or delete it, or set spec.adoptionPolicy: adoptExisting to take over revisions nobody controls")},
		},
		"InjectionForbidden": {
			reason: "an object the ServiceAccount may not get is named, with the permission, over the outcome of the writes",
			outcome: outcome{progress: progress{kind: progressReady},
				denied: &deniedInjection{ref: configv1alpha1.InjectedObject{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"}, err: &access.DeniedError{Account: "ns/sa", Namespace: "ns", Name: "cm"}}},
			want: []metav1.Condition{valid, notReady(ReasonInjectionForbidden,
				fmt.Sprintf("ConfigMap %q is not injected: %v", "cm", &access.DeniedError{Account: "ns/sa", Namespace: "ns", Name: "cm"}))},
		},
		"RenderFailed": {
			reason:  "a failed render names the pipeline's complaint and what Porch kept",
			outcome: outcome{render: &renderError{name: draft.Name, details: "function failed"}, st: withDraft()},
			want: []metav1.Condition{valid, notReady(ReasonRenderFailed,
				"the pipeline of deploy.app.d1 failed to render: function failed. Porch stored nothing: the draft keeps the files it had. Fix the failing function or its configuration (in the upstream package, or the variant's spec.pipeline); the controller retries with backoff"),
				draftWaits},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: draft.Name, RenderStatus: porchv1alpha1.RenderStatus{Err: "boom"}}},
		},
		"Refused": {
			reason:  "a refusal no retry can change stalls the variant, over a render failure",
			before:  []metav1.Condition{stored(valid), stored(ready)},
			outcome: outcome{refused: apiRefusal.Error(), render: &renderError{name: draft.Name, details: "function failed"}},
			want: func() []metav1.Condition {
				msg := apiRefusal.Error() + "; the server refuses this on every try: fix the variant (or what the message names), and it is tried again"
				return []metav1.Condition{cond(ConditionStalled, metav1.ConditionTrue, ReasonRefused, msg), notReady(ReasonRefused, msg)}
			}(),
		},
		"CleanupFailed": {
			reason:      "a variant being deleted says which revisions its deletion policy failed for, and nothing else",
			before:      []metav1.Condition{stored(valid), stored(ready)},
			targets:     []configv1alpha1.DownstreamTarget{{Name: "kept"}},
			outcome:     outcome{cleanup: &cleanupFailure{revisions: []string{"deploy.app.d2", "deploy.app.d1"}, err: errors.New("timeout")}},
			want:        []metav1.Condition{stored(valid), notReady(ReasonDeleting, "cleanup of downstream revisions deploy.app.d1; deploy.app.d2 failed; the controller keeps retrying and keeps the finalizer until it succeeds: timeout")},
			wantTargets: []configv1alpha1.DownstreamTarget{{Name: "kept"}},
		},
		"Retrying": {
			reason:  "an error that is retried is said while it lasts",
			outcome: outcome{retrying: errors.New("get resources of deploy.app.d1: timeout")},
			want:    []metav1.Condition{valid, notReady(ReasonError, "get resources of deploy.app.d1: timeout; retrying")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := pv.DeepCopy()
			in.Generation = gen
			in.Status.Conditions = tc.before
			in.Status.DownstreamTargets = tc.targets
			before := in.DeepCopy()
			got := calculateStatus(in, &tc.outcome)
			if diff := cmp.Diff(tc.want, got.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s: conditions (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantTargets, got.DownstreamTargets); diff != "" {
				t.Errorf("%s: status.downstreamTargets (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("calculateStatus changed the variant (-before +after):\n%s", diff)
			}
		})
	}
}

// TestHeldOnGoneMessage: a draft kept on an upstream revision that is gone
// says what holds it and what moves it: the variant's Manual policy, or its
// set's rollout.
func TestHeldOnGoneMessage(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	manual := pv.DeepCopy()
	manual.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	p := progress{kind: progressHeldOnGone, revision: withLock(revision("ns", "deploy", "app", "d1", pv), "app/v4"),
		upstream: upstreamRev("v3", 3, porchv1alpha1.PackageRevisionLifecyclePublished)}
	const gone = "draft deploy.app.d1 is based on upstream app/v4, which is not a published revision of blueprints/app any more; "
	for name, tc := range map[string]struct {
		pv   *configv1alpha1.PackageVariant
		st   *state
		want string
	}{
		"Manual": {manual, &state{rolloutSet: "edge"},
			gone + "spec.upgradePolicy is Manual, so the variant does not move the draft to blueprints.app.v3 (revision 3) by itself: set spec.upstream.revision to 3, or delete the draft"},
		"Rollout": {pv, &state{rolloutSet: "edge"},
			gone + "PackageVariantSet edge rolls upstream changes out in waves, so the variant does not move the draft to blueprints.app.v3 (revision 3) by itself: its wave sets spec.upstream.revision when it opens, or delete the draft"},
	} {
		t.Run(name, func(t *testing.T) {
			reason, msg := readiness(tc.pv, &outcome{progress: p, st: tc.st})
			if reason != ReasonError || msg != tc.want {
				t.Errorf("Ready %s: %s\nwant %s: %s", reason, msg, ReasonError, tc.want)
			}
		})
	}
}

// TestReadinessOfProgress: the Ready condition a sync reports for each
// place the act phase can leave the downstream in (every case but the
// first is a wait or a block a person resolves).
func TestReadinessOfProgress(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	v3 := upstreamRev("v3", 3, porchv1alpha1.PackageRevisionLifecyclePublished)
	draft := revision("ns", "deploy", "app", "d1", pv)
	proposed := revision("ns", "deploy", "app", "p1", pv)
	published := withLock(revision("ns", "deploy", "app", "v1", pv), "drafts/app/v1")
	foreign := revision("ns", "deploy", "app", "theirs", nil)
	ready := func(message string) metav1.Condition {
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonNoErrors, Message: message, ObservedGeneration: 5}
	}
	notReady := func(reason, message string) metav1.Condition {
		return metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: 5}
	}
	cases := map[string]struct {
		progress progress
		want     metav1.Condition
	}{
		"ReadyWhileProposed":          {progress{kind: progressReadyProposed, revision: proposed}, ready(readyMessage + "; deploy.app.p1 is Proposed and waiting for approval")},
		"WaitingForApprovalOfUpgrade": {progress{kind: progressApprovalBeforeUpgrade, revision: proposed, upstream: v3}, notReady(ReasonWaitingForApproval, "deploy.app.p1 is Proposed and waiting for approval; the upgrade to blueprints.app.v3 follows in a new draft once it is published (or set back to Draft)")},
		"WaitingForApprovalOfChanges": {progress{kind: progressApprovalBeforeChanges, revision: proposed}, notReady(ReasonWaitingForApproval, "deploy.app.p1 is Proposed and waiting for approval; the variant's changes follow in a new draft once it is published (or set back to Draft)")},
		"DraftEdited":                 {progress{kind: progressDraftEdited, revision: draft, upstream: v3}, notReady(ReasonDraftEdited, "upstream moved to blueprints.app.v3 (revision 3) but draft deploy.app.d1 was changed since the controller last wrote it, so it is kept as it is: publish it (an upgrade draft follows) or delete it (a new draft is made from the new upstream)")},
		"DraftUnverified":             {progress{kind: progressDraftUnverified, revision: draft, upstream: v3}, notReady(ReasonDraftUnverified, "upstream moved to blueprints.app.v3 (revision 3) but the variant cannot tell whether draft deploy.app.d1 holds a person's edits (it adopted the draft, lost Porch's answer to one of its writes, or the controller restarted before recording a write), so it keeps the draft as it is: publish it (an upgrade draft follows) or delete it (a new draft is made from the new upstream)")},
		"ForeignRevision":             {progress{kind: progressForeign, others: []*porchv1alpha1.PackageRevision{foreign}}, notReady(ReasonError, "downstream package deploy/app already exists (deploy.app.theirs) and is not managed by this variant; set spec.adoptionPolicy: adoptExisting to take it over, or choose another spec.downstream")},
		"CannotUpgrade":               {progress{kind: progressCannotUpgrade, revision: published, upstream: v3}, notReady(ReasonError, "cannot upgrade deploy.app.v1 to blueprints.app.v3: the upstream revision it is based on (drafts/app/v1) is not a published revision of blueprints/app any more, so Porch cannot merge; make the change by hand")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := pv.DeepCopy()
			in.Generation = 5
			got := meta.FindStatusCondition(calculateStatus(in, &outcome{progress: tc.progress}).Conditions, ConditionReady)
			if diff := cmp.Diff(&tc.want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
		})
	}
}
