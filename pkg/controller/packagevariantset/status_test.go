package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// setVariants are the variants a set's sync starts from: ready of them
// report Ready=True, notReady report Ready=False.
func setVariants(ready, notReady int) map[string]*configv1alpha1.PackageVariant {
	out := map[string]*configv1alpha1.PackageVariant{}
	add := func(name string, status metav1.ConditionStatus) {
		pv := variantOf("ns", name, "s", "uid-s")
		pv.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: "x"}}
		out[name] = pv
	}
	for i := range ready {
		add(fmt.Sprintf("s-ready-%d-app", i), metav1.ConditionTrue)
	}
	for i := range notReady {
		add(fmt.Sprintf("s-waiting-%d-app", i), metav1.ConditionFalse)
	}
	return out
}

// renderedVariants are n rendered variants (their specs play no part in
// status).
func renderedVariants(n int) []*rendered {
	var out []*rendered
	for i := range n {
		out = append(out, &rendered{id: fmt.Sprintf("s-edge-%d-app", i)})
	}
	return out
}

// TestCalculateStatus: the counts and the Stalled and Ready conditions a
// user reads on the set, for each outcome of the wanted and manage phases.
// Messages are spelled out: they are what a person acts on.
func TestCalculateStatus(t *testing.T) {
	const gen = 3
	earlier := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	valid := metav1.Condition{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "Valid", Message: "all validation checks passed", ObservedGeneration: gen}
	ready := func(status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: message, ObservedGeneration: gen}
	}
	stalled := func(reason, message string) []metav1.Condition {
		return []metav1.Condition{
			{Type: "Stalled", Status: metav1.ConditionTrue, Reason: reason, Message: message, ObservedGeneration: gen},
			ready(metav1.ConditionFalse, reason, message),
		}
	}
	var twelve []string
	for _, i := range []int{7, 12, 3, 1, 9, 11, 5, 2, 10, 8, 4, 6} {
		twelve = append(twelve, fmt.Sprintf("problem %02d", i))
	}
	previous := []metav1.Condition{
		{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "Valid", Message: "all validation checks passed", ObservedGeneration: 2, LastTransitionTime: earlier},
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "package variants successfully reconciled: 1 desired, 1 exist, 1 Ready", ObservedGeneration: 2, LastTransitionTime: earlier},
	}

	type counts struct{ desired, existing, ready int32 }
	type statusCase struct {
		reason    string
		before    []metav1.Condition
		variants  map[string]*configv1alpha1.PackageVariant
		wanted    wanted
		managed   manageResult
		manageErr error
		want      counts
		wantConds []metav1.Condition
	}
	// reconciledCase: the n rendered variants were written (managed); the
	// set is Valid and Reconciled with the counts want.
	reconciledCase := func(reason string, variants map[string]*configv1alpha1.PackageVariant, n int, managed manageResult, want counts) statusCase {
		return statusCase{reason: reason, variants: variants, wanted: wanted{variants: renderedVariants(n)}, managed: managed, want: want,
			wantConds: []metav1.Condition{valid, ready(metav1.ConditionTrue, "Reconciled",
				fmt.Sprintf("package variants successfully reconciled: %d desired, %d exist, %d Ready", want.desired, want.existing, want.ready))}}
	}
	// stalledCase: the wanted phase stalled the set with problem; the set
	// reports it Stalled and not Ready.
	stalledCase := func(reason string, before []metav1.Condition, variants map[string]*configv1alpha1.PackageVariant, problem setProblem, want counts) statusCase {
		return statusCase{reason: reason, before: before, variants: variants, wanted: wanted{stalled: &problem}, want: want,
			wantConds: stalled(problem.reason, problem.message)}
	}
	cases := map[string]statusCase{
		"AllReady": reconciledCase("every variant exists and is Ready", setVariants(2, 0), 2, manageResult{}, counts{2, 2, 2}),
		"SomeNotReadyOneCreated": reconciledCase("a variant created by this sync exists; Ready counts the variants' own readiness, and the set is Reconciled",
			setVariants(1, 1), 3, manageResult{created: 1}, counts{3, 3, 1}),
		"StaleDeleted": reconciledCase("a variant deleted by this sync no longer exists", setVariants(1, 1), 1, manageResult{deleted: 1}, counts{1, 1, 1}),
		"UnchangedConditionsKeepTheirTime": {
			reason:   "a sync that finds what the last one found changes no transition time, only the generation",
			before:   previous,
			variants: setVariants(1, 0),
			wanted:   wanted{variants: renderedVariants(1)},
			want:     counts{1, 1, 1},
			wantConds: []metav1.Condition{
				{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "Valid", Message: "all validation checks passed", ObservedGeneration: gen, LastTransitionTime: earlier},
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "package variants successfully reconciled: 1 desired, 1 exist, 1 Ready", ObservedGeneration: gen, LastTransitionTime: earlier},
			},
		},
		"ProblemsWithoutRenderFailure": {
			reason:   "a duplicate downstream and a name taken by another object stall the set, sorted; every target rendered, so no suffix",
			variants: setVariants(1, 0),
			wanted: wanted{variants: renderedVariants(2), problems: []string{
				"spec.targets[0] and spec.targets[1] both render downstream edge-0/app; only the first is used: give each a different downstream",
				"PackageVariant s-edge-1-app (for downstream edge-1/app) already exists and does not belong to this set; delete or rename it",
			}},
			managed: manageResult{created: 1},
			want:    counts{2, 2, 1},
			wantConds: stalled("ValidationError",
				"PackageVariant s-edge-1-app (for downstream edge-1/app) already exists and does not belong to this set; delete or rename it; "+
					"spec.targets[0] and spec.targets[1] both render downstream edge-0/app; only the first is used: give each a different downstream"),
		},
		"RenderFailed": {
			reason:   "a target that does not render stalls the set and says the others are still served",
			variants: setVariants(1, 0),
			wanted: wanted{variants: renderedVariants(1), renderFailed: true, problems: []string{
				`spec.targets[1].template.downstream.packageExpr: no such key: "site"`,
			}},
			want: counts{1, 1, 1},
			wantConds: stalled("ValidationError",
				`spec.targets[1].template.downstream.packageExpr: no such key: "site"`+
					"; variants of the other targets are kept up to date, and none is deleted until every target renders"),
		},
		"ManyProblems": {
			reason:    "at most ten problems are listed, then how many more",
			variants:  setVariants(0, 0),
			wanted:    wanted{problems: twelve, renderFailed: true},
			want:      counts{0, 0, 0},
			wantConds: stalled("ValidationError", "problem 01; problem 02; problem 03; problem 04; problem 05; problem 06; problem 07; problem 08; problem 09; problem 10; and 2 more; variants of the other targets are kept up to date, and none is deleted until every target renders"),
		},
		"ProblemsOutrankWriteErrors": {
			reason:    "what a person must fix is shown, not the failed write that will be retried",
			variants:  setVariants(0, 1),
			wanted:    wanted{variants: renderedVariants(1), problems: []string{"spec.targets[0]: downstream repository \"edge-9\" could not be loaded"}, renderFailed: true},
			managed:   manageResult{writeErrs: []error{errors.New("update PackageVariant s-edge-0-app: the server is busy")}},
			want:      counts{1, 1, 0},
			wantConds: stalled("ValidationError", "spec.targets[0]: downstream repository \"edge-9\" could not be loaded; variants of the other targets are kept up to date, and none is deleted until every target renders"),
		},
		"WriteErrors": {
			reason:   "failed writes make the set not Ready, every one named, retried; the writes that went ahead count",
			variants: setVariants(1, 1),
			wanted:   wanted{variants: renderedVariants(2)},
			managed: manageResult{created: 1, deleted: 1, writeErrs: []error{
				errors.New("create PackageVariant s-edge-1-app: the server is busy"),
				errors.New("delete stale PackageVariant s-old-app: forbidden"),
			}},
			want: counts{2, 2, 1},
			wantConds: []metav1.Condition{valid, ready(metav1.ConditionFalse, "UnexpectedError",
				"create PackageVariant s-edge-1-app: the server is busy\ndelete stale PackageVariant s-old-app: forbidden; retrying")},
		},
		"SetInvalid": stalledCase("an invalid set wants no variant and keeps counting the ones it has",
			nil, setVariants(1, 1), setProblem{"ValidationError", "spec.upstream: Required value"}, counts{0, 2, 1}),
		"UpstreamNotFound": stalledCase("no revision of the upstream stalls the set",
			previous, setVariants(1, 0), setProblem{"UpstreamNotFound", "no published revision of blueprints/app"}, counts{0, 1, 1}),
		"NoMatchingTargets": stalledCase("targets that cannot be expanded stall the set",
			nil, setVariants(0, 0), setProblem{"NoMatchingTargets", "spec.targets[0].objectSelector: kind Site is not served; nothing was created or deleted"}, counts{0, 0, 0}),
		"TargetsNotListed": {
			reason:   "a transient failure to list the targets is not Stalled: the set is valid, not Ready, and retried",
			variants: setVariants(2, 0),
			wanted:   wanted{targetsErr: errors.New("spec.targets[0].repositorySelector: list Repositories: timeout")},
			want:     counts{0, 2, 2},
			wantConds: []metav1.Condition{valid, ready(metav1.ConditionFalse, "UnexpectedError",
				"could not list the targets, so nothing was created or deleted; retrying: spec.targets[0].repositorySelector: list Repositories: timeout")},
		},
		"LiveReadFailed": {
			reason:    "the writes stopped before the first create: the counts are current, the conditions stay as they were",
			before:    previous,
			variants:  setVariants(1, 0),
			wanted:    wanted{variants: renderedVariants(2), problems: []string{"ignored until a sync gets through"}},
			managed:   manageResult{updated: 1},
			manageErr: errors.New("read PackageVariantSet ns/s before creating variants: the server is busy"),
			want:      counts{2, 1, 1},
			wantConds: previous,
		},
	}
	// A condition this sync set anew has the time of the sync; only the
	// kept times are compared.
	newTimes := cmp.FilterValues(func(x, y metav1.Time) bool { return x.IsZero() || y.IsZero() }, cmp.Ignore())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pvs := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-0"))
			pvs.Generation = gen
			pvs.Status = configv1alpha2.PackageVariantSetStatus{ObservedGeneration: 2, Conditions: tc.before, DesiredVariants: 7, ExistingVariants: 7, ReadyVariants: 7}
			before := pvs.DeepCopy()

			f := newFleet(len(tc.variants))
			for _, pv := range tc.variants {
				f.add(pvs.Name, pv)
			}
			got := calculateStatus(pvs, outcome{fleet: f, wanted: &tc.wanted, managed: tc.managed, manageErr: tc.manageErr})

			if diff := cmp.Diff(tc.want, counts{got.DesiredVariants, got.ExistingVariants, got.ReadyVariants}, cmp.AllowUnexported(counts{})); diff != "" {
				t.Errorf("%s: desired, existing, ready (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantConds, got.Conditions, newTimes); diff != "" {
				t.Errorf("%s: conditions (-want +got):\n%s", tc.reason, diff)
			}
			if got.ObservedGeneration != 2 {
				t.Errorf("observedGeneration %d: it is writeStatus's to set", got.ObservedGeneration)
			}
			if diff := cmp.Diff(before, pvs); diff != "" {
				t.Errorf("calculateStatus changed the set it was given (-before +after):\n%s", diff)
			}
		})
	}
}

