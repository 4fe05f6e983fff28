package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// threeWaves: canary (tier=canary, one at a time, automatic), prod
// (tier=prod, Manual, 50%) and the rest.
func threeWaves() *configv1alpha2.Rollout {
	return &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
		{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, MaxConcurrent: ptr.To(intstr.FromInt32(1))},
		{Name: "prod", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}, MaxConcurrent: ptr.To(intstr.FromString("50%")), Approval: configv1alpha2.WaveApprovalManual},
		{Name: "rest"},
	}}
}

// fleet: c1, c2 canary; p1..p4 prod; r1 untiered; each as state says
// ("" pending, "open", "waiting", "done", "failed").
func fleet(state map[string]string) []Variant {
	tier := map[string]string{"c1": "canary", "c2": "canary", "p1": "prod", "p2": "prod", "p3": "prod", "p4": "prod", "r1": ""}
	var out []Variant
	for name, t := range tier {
		v := Variant{Name: name, Labels: map[string]string{}}
		if t != "" {
			v.Labels["tier"] = t
		}
		switch state[name] {
		case "open":
			v.Updated = true
		case "waiting":
			v.Updated, v.WaitingFor = true, "edge."+name+".packagevariant-2"
		case "done":
			v.Updated, v.Finished = true, true
		case "failed":
			v.Updated, v.Failed = true, "RenderFailed"
		case "new": // no PackageVariant yet, held back (CreatesNow is false)
			v.New = true
		case "blocked": // since ten minutes after t0
			v.Updated, v.Blocked, v.BlockedSince = true, "ReadinessGatesNotMet", t0.Add(10*time.Minute)
		}
		out = append(out, v)
	}
	return out
}

// started is a previous status of rollout "id1" with the given waves'
// start and finish times (minutes after t0; -1 for none).
func started(times ...[2]int) *configv1alpha2.RolloutStatus {
	st := &configv1alpha2.RolloutStatus{ID: "id1"}
	for i, name := range []string{"canary", "prod", "rest"} {
		ws := configv1alpha2.WaveStatus{Name: name}
		if i < len(times) {
			if times[i][0] >= 0 {
				ws.StartedAt = at(time.Duration(times[i][0]) * time.Minute)
			}
			if times[i][1] >= 0 {
				ws.FinishedAt = at(time.Duration(times[i][1]) * time.Minute)
			}
		}
		st.Waves = append(st.Waves, ws)
	}
	return st
}

// phases is "<wave>:<phase> ..." of a status.
func phases(st *configv1alpha2.RolloutStatus) string {
	var out []string
	for _, w := range st.Waves {
		out = append(out, fmt.Sprintf("%s:%s", w.Name, w.Phase))
	}
	return strings.Join(out, " ")
}

// without is vs without the variants named.
func without(vs []Variant, names ...string) []Variant {
	var out []Variant
	for _, v := range vs {
		if !slices.Contains(names, v.Name) {
			out = append(out, v)
		}
	}
	return out
}

// variantStates is "<wave>[<variant>:<state>(<detail>) ...] ..." of the
// waves of st that list variants.
func variantStates(st *configv1alpha2.RolloutStatus) string {
	var waves []string
	for _, w := range st.Waves {
		if len(w.VariantStates) == 0 {
			continue
		}
		var vs []string
		for _, v := range w.VariantStates {
			s := v.Name + ":" + string(v.State)
			if v.Detail != "" {
				s += "(" + v.Detail + ")"
			}
			vs = append(vs, s)
		}
		waves = append(waves, w.Name+"["+strings.Join(vs, " ")+"]")
	}
	return strings.Join(waves, " ")
}

