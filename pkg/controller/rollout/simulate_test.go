package rollout

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// The behaviour spec's promises for rollouts ("Holding is a promise",
// "Never stuck"), checked on random rollouts: a simulated world answers
// every decision the way controllers, clusters and people do, and every
// decision is checked against the promises until the rollout ends.

// TestRandomRolloutsKeepTheirPromises simulates rollouts of random waves
// and fleets from fixed seeds (FuzzRollout searches further).
func TestRandomRolloutsKeepTheirPromises(t *testing.T) {
	for seed := range uint64(2000) {
		simulate(t, seed)
		if t.Failed() {
			t.Fatalf("stopped at seed %d (add it to FuzzRollout's seeds to run it alone)", seed)
		}
	}
}

// FuzzRollout runs the simulation from seeds the fuzzer picks: `go test
// -fuzz FuzzRollout ./pkg/controller/rollout/`.
func FuzzRollout(f *testing.F) {
	for _, s := range []uint64{0, 1, 7, 42} {
		f.Add(s)
	}
	f.Fuzz(simulate)
}

// simVariant is one variant of the simulated world.
type simVariant struct {
	name string
	wave string // its "wave" label: a wave's index, or "none"
	// exists: the variant has a PackageVariant. fails and blocks say what
	// happens once it carries the change: its render fails, or its draft
	// waits on readiness gates that only a person (or the progress
	// deadline) ends.
	exists, fails, blocks bool
	// updated, finished, failed, blocked and blockedSince are its state
	// for the current change; opened: the rollout opened it (not a create
	// that bypassed the waves).
	updated, finished, opened bool
	failed, blocked           string
	blockedSince              time.Time
}

// world is a rollout in progress and what the people did to it.
type world struct {
	spec     *configv1alpha2.Rollout
	variants []*simVariant
	id       string
	now      time.Time
	previous *configv1alpha2.RolloutStatus
	reason   string
	approval string
	resume   string
	skip     helper.Skip
	// resumes: a person resumes a halted wave; otherwise they skip its
	// failed variants. Both are what the condition tells them to do.
	resumes bool
	// started and finished count the WaveStarted and WaveFinished events
	// per wave of the current change; complete counts RolloutComplete.
	started, finished map[string]int
	complete          int
}

func randomRollout(r *rand.Rand) *configv1alpha2.Rollout {
	spec := &configv1alpha2.Rollout{}
	for i := range 1 + r.IntN(4) {
		w := configv1alpha2.Wave{Name: "w" + strconv.Itoa(i)}
		if r.IntN(5) > 0 {
			w.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"wave": strconv.Itoa(i)}}
		}
		switch r.IntN(3) {
		case 1:
			w.MaxConcurrent = ptr.To(intstr.FromInt32(1 + r.Int32N(3)))
		case 2:
			w.MaxConcurrent = ptr.To(intstr.FromString(strconv.Itoa(1+r.IntN(100)) + "%"))
		}
		if r.IntN(5) < 2 {
			w.Approval = configv1alpha2.WaveApprovalManual
		}
		spec.Waves = append(spec.Waves, w)
	}
	if r.IntN(2) == 0 {
		spec.SoakSeconds = ptr.To(r.Int32N(7200))
	}
	if r.IntN(2) == 0 {
		spec.MaxFailures = ptr.To(r.Int32N(3))
	}
	if r.IntN(2) == 0 {
		spec.ProgressDeadlineSeconds = ptr.To(60 + r.Int32N(7200))
	}
	spec.Creates = []configv1alpha2.RolloutCreates{"", configv1alpha2.RolloutCreatesImmediate, configv1alpha2.RolloutCreatesInWaves}[r.IntN(3)]
	return spec
}

func randomWorld(seed uint64) *world {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := &world{spec: randomRollout(r), id: "id1", now: t0, resumes: r.IntN(2) == 0}
	for i := range r.IntN(12) {
		v := &simVariant{name: fmt.Sprintf("v%02d", i), exists: r.IntN(10) < 7, fails: r.IntN(7) == 0, blocks: r.IntN(7) == 0}
		if k := r.IntN(len(w.spec.Waves) + 1); k < len(w.spec.Waves) {
			v.wave = strconv.Itoa(k)
		} else {
			v.wave = "none"
		}
		w.variants = append(w.variants, v)
	}
	w.resetEvents()
	return w
}

func (w *world) resetEvents() {
	w.started, w.finished, w.complete = map[string]int{}, map[string]int{}, 0
}