// TestCalculateStatusPausedAndRollout: the Paused condition and the
// rollout's status, which calculateStatus decides beside the counts.
func TestCalculateStatusPausedAndRollout(t *testing.T) {
	const gen = 4
	earlier := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	readyBefore := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "package variants successfully reconciled: 1 desired, 1 exist, 1 Ready", ObservedGeneration: gen, LastTransitionTime: earlier}
	rolledOutBefore := metav1.Condition{Type: rollout.ConditionRolledOut, Status: metav1.ConditionFalse, Reason: rollout.ReasonWaveProgressing, Message: "wave one", ObservedGeneration: gen, LastTransitionTime: earlier}
	pausedCond := metav1.Condition{Type: "Paused", Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonPaused, ObservedGeneration: gen,
		Message: "the annotation " + configv1alpha1.PausedAnnotation + "=true holds this PackageVariantSet: the controller writes nothing for it until it is removed (kubectl annotate -n ns PackageVariantSet s " + configv1alpha1.PausedAnnotation + "-)"}
	previousRollout := &configv1alpha2.RolloutStatus{ID: "old", UpstreamRevision: 1, Progress: "0/1"}
	plan := &rollout.Plan{
		Status:    &configv1alpha2.RolloutStatus{ID: "new", UpstreamRevision: 2, Progress: "1/1"},
		Condition: rollout.Condition{Status: metav1.ConditionTrue, Reason: rollout.ReasonRolledOut, Message: "rollout new is complete"},
	}
	rolledOut := metav1.Condition{Type: rollout.ConditionRolledOut, Status: metav1.ConditionTrue, Reason: rollout.ReasonRolledOut, Message: "rollout new is complete", ObservedGeneration: gen}
	reconciled := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "package variants successfully reconciled: 1 desired, 1 exist, 1 Ready", ObservedGeneration: gen, LastTransitionTime: earlier}
	valid := metav1.Condition{Type: "Stalled", Status: metav1.ConditionFalse, Reason: "Valid", Message: "all validation checks passed", ObservedGeneration: gen}

	cases := map[string]struct {
		reason      string
		paused      bool
		withRollout bool
		before      []metav1.Condition
		plan        *rollout.Plan
		manageErr   error
		wantConds   []metav1.Condition
		wantRollout *configv1alpha2.RolloutStatus
	}{
		"Paused": {
			reason: "a paused set says so and keeps every other condition, its counts and its rollout as they were",
			paused: true, withRollout: true, before: []metav1.Condition{readyBefore, rolledOutBefore},
			wantConds:   []metav1.Condition{readyBefore, rolledOutBefore, pausedCond},
			wantRollout: previousRollout,
		},
		"Unpaused": {
			reason:    "the first sync after a pause takes the Paused condition away",
			before:    []metav1.Condition{pausedCond, readyBefore},
			wantConds: []metav1.Condition{readyBefore, valid},
		},
		"RolloutDecided": {
			reason:      "a rollout decision is the rollout's status and its RolledOut condition",
			withRollout: true, before: []metav1.Condition{readyBefore, rolledOutBefore}, plan: plan,
			wantConds:   []metav1.Condition{reconciled, rolledOut, valid},
			wantRollout: plan.Status,
		},
		"RolloutNotDecided": {
			reason:      "a set with a rollout whose sync stopped before deciding keeps the rollout's status",
			withRollout: true, before: []metav1.Condition{readyBefore, rolledOutBefore},
			wantConds:   []metav1.Condition{reconciled, rolledOutBefore, valid},
			wantRollout: previousRollout,
		},
		"RolloutRemoved": {
			reason:    "a set without a rollout has no rollout status and no RolledOut condition",
			before:    []metav1.Condition{readyBefore, rolledOutBefore},
			wantConds: []metav1.Condition{reconciled, valid},
		},
		"WritesStopped": {
			reason:      "a sync whose writes stopped before the first create leaves the rollout's status as it was",
			withRollout: true, before: []metav1.Condition{readyBefore, rolledOutBefore}, plan: plan,
			manageErr:   errors.New("read PackageVariantSet ns/s before creating variants: the server is busy"),
			wantConds:   []metav1.Condition{readyBefore, rolledOutBefore},
			wantRollout: previousRollout,
		},
	}
	newTimes := cmp.FilterValues(func(x, y metav1.Time) bool { return x.IsZero() || y.IsZero() }, cmp.Ignore())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pvs := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-0"))
			pvs.Generation = gen
			if tc.paused {
				pvs.Annotations = map[string]string{configv1alpha1.PausedAnnotation: "true"}
			}
			if tc.withRollout {
				pvs.Spec.Rollout = &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{Name: "all"}}}
			}
			pvs.Status = configv1alpha2.PackageVariantSetStatus{ObservedGeneration: gen, Conditions: tc.before, Rollout: previousRollout, DesiredVariants: 1, ExistingVariants: 1, ReadyVariants: 1}
			before := pvs.DeepCopy()
			f := newFleet(1)
			for _, pv := range setVariants(1, 0) {
				f.add(pvs.Name, pv)
			}
			got := calculateStatus(pvs, outcome{paused: tc.paused, fleet: f, wanted: &wanted{variants: renderedVariants(1), rollout: tc.plan}, manageErr: tc.manageErr})
			if diff := cmp.Diff(tc.wantConds, got.Conditions, newTimes); diff != "" {
				t.Errorf("%s: conditions (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantRollout, got.Rollout); diff != "" {
				t.Errorf("%s: status.rollout (-want +got):\n%s", tc.reason, diff)
			}
			if got.DesiredVariants != 1 || got.ExistingVariants != 1 || got.ReadyVariants != 1 {
				t.Errorf("%s: counts %d/%d/%d, want 1/1/1", tc.reason, got.DesiredVariants, got.ExistingVariants, got.ReadyVariants)
			}
			if diff := cmp.Diff(before, pvs); diff != "" {
				t.Errorf("calculateStatus changed the set it was given (-before +after):\n%s", diff)
			}
		})
	}
}