func eventReasons(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func TestCompute(t *testing.T) {
	cases := map[string]struct {
		spec           func(*configv1alpha2.Rollout)
		previous       *configv1alpha2.RolloutStatus
		previousReason string
		approval       string
		skip, resume   string
		state          map[string]string
		now            time.Duration
		// drop are variants of fleet taken out of the set.
		drop []string

		wantOpen     []string
		wantPhases   string
		wantReason   string
		wantMessage  []string
		wantEvents   []string
		wantRequeue  time.Duration
		wantCurrent  string
		wantProgress string
		// wantStates is "<wave>[<variant>:<state>(<detail>) ...] ..." of
		// the waves that list variants ("": not checked).
		wantStates string
	}{
		"a new rollout starts the first wave and opens one variant of it, in name order": {
			wantOpen:     []string{"c1"},
			wantPhases:   "canary:Progressing prod:Pending rest:Pending",
			wantReason:   ReasonWaveProgressing,
			wantMessage:  []string{`wave "canary": 0 of 2 finished, 1 not started yet`},
			wantEvents:   []string{EventWaveStarted},
			wantCurrent:  "canary",
			wantProgress: "0/7",
		},
		"maxConcurrent 1: no second variant while the first waits for approval": {
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "waiting"},
			now:         time.Minute,
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantMessage: []string{`0 of 2 finished, 1 waiting for approval (edge.c1.packagevariant-2), 1 not started yet`},
			wantCurrent: "canary",
			wantStates:  "canary[c1:WaitingForApproval(edge.c1.packagevariant-2)]",
		},
		"the next variant opens as one finishes": {
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "done"},
			now:         time.Minute,
			wantOpen:    []string{"c2"},
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantCurrent: "canary",
			wantStates:  "canary[c1:Finished c2:Open]",
		},
		"a Manual wave waits for approval after the one before finishes": {
			previous:     started([2]int{0, -1}),
			state:        map[string]string{"c1": "done", "c2": "done"},
			now:          time.Minute,
			wantPhases:   "canary:Finished prod:WaitingForApproval rest:Pending",
			wantReason:   ReasonWaitingForApproval,
			wantMessage:  []string{"kubectl annotate -n ns packagevariantset s config.porch.kpt.dev/approve-wave=prod@id1 --overwrite"},
			wantEvents:   []string{EventWaveFinished},
			wantCurrent:  "canary",
			wantProgress: "2/7",
		},
		"an approval of another rollout approves nothing, and the message says so": {
			previous:   started([2]int{0, 1}),
			approval:   "prod@id0",
			state:      map[string]string{"c1": "done", "c2": "done"},
			now:        2 * time.Minute,
			wantPhases: "canary:Finished prod:WaitingForApproval rest:Pending",
			wantReason: ReasonWaitingForApproval,
			wantMessage: []string{"waits for approval (config.porch.kpt.dev/approve-wave=prod@id0 approves rollout id0, not the current id1): " +
				"variantctl rollout approve s prod -n ns"},
			wantCurrent: "canary",
		},
		"a misspelt wave approves nothing, and the message says so": {
			previous:    started([2]int{0, 1}),
			approval:    "prdo@id1",
			state:       map[string]string{"c1": "done", "c2": "done"},
			now:         2 * time.Minute,
			wantPhases:  "canary:Finished prod:WaitingForApproval rest:Pending",
			wantReason:  ReasonWaitingForApproval,
			wantMessage: []string{"waits for approval (config.porch.kpt.dev/approve-wave=prdo@id1 names no wave of this rollout)"},
			wantCurrent: "canary",
		},
		"a malformed approval approves nothing, and the message says so": {
			previous:    started([2]int{0, 1}),
			approval:    "prod",
			state:       map[string]string{"c1": "done", "c2": "done"},
			now:         2 * time.Minute,
			wantPhases:  "canary:Finished prod:WaitingForApproval rest:Pending",
			wantReason:  ReasonWaitingForApproval,
			wantMessage: []string{`waits for approval (config.porch.kpt.dev/approve-wave="prod" approves nothing: it is not <wave>@<rollout id>)`},
			wantCurrent: "canary",
		},
		"an approved Manual wave starts and opens 50% of its four variants": {
			previous:    started([2]int{0, 1}),
			approval:    "prod@id1",
			state:       map[string]string{"c1": "done", "c2": "done"},
			now:         2 * time.Minute,
			wantOpen:    []string{"p1", "p2"},
			wantPhases:  "canary:Finished prod:Progressing rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantEvents:  []string{EventWaveStarted},
			wantCurrent: "prod",
		},
		"approving a later wave approves the Manual waves before it": {
			spec:       func(r *configv1alpha2.Rollout) { r.Waves[2].Approval = configv1alpha2.WaveApprovalManual },
			previous:   started([2]int{0, 1}),
			approval:   "rest@id1",
			state:      map[string]string{"c1": "done", "c2": "done"},
			now:        2 * time.Minute,
			wantOpen:   []string{"p1", "p2"},
			wantPhases: "canary:Finished prod:Progressing rest:Pending",
			wantReason: ReasonWaveProgressing,
			wantEvents: []string{EventWaveStarted}, wantCurrent: "prod",
		},
		"a finished wave soaks before the next starts, and the sync comes back when the soak ends": {
			spec:        func(r *configv1alpha2.Rollout) { r.SoakSeconds = ptr.To(int32(600)) },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "done", "c2": "done"},
			now:         4 * time.Minute,
			wantPhases:  "canary:Soaking prod:Pending rest:Pending",
			wantReason:  ReasonSoaking,
			wantMessage: []string{"soaking until 2026-11-26T12:14:00Z"},
			wantEvents:  []string{EventWaveFinished},
			wantRequeue: 10 * time.Minute,
			wantCurrent: "canary",
		},
		"after the soak the next wave starts": {
			spec:       func(r *configv1alpha2.Rollout) { r.SoakSeconds = ptr.To(int32(600)); r.Waves[1].Approval = "" },
			previous:   started([2]int{0, 4}),
			state:      map[string]string{"c1": "done", "c2": "done"},
			now:        14 * time.Minute,
			wantOpen:   []string{"p1", "p2"},
			wantPhases: "canary:Finished prod:Progressing rest:Pending",
			wantReason: ReasonWaveProgressing,
			wantEvents: []string{EventWaveStarted}, wantCurrent: "prod",
		},
		"a failure beyond maxFailures halts the rollout: nothing new opens": {
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "failed"},
			now:         time.Minute,
			wantPhases:  "canary:Halted prod:Pending rest:Pending",
			wantReason:  ReasonHalted,
			wantMessage: []string{"more variants failed than spec.rollout.maxFailures (0) allows: c1 (RenderFailed); fix them, raise maxFailures, skip them"},
			wantEvents:  []string{EventRolloutHalted},
			wantCurrent: "canary",
			wantStates:  "canary[c1:Failed(RenderFailed)]",
		},
		"a halt is announced once": {
			previous:       started([2]int{0, -1}),
			previousReason: ReasonHalted,
			state:          map[string]string{"c1": "failed"},
			now:            time.Minute,
			wantPhases:     "canary:Halted prod:Pending rest:Pending",
			wantReason:     ReasonHalted,
			wantCurrent:    "canary",
		},
		"a failure within maxFailures lets the wave finish": {
			spec:       func(r *configv1alpha2.Rollout) { r.MaxFailures = ptr.To(int32(1)); r.Waves[1].Approval = "" },
			previous:   started([2]int{0, -1}),
			state:      map[string]string{"c1": "failed", "c2": "done"},
			now:        time.Minute,
			wantOpen:   []string{"p1", "p2"},
			wantPhases: "canary:Finished prod:Progressing rest:Pending",
			wantReason: ReasonWaveProgressing,
			wantEvents: []string{EventWaveFinished, EventWaveStarted}, wantCurrent: "prod",
			wantStates: "canary[c1:Failed(RenderFailed)] prod[p1:Open p2:Open]",
		},
		"a failure within maxFailures frees its maxConcurrent slot: the next variant opens": {
			spec:        func(r *configv1alpha2.Rollout) { r.MaxFailures = ptr.To(int32(1)) },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "failed"},
			now:         time.Minute,
			wantOpen:    []string{"c2"},
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantCurrent: "canary",
		},
		"a recovered variant lets a halted rollout go on": {
			previous:       started([2]int{0, -1}),
			previousReason: ReasonHalted,
			state:          map[string]string{"c1": "done"},
			now:            time.Minute,
			wantOpen:       []string{"c2"},
			wantPhases:     "canary:Progressing prod:Pending rest:Pending",
			wantReason:     ReasonWaveProgressing, wantCurrent: "canary",
		},
		"a wave past its progress deadline is reported and keeps going": {
			spec:        func(r *configv1alpha2.Rollout) { r.ProgressDeadlineSeconds = ptr.To(int32(3600)) },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "done"},
			now:         61 * time.Minute,
			wantOpen:    []string{"c2"},
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonProgressDeadlineExceeded,
			wantMessage: []string{"not finished within spec.rollout.progressDeadlineSeconds (3600) of its start at 2026-11-26T12:00:00Z"},
			wantEvents:  []string{EventProgressDeadlineExceeded},
			wantCurrent: "canary",
		},
		"a deadline already reported is not announced again": {
			spec:           func(r *configv1alpha2.Rollout) { r.ProgressDeadlineSeconds = ptr.To(int32(3600)) },
			previous:       started([2]int{0, -1}),
			previousReason: ReasonProgressDeadlineExceeded,
			state:          map[string]string{"c1": "waiting"},
			now:            90 * time.Minute,
			wantPhases:     "canary:Progressing prod:Pending rest:Pending",
			wantReason:     ReasonProgressDeadlineExceeded,
			wantCurrent:    "canary",
		},
		"before its deadline a wave asks to be synced when it passes": {
			spec:        func(r *configv1alpha2.Rollout) { r.ProgressDeadlineSeconds = ptr.To(int32(3600)) },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "waiting"},
			now:         20 * time.Minute,
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantRequeue: 40 * time.Minute,
			wantCurrent: "canary",
		},
		"a variant blocked by its readiness gates is waited for until the deadline, counted from when it was blocked": {
			spec:        func(r *configv1alpha2.Rollout) { r.ProgressDeadlineSeconds = ptr.To(int32(3600)) },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "blocked"},
			now:         20 * time.Minute,
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantMessage: []string{"0 of 2 finished, 1 blocked (c1 (ReadinessGatesNotMet)), 1 not started yet"},
			wantRequeue: 40 * time.Minute, // the wave's deadline comes first (60), then c1's (70)
			wantCurrent: "canary",
			wantStates:  "canary[c1:Blocked(ReadinessGatesNotMet)]",
		},
		"a variant still blocked past the deadline has failed: over maxFailures the rollout halts": {
			spec:        func(r *configv1alpha2.Rollout) { r.ProgressDeadlineSeconds = ptr.To(int32(3600)) },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "blocked"},
			now:         70 * time.Minute,
			wantPhases:  "canary:Halted prod:Pending rest:Pending",
			wantReason:  ReasonHalted,
			wantMessage: []string{"c1 (ReadinessGatesNotMet for more than spec.rollout.progressDeadlineSeconds (3600))"},
			wantEvents:  []string{EventRolloutHalted},
			wantCurrent: "canary",
		},
		"a variant still blocked past the deadline, within maxFailures, frees its slot": {
			spec: func(r *configv1alpha2.Rollout) {
				r.ProgressDeadlineSeconds, r.MaxFailures = ptr.To(int32(3600)), ptr.To(int32(1))
			},
			previous:       started([2]int{0, -1}),
			previousReason: ReasonProgressDeadlineExceeded,
			state:          map[string]string{"c1": "blocked"},
			now:            70 * time.Minute,
			wantOpen:       []string{"c2"},
			wantPhases:     "canary:Progressing prod:Pending rest:Pending",
			wantReason:     ReasonProgressDeadlineExceeded,
			wantMessage:    []string{"1 failed (c1 (ReadinessGatesNotMet for more than"},
			wantCurrent:    "canary",
		},
		"a skipped failure halts nothing and frees its slot": {
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "failed"},
			skip:        "c1@id1",
			now:         time.Minute,
			wantOpen:    []string{"c2"},
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantMessage: []string{"0 of 2 finished, 1 skipped"},
			wantCurrent: "canary",
			wantStates:  "canary[c1:Skipped c2:Open]",
		},
		"a skipped variant is not opened, and its wave finishes without it": {
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "done"},
			skip:        "c2,p9@id1",
			now:         time.Minute,
			wantPhases:  "canary:Finished prod:WaitingForApproval rest:Pending",
			wantReason:  ReasonWaitingForApproval,
			wantEvents:  []string{EventWaveFinished},
			wantCurrent: "canary",
		},
		"a skip of another rollout skips nothing, and says so": {
			previous:       started([2]int{0, -1}),
			previousReason: ReasonHalted,
			state:          map[string]string{"c1": "failed"},
			skip:           "c1@id0",
			now:            time.Minute,
			wantPhases:     "canary:Halted prod:Pending rest:Pending",
			wantReason:     ReasonHalted,
			wantMessage:    []string{"skip them (variantctl rollout skip s VARIANT... -n ns)", "config.porch.kpt.dev/skip-variants=c1@id0 skips nothing: it names rollout id0, not the current id1"},
			wantCurrent:    "canary",
		},
		"a resumed wave goes on beside its failures and finishes without them": {
			previous:       started([2]int{0, -1}),
			previousReason: ReasonHalted,
			state:          map[string]string{"c1": "failed", "c2": "done"},
			resume:         "canary@id1",
			now:            time.Minute,
			wantPhases:     "canary:Finished prod:WaitingForApproval rest:Pending",
			wantReason:     ReasonWaitingForApproval,
			wantEvents:     []string{EventWaveResumed, EventWaveFinished},
			wantCurrent:    "canary",
		},
		"a resume of a wave the rollout lacks resumes nothing, and says so": {
			previous:       started([2]int{0, -1}),
			previousReason: ReasonHalted,
			state:          map[string]string{"c1": "failed"},
			resume:         "canray@id1",
			now:            time.Minute,
			wantPhases:     "canary:Halted prod:Pending rest:Pending",
			wantReason:     ReasonHalted,
			wantMessage:    []string{`config.porch.kpt.dev/resume-wave=canray@id1 resumes nothing: the rollout has no wave "canray"`},
			wantCurrent:    "canary",
		},
		"variants no wave takes are held, and the rollout is not done while they are": {
			spec: func(r *configv1alpha2.Rollout) {
				r.Waves[2].Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "other"}}
			},
			previous:     started([2]int{0, 1}, [2]int{1, 2}, [2]int{2, 2}),
			approval:     "prod@id1",
			state:        map[string]string{"c1": "done", "c2": "done", "p1": "done", "p2": "done", "p3": "done", "p4": "done"},
			now:          3 * time.Minute,
			wantPhases:   "canary:Finished prod:Finished rest:Finished",
			wantReason:   ReasonVariantsWithoutWave,
			wantMessage:  []string{"every wave finished; 1 variants are in no wave, held on what they carry: r1; give them a wave"},
			wantEvents:   []string{EventVariantsWithoutWave},
			wantCurrent:  "rest",
			wantProgress: "6/7",
		},
		"creates in waves: a wave opens new variants like any change, the others wait": {
			spec:         func(r *configv1alpha2.Rollout) { r.Creates = configv1alpha2.RolloutCreatesInWaves },
			state:        map[string]string{"c1": "new", "c2": "new", "p1": "new", "r1": "new"},
			wantOpen:     []string{"c1"},
			wantPhases:   "canary:Progressing prod:Pending rest:Pending",
			wantReason:   ReasonWaveProgressing,
			wantEvents:   []string{EventWaveStarted},
			wantCurrent:  "canary",
			wantProgress: "0/7",
		},
		"a paused rollout says which creates it holds": {
			spec:        func(r *configv1alpha2.Rollout) { r.Paused = true },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "done", "c2": "new", "r1": "new"},
			now:         time.Minute,
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonPaused,
			wantMessage: []string{"spec.rollout.paused is true: nothing new starts until it is false; while paused, 2 variants of new targets are not created"},
			wantCurrent: "canary",
		},
		"a paused rollout starts no wave": {
			spec:        func(r *configv1alpha2.Rollout) { r.Paused = true },
			wantPhases:  "canary:Pending prod:Pending rest:Pending",
			wantReason:  ReasonPaused,
			wantMessage: []string{"spec.rollout.paused is true"},
		},
		"a paused rollout opens no more variants; the open one stays open": {
			spec:        func(r *configv1alpha2.Rollout) { r.Paused = true },
			previous:    started([2]int{0, -1}),
			state:       map[string]string{"c1": "done"},
			now:         time.Minute,
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonPaused,
			wantMessage: []string{"1 of 2 finished, 1 not started yet; spec.rollout.paused is true"},
			wantCurrent: "canary",
		},
		"a change mid-rollout starts again from the first wave": {
			previous:    &configv1alpha2.RolloutStatus{ID: "id0", Waves: started([2]int{0, 1}, [2]int{1, -1}).Waves},
			approval:    "prod@id0",
			state:       map[string]string{"p1": "waiting"},
			now:         time.Hour,
			wantOpen:    []string{"c1"},
			wantPhases:  "canary:Progressing prod:Pending rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantEvents:  []string{EventWaveStarted},
			wantCurrent: "canary",
		},
		"every wave finished: rolled out, announced once": {
			previous:       started([2]int{0, 1}, [2]int{1, 2}, [2]int{2, -1}),
			previousReason: ReasonWaveProgressing,
			state:          map[string]string{"c1": "done", "c2": "done", "p1": "done", "p2": "done", "p3": "done", "p4": "done", "r1": "done"},
			now:            3 * time.Minute,
			wantPhases:     "canary:Finished prod:Finished rest:Finished",
			wantReason:     ReasonRolledOut,
			wantMessage:    []string{"rollout id1 (upstream revision 3) is complete: every wave finished, 7 of 7 variants published it"},
			wantEvents:     []string{EventWaveFinished, EventRolloutComplete},
			wantCurrent:    "rest",
			wantProgress:   "7/7",
		},
		"an empty Manual wave waits for no approval and no soak: it is passed over, with a Warning": {
			spec:         func(r *configv1alpha2.Rollout) { r.SoakSeconds = ptr.To(int32(600)) },
			previous:     started([2]int{0, 1}),
			state:        map[string]string{"c1": "done", "c2": "done"},
			drop:         []string{"p1", "p2", "p3", "p4"},
			now:          20 * time.Minute,
			wantOpen:     []string{"r1"},
			wantPhases:   "canary:Finished prod:Finished rest:Progressing",
			wantReason:   ReasonWaveProgressing,
			wantEvents:   []string{EventWaveEmpty, EventWaveStarted},
			wantCurrent:  "rest",
			wantProgress: "2/3",
		},
		"a set with no variant is not rolled out": {
			drop:         []string{"c1", "c2", "p1", "p2", "p3", "p4", "r1"},
			wantPhases:   "canary:Finished prod:Finished rest:Finished",
			wantReason:   ReasonNoVariants,
			wantMessage:  []string{"has no variant to roll out", "check spec.targets"},
			wantEvents:   []string{EventWaveEmpty, EventWaveEmpty, EventWaveEmpty},
			wantCurrent:  "rest",
			wantProgress: "0/0",
		},
		"a variant of a finished wave that changes again is opened, without holding back the next wave": {
			previous:    started([2]int{0, 1}, [2]int{1, -1}),
			approval:    "prod@id1",
			state:       map[string]string{"c1": "done", "p1": "waiting", "p2": "waiting"},
			now:         3 * time.Minute,
			wantOpen:    []string{"c2"},
			wantPhases:  "canary:Finished prod:Progressing rest:Pending",
			wantReason:  ReasonWaveProgressing,
			wantCurrent: "prod",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := threeWaves()
			if tc.spec != nil {
				tc.spec(spec)
			}
			got, err := Compute(Input{
				Spec: spec, Previous: tc.previous, PreviousReason: tc.previousReason, ID: "id1", UpstreamRevision: 3,
				Approval: tc.approval, Skip: tc.skip, Resume: tc.resume, Variants: without(fleet(tc.state), tc.drop...), Now: t0.Add(tc.now), Namespace: "ns", Set: "s",
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantOpen, got.Open); diff != "" {
				t.Errorf("opened (-want +got):\n%s", diff)
			}
			if p := phases(got.Status); p != tc.wantPhases {
				t.Errorf("phases %q, want %q", p, tc.wantPhases)
			}
			if got.Condition.Reason != tc.wantReason {
				t.Errorf("reason %q, want %q (%s)", got.Condition.Reason, tc.wantReason, got.Condition.Message)
			}
			wantStatus := metav1.ConditionFalse
			if tc.wantReason == ReasonRolledOut {
				wantStatus = metav1.ConditionTrue
			}
			if got.Condition.Status != wantStatus {
				t.Errorf("RolledOut=%s, want %s", got.Condition.Status, wantStatus)
			}
			for _, m := range tc.wantMessage {
				if !strings.Contains(got.Condition.Message, m) {
					t.Errorf("message %q does not contain %q", got.Condition.Message, m)
				}
			}
			if diff := cmp.Diff(tc.wantEvents, eventReasons(got.Events)); diff != "" {
				t.Errorf("events (-want +got):\n%s\n%v", diff, got.Events)
			}
			if got.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", got.RequeueAfter, tc.wantRequeue)
			}
			if got.Status.CurrentWave != tc.wantCurrent {
				t.Errorf("current wave %q, want %q", got.Status.CurrentWave, tc.wantCurrent)
			}
			if tc.wantProgress != "" && got.Status.Progress != tc.wantProgress {
				t.Errorf("progress %q, want %q", got.Status.Progress, tc.wantProgress)
			}
			if got := variantStates(got.Status); tc.wantStates != "" && got != tc.wantStates {
				t.Errorf("variant states %q, want %q", got, tc.wantStates)
			}
			// Each variant is in one state, and the states agree with the
			// wave's counts.
			for i, ws := range got.Status.Waves {
				s := got.States[i]
				if n := s.Pending + s.Open + s.Finished + s.Failed + s.Skipped; n != int(ws.Variants) || s.Finished != int(ws.Finished) || s.Failed != int(ws.Failed) || s.Skipped != int(ws.Skipped) {
					t.Errorf("wave %s: states %+v do not add up to its counts %+v", ws.Name, s, ws)
				}
			}
		})
	}
}