// input is what the set's sync hands Compute: a variant without a
// PackageVariant is created now, carrying the change, when CreatesNow.
func (w *world) input() Input {
	in := Input{Spec: w.spec, Previous: w.previous, PreviousReason: w.reason, Namespace: "ns", Set: "s",
		ID: w.id, UpstreamRevision: 2, Approval: w.approval, Resume: w.resume, Now: w.now}
	if len(w.skip.Variants) > 0 {
		in.Skip = w.skip.String()
	}
	for _, v := range w.variants {
		if !v.exists && CreatesNow(w.spec) {
			v.exists, v.updated = true, true
		}
		in.Variants = append(in.Variants, Variant{
			Name: v.name, Labels: map[string]string{"wave": v.wave}, New: !v.exists,
			Updated: v.updated, Finished: v.finished, Failed: v.failed, Blocked: v.blocked, BlockedSince: v.blockedSince,
		})
	}
	return in
}

// simulate runs one random rollout to its end, checking every decision.
func simulate(t *testing.T, seed uint64) {
	w := randomWorld(seed)
	changeAt := int(seed % 9) // a second change arrives at this step (0: never)
	pauseAt := int(seed % 7)  // a person pauses the rollout for three steps (0: never)
	for step := range 200 {
		if step == changeAt && step > 0 {
			w.newChange()
		}
		if pauseAt > 0 && (step == pauseAt || step == pauseAt+3) {
			spec := *w.spec
			spec.Paused = step == pauseAt
			w.spec = &spec
		}
		in := w.input()
		plan, err := Compute(in)
		if err != nil {
			t.Errorf("seed %d step %d: %v", seed, step, err)
			return
		}
		if !w.check(t, seed, step, in, plan) {
			return
		}
		if ended(plan.Condition.Reason) {
			w.checkEnd(t, seed, in, plan)
			return
		}
		w.answer(plan)
	}
	t.Errorf("seed %d: the rollout did not end in 200 decisions; last %s, waves %s", seed, w.reason, phases(w.previous))
}

// ended reports whether a rollout with this reason has nothing left to do.
func ended(reason string) bool {
	return reason == ReasonRolledOut || reason == ReasonNoVariants || reason == ReasonVariantsWithoutWave
}

// newChange is a new upstream revision arriving mid-rollout: every
// variant is without the change again, and the approvals, skips and
// resumes given for the last change approve nothing.
func (w *world) newChange() {
	w.id = "id2"
	for _, v := range w.variants {
		v.updated, v.finished, v.opened, v.failed, v.blocked = false, false, false, "", ""
	}
	w.resetEvents()
}

// check holds one decision to the promises; false stops the simulation.
func (w *world) check(t *testing.T, seed uint64, step int, in Input, plan Plan) bool {
	t.Helper()
	fail := func(format string, args ...any) bool {
		t.Errorf("seed %d step %d (%s): %s\nspec: %+v\nstatus: %+v", seed, step, plan.Condition.Reason, fmt.Sprintf(format, args...), *w.spec, *plan.Status)
		return false
	}
	c := plan.Condition
	if c.Message == "" || (c.Status == metav1.ConditionTrue) != (c.Reason == ReasonRolledOut) {
		return fail("condition %+v: want a message, and True exactly when rolled out", c)
	}
	g, _ := Waves(w.spec, in.Variants)
	waveOf := map[string]int{}
	for i, vs := range g.Waves {
		for _, v := range vs {
			waveOf[v.Name] = i
		}
	}
	for _, name := range plan.Open {
		i, ok := waveOf[name]
		if !ok || plan.Status.Waves[i].StartedAt == nil {
			return fail("opened %s, whose wave has not started (holding is a promise)", name)
		}
		if v := w.variant(name); v.updated {
			return fail("opened %s, which already carries the change", name)
		}
	}
	// failed are the variants the decision counts as failed: their render
	// failed, or they stayed blocked past the progress deadline.
	failed := map[string]bool{}
	for _, ws := range plan.Status.Waves {
		for _, vs := range ws.VariantStates {
			failed[vs.Name] = vs.State == configv1alpha2.VariantFailed
		}
	}
	for i, vs := range g.Waves {
		inFlight := 0
		for _, v := range vs {
			sv := w.variant(v.Name)
			if (sv.opened || slices.Contains(plan.Open, v.Name)) && !sv.finished && !failed[v.Name] && !w.skipped(v.Name) {
				inFlight++
			}
		}
		if m := MaxConcurrent(w.spec.Waves[i], len(vs)); inFlight > m {
			return fail("wave %s has %d variants opened and unfinished, over its maxConcurrent %d", w.spec.Waves[i].Name, inFlight, m)
		}
	}
	for _, e := range plan.Events {
		switch e.Reason {
		case EventWaveStarted:
			w.started[waveNamed(e.Message)]++
		case EventWaveFinished:
			w.finished[waveNamed(e.Message)]++
		case EventRolloutComplete:
			w.complete++
		}
	}
	for name, n := range w.started {
		if n > 1 || w.finished[name] > 1 {
			return fail("wave %s started %d and finished %d times in one change", name, n, w.finished[name])
		}
	}
	if c.Reason == ReasonWaveProgressing && len(plan.Open) == 0 && plan.RequeueAfter == 0 && !w.anyInFlight(failed) {
		return fail("a progressing wave opens nothing, waits for no variant and asks for no later sync: stuck")
	}
	for i, ws := range plan.Status.Waves {
		if ws.Phase == configv1alpha2.WaveWaitingForApproval && len(g.Waves[i]) == 0 {
			return fail("wave %s has no variant and waits for approval", ws.Name)
		}
	}
	if w.spec.Paused && (len(plan.Open) > 0 || (c.Reason != ReasonPaused && !ended(c.Reason))) {
		return fail("paused, the rollout opened %v and says %s", plan.Open, c.Reason)
	}
	if c.Reason == ReasonSoaking && plan.RequeueAfter <= 0 {
		return fail("soaking without asking to be synced when the soak ends")
	}
	return true
}