// TestProgressOnly: which status changes wait for the next progress write
// and which are written at once.
func TestProgressOnly(t *testing.T) {
	base := func() *configv1alpha2.PackageVariantSetStatus {
		return &configv1alpha2.PackageVariantSetStatus{
			DesiredVariants: 4, ExistingVariants: 4, ReadyVariants: 2,
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled", Message: "package variants successfully reconciled: 4 desired, 4 exist, 2 Ready"},
				{Type: rollout.ConditionRolledOut, Status: metav1.ConditionFalse, Reason: rollout.ReasonWaveProgressing, Message: "wave \"all\": 1 of 4 finished"},
			},
			Rollout: &configv1alpha2.RolloutStatus{ID: "r", Progress: "1/4", Waves: []configv1alpha2.WaveStatus{{Name: "all", Variants: 4, Updated: 2, Finished: 1, Phase: configv1alpha2.WaveProgressing,
				VariantStates: []configv1alpha2.VariantState{{Name: "a", State: configv1alpha2.VariantFinished}, {Name: "b", State: configv1alpha2.VariantOpen}}}}},
		}
	}
	cases := map[string]struct {
		reason string
		change func(*configv1alpha2.PackageVariantSetStatus)
		want   bool
	}{
		"Counts": {reason: "one more variant Ready, one more published: progress", want: true, change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.ReadyVariants = 3
			st.Conditions[0].Message = "package variants successfully reconciled: 4 desired, 4 exist, 3 Ready"
			st.Conditions[1].Message = "wave \"all\": 2 of 4 finished"
			st.Rollout.Progress, st.Rollout.Waves[0].Finished, st.Rollout.Waves[0].Updated = "2/4", 2, 3
			st.Rollout.Waves[0].VariantStates = []configv1alpha2.VariantState{{Name: "a", State: configv1alpha2.VariantFinished},
				{Name: "b", State: configv1alpha2.VariantFinished}, {Name: "c", State: configv1alpha2.VariantWaitingForApproval, Detail: "c.app.packagevariant-1"}}
		}},
		"VariantFailed": {reason: "a variant of the wave failed: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Rollout.Waves[0].VariantStates[1] = configv1alpha2.VariantState{Name: "b", State: configv1alpha2.VariantFailed, Detail: "RenderFailed"}
		}},
		"VariantSkipped": {reason: "a variant of the wave is skipped: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Rollout.Waves[0].VariantStates[1].State = configv1alpha2.VariantSkipped
		}},
		"ReadyReason": {reason: "the set is no longer Reconciled: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, "UnexpectedError"
		}},
		"StalledMessage": {reason: "another problem a person must fix: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Conditions = append(st.Conditions, metav1.Condition{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "ValidationError", Message: "another"})
		}},
		"WavePhase": {reason: "a wave finished: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Rollout.Waves[0].Phase = configv1alpha2.WaveFinished
		}},
		"WaveFailure": {reason: "a variant failed: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Rollout.Waves[0].Failed = 1
		}},
		"RolledOutReason": {reason: "the rollout waits for approval now: news", change: func(st *configv1alpha2.PackageVariantSetStatus) {
			st.Conditions[1].Reason, st.Conditions[1].Message = rollout.ReasonWaitingForApproval, "waits"
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(b)
			if got := progressOnly(a, b); got != tc.want {
				t.Errorf("%s: progressOnly = %t, want %t", tc.reason, got, tc.want)
			}
			if diff := cmp.Diff(base(), a); diff != "" {
				t.Errorf("progressOnly changed its argument (-before +after):\n%s", diff)
			}
		})
	}
}

// TestProgressWait: how long a status write waits, by what changed and
// when the set's status was last written.
func TestProgressWait(t *testing.T) {
	counts := func(desired, existing, ready int32) *configv1alpha2.PackageVariantSet {
		pvs := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-0"))
		pvs.Status = configv1alpha2.PackageVariantSetStatus{DesiredVariants: desired, ExistingVariants: existing, ReadyVariants: ready}
		return pvs
	}
	stalled := counts(4, 4, 2)
	stalled.Status.Conditions = []metav1.Condition{{Type: "Stalled", Status: metav1.ConditionTrue, Reason: "ValidationError", Message: "x"}}
	cases := map[string]struct {
		reason         string
		readinessDelay time.Duration
		writtenAgo     *time.Duration
		new            *configv1alpha2.PackageVariantSet
		wantWait       bool
	}{
		"Progress": {reason: "one more variant Ready, the last write a moment ago: waits",
			readinessDelay: time.Second, writtenAgo: ptr.To(time.Second), new: counts(4, 4, 3), wantWait: true},
		"AtRest": {reason: "every variant Ready: written at once",
			readinessDelay: time.Second, writtenAgo: ptr.To(time.Second), new: counts(4, 4, 4)},
		"ConditionChanged": {reason: "the set stalled: written at once",
			readinessDelay: time.Second, writtenAgo: ptr.To(time.Second), new: stalled},
		"LongAgo": {reason: "the last write is older than the pace: written at once",
			readinessDelay: time.Second, writtenAgo: ptr.To(time.Minute), new: counts(4, 4, 3)},
		"NeverWritten": {reason: "no write of this controller yet: written at once",
			readinessDelay: time.Second, new: counts(4, 4, 3)},
		"NoReadinessDelay": {reason: "without a readiness delay (variantctl) nothing waits",
			writtenAgo: ptr.To(time.Second), new: counts(4, 4, 3)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &Controller{readinessDelay: tc.readinessDelay}
			if tc.writtenAgo != nil {
				c.statusWrites.Store(types.UID("uid-s"), &lastWrites{at: time.Now().Add(-*tc.writtenAgo)})
			}
			wait := c.progressWait(counts(4, 4, 2), tc.new)
			if (wait > 0) != tc.wantWait || wait > progressEvery*tc.readinessDelay {
				t.Errorf("%s: waits %v", tc.reason, wait)
			}
		})
	}
}