// waveNamed is the wave an event's message names: it starts with
// `wave "NAME" of rollout`.
func waveNamed(msg string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(msg, `wave "`), `"`)
	return name
}

func (w *world) variant(name string) *simVariant {
	for _, v := range w.variants {
		if v.name == name {
			return v
		}
	}
	panic("no variant " + name)
}

// skipped reports whether the skip annotation passes the variant over in
// the current change (one left from an earlier change does not).
func (w *world) skipped(name string) bool {
	return w.skip.ID == w.id && slices.Contains(w.skip.Variants, name)
}

// anyInFlight reports whether a variant carries the change without having
// finished or failed it: the world moves it on without the rollout.
func (w *world) anyInFlight(failed map[string]bool) bool {
	return slices.ContainsFunc(w.variants, func(v *simVariant) bool {
		return v.updated && !v.finished && !failed[v.name] && !w.skipped(v.name)
	})
}

// answer is the world after a decision: the set's sync applies what it
// opened, each variant that carries the change moves on, people answer
// what the condition asks of them, and time passes.
func (w *world) answer(plan Plan) {
	for _, v := range w.variants {
		switch {
		case !v.updated || v.finished || v.failed != "":
		case v.fails:
			v.failed = "RenderFailed"
		case v.blocks && v.blocked == "":
			v.blocked, v.blockedSince = "ReadinessGatesNotMet", w.now
		case v.blocked != "" && w.spec.ProgressDeadlineSeconds != nil:
			// Nobody approves it: the deadline must end the wait.
		default:
			v.blocked, v.finished = "", true
		}
	}
	for _, name := range plan.Open {
		v := w.variant(name)
		v.exists, v.updated, v.opened = true, true, true
	}
	for _, ws := range plan.Status.Waves {
		switch ws.Phase {
		case configv1alpha2.WaveWaitingForApproval:
			w.approval = helper.Approval{Wave: ws.Name, ID: w.id}.String()
		case configv1alpha2.WaveHalted:
			if w.resumes {
				w.resume = helper.Approval{Wave: ws.Name, ID: w.id}.String()
				continue
			}
			if w.skip.ID != w.id {
				w.skip = helper.Skip{ID: w.id}
			}
			for _, vs := range ws.VariantStates {
				if vs.State == configv1alpha2.VariantFailed {
					w.skip.Variants = append(w.skip.Variants, vs.Name)
				}
			}
		}
	}
	w.previous, w.reason = plan.Status, plan.Condition.Reason
	w.now = w.now.Add(max(plan.RequeueAfter, time.Minute))
}

// checkEnd holds the rollout's end to what it says: rolled out means
// every variant in a wave published the change, failed within what was
// tolerated, or was skipped.
func (w *world) checkEnd(t *testing.T, seed uint64, in Input, plan Plan) {
	t.Helper()
	g, _ := Waves(w.spec, in.Variants)
	if plan.Condition.Reason == ReasonNoVariants && len(w.variants) > 0 {
		t.Errorf("seed %d: NoVariants with %d variants", seed, len(w.variants))
	}
	if (plan.Condition.Reason == ReasonVariantsWithoutWave) != (len(g.None) > 0) {
		t.Errorf("seed %d: ended %s with %d variants in no wave", seed, plan.Condition.Reason, len(g.None))
	}
	for i, vs := range g.Waves {
		if ws := plan.Status.Waves[i]; ws.Phase != configv1alpha2.WaveFinished {
			t.Errorf("seed %d: ended %s with wave %s %s", seed, plan.Condition.Reason, ws.Name, ws.Phase)
		}
		for _, v := range vs {
			sv := w.variant(v.Name)
			if !sv.updated || (!sv.finished && sv.failed == "" && sv.blocked == "" && !w.skipped(v.Name)) {
				t.Errorf("seed %d: ended %s with %s neither finished, failed nor skipped: %+v", seed, plan.Condition.Reason, v.Name, *sv)
			}
		}
	}
	if plan.Condition.Reason == ReasonRolledOut && w.complete != 1 {
		t.Errorf("seed %d: RolloutComplete sent %d times for one change", seed, w.complete)
	}
}