// TestProgressWriteWaitingIsWorkInHand: a status write that waits for the
// progress pace is the controller's own work, not done yet: a Tracker
// counts it until the set is queued again, so that nobody (variantctl, the
// soak, the tests) takes the controllers for idle while the set's counts
// are still to be written.
func TestProgressWriteWaitingIsWorkInHand(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	tracker := workloop.NewTracker()
	f.opts = Options{Tracker: tracker, ReadinessDelay: ptr.To(20 * time.Millisecond)}
	old := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-0"))
	old.Status = configv1alpha2.PackageVariantSetStatus{DesiredVariants: 4, ExistingVariants: 4, ReadyVariants: 2}
	f.Objects = append(f.Objects, old)
	c, _ := f.newController(ctx)
	c.statusWrites.Store(old.UID, &lastWrites{at: time.Now()})

	progressed := old.DeepCopy()
	progressed.Status.ReadyVariants = 3
	if err := c.writeStatus(ctx, old, progressed); err != nil {
		t.Fatal(err)
	}
	if w := f.WriteActions(); len(w) != 0 {
		t.Fatalf("the progress was written at once: %v", w)
	}
	if n := tracker.Queued(); n != 1 {
		t.Fatalf("Tracker.Queued() = %d while the write waits, want 1", n)
	}
	queued := func(context.Context) (bool, error) { return c.queue.Len() == 1, nil }
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, queued); err != nil {
		t.Fatalf("the set was not queued again once the pace allowed its write: %v", err)
	}
	if n := tracker.Queued(); n != 1 {
		t.Errorf("Tracker.Queued() = %d with the set queued and nothing waiting, want 1", n)
	}
}
