package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// decision is one Compute in progress.
type decision struct {
	in       Input
	plan     Plan
	previous map[string]configv1alpha2.WaveStatus
	// stop is set by the wave that holds the ones after it back; the
	// condition reports it.
	stop *stopped
	// skip are the variants SkipVariantsAnnotation passes over, resumed
	// the wave ResumeWaveAnnotation resumed, in this rollout.
	skip    map[string]bool
	resumed string
	// heldCreates counts the new variants a paused rollout does not
	// create.
	heldCreates int
}

// stopped is why the rollout goes no further than a wave for now.
type stopped struct {
	wave   configv1alpha2.WaveStatus
	reason string
	detail string
}

// Compute decides the rollout of a set's change.
func Compute(in Input) (Plan, error) {
	waves, err := Waves(in.Spec, in.Variants)
	if err != nil {
		return Plan{}, err
	}
	return Decide(in, waves), nil
}

// Decide is Compute for variants already put in their waves, as Waves puts
// them (in.Variants is not read): a caller that works out each variant's
// wave once (Variant.Wave) reads the grouping from there.
func Decide(in Input, g Grouping) Plan {
	d := &decision{in: in, previous: map[string]configv1alpha2.WaveStatus{}}
	if in.Previous != nil && in.Previous.ID == in.ID {
		for _, w := range in.Previous.Waves {
			d.previous[w.Name] = w
		}
	}
	if sk, ok := helper.ParseSkip(in.Skip); ok && sk.ID == in.ID {
		d.skip = make(map[string]bool, len(sk.Variants))
		for _, name := range sk.Variants {
			d.skip[name] = true
		}
	}
	if r, ok := helper.ParseApproval(in.Resume); ok && r.ID == in.ID {
		d.resumed = r.Wave
	}
	d.plan.Status = &configv1alpha2.RolloutStatus{ID: in.ID, UpstreamRevision: in.UpstreamRevision}
	for i, w := range in.Spec.Waves {
		ws, t := d.wave(i, w, g.Waves[i])
		d.plan.Status.Waves = append(d.plan.Status.Waves, ws)
		d.plan.States = append(d.plan.States, t.States)
		if ws.StartedAt != nil {
			d.plan.Status.CurrentWave = ws.Name
		}
	}
	d.plan.Status.Unassigned = int32(len(g.None))
	if in.Spec.Paused { // a paused rollout opens nothing
		for _, vs := range append(slices.Clip(g.Waves), g.None) {
			for _, v := range vs {
				if v.New && !v.Updated {
					d.heldCreates++
				}
			}
		}
	}
	for _, v := range g.None[:min(len(g.None), MaxUnassignedListed)] {
		d.plan.Status.UnassignedVariants = append(d.plan.Status.UnassignedVariants, v.Name)
	}
	d.summarise()
	return d.plan
}

// MaxUnassignedListed is how many variants in no wave status.rollout
// names (the CRD's maxItems).
const MaxUnassignedListed = 20

// wave decides wave i, whose variants are vs, and tallies them once the
// variants it opens carry the change.
func (d *decision) wave(i int, w configv1alpha2.Wave, vs []Variant) (ws configv1alpha2.WaveStatus, t tally) {
	ws = configv1alpha2.WaveStatus{Name: w.Name, Phase: configv1alpha2.WavePending}
	var open map[string]bool
	defer func() {
		listStates(&ws, vs, open, ws.Phase != configv1alpha2.WaveFinished && ws.Phase != configv1alpha2.WaveSoaking)
	}()
	prev := d.previous[w.Name]
	started := prev.StartedAt
	if d.stop != nil {
		started = nil
	}
	vs = d.mark(vs, started)
	t = tallyOf(vs, nil)
	t.fill(&ws, len(vs))
	if d.stop != nil {
		return ws, t
	}
	ws.StartedAt, ws.FinishedAt = prev.StartedAt, prev.FinishedAt
	if ws.StartedAt == nil && !d.start(i, w, &ws, len(vs)) {
		return ws, t
	}
	maxFailures := int32(intOr(d.in.Spec.MaxFailures, 0))
	ws.Resumed = d.resumed == w.Name
	if ws.Resumed && !prev.Resumed {
		d.event(false, EventWaveResumed, "wave %q of rollout %s resumed (%s=%s): its %d failed variants halt nothing", w.Name, d.in.ID, configv1alpha2.ResumeWaveAnnotation, d.in.Resume, ws.Failed)
	}
	tolerated := ws.Failed <= maxFailures || ws.Resumed
	if ws.FinishedAt == nil && !tolerated {
		ws.Phase = configv1alpha2.WaveHalted
		d.stop = &stopped{wave: ws, reason: ReasonHalted, detail: fmt.Sprintf(
			"more variants failed than spec.rollout.maxFailures (%d) allows: %s; fix them, raise maxFailures, skip them (variantctl rollout skip %s VARIANT... -n %s) or resume the wave (variantctl rollout resume %s -n %s)",
			maxFailures, failedList(vs), d.in.Set, d.in.Namespace, d.in.Set, d.in.Namespace)}
		return ws, t
	}
	if !d.in.Spec.Paused {
		open = d.open(w, vs, t)
	}
	if len(open) > 0 {
		t = tallyOf(vs, open)
		t.fill(&ws, len(vs))
	}
	if ws.FinishedAt == nil && tolerated && t.done {
		ws.FinishedAt = d.now()
		if len(vs) > 0 { // an empty wave is passed over: EventWaveEmpty said so
			d.event(false, EventWaveFinished, "wave %q of rollout %s finished: %d of %d variants published the change", w.Name, d.in.ID, ws.Finished, ws.Variants)
		}
	}
	switch {
	case ws.FinishedAt == nil:
		ws.Phase = configv1alpha2.WaveProgressing
		d.stop = &stopped{wave: ws, reason: ReasonWaveProgressing, detail: progress(vs, open)}
		d.deadline(ws)
	case i < len(d.in.Spec.Waves)-1 && len(vs) > 0 && d.in.Now.Before(d.soakEnd(ws)):
		ws.Phase = configv1alpha2.WaveSoaking
		d.requeue(d.soakEnd(ws))
		d.stop = &stopped{wave: ws, reason: ReasonSoaking, detail: fmt.Sprintf(
			"finished; the next wave starts after soaking until %s", d.soakEnd(ws).UTC().Format(time.RFC3339))}
	default:
		ws.Phase = configv1alpha2.WaveFinished
	}
	return ws, t
}

// start reports whether wave i, of n variants, starts now (the waves
// before it have finished and soaked), and if not, records why.
func (d *decision) start(i int, w configv1alpha2.Wave, ws *configv1alpha2.WaveStatus, n int) bool {
	switch {
	case d.in.Spec.Paused:
		d.stop = &stopped{wave: *ws, reason: ReasonPaused, detail: "spec.rollout.paused is true: no wave and no variant starts; set it to false to go on"}
		return false
	case w.Approval == configv1alpha2.WaveApprovalManual && n > 0 && !approved(d.in.Spec, d.in.Approval, d.in.ID, i):
		// An empty wave has nothing to approve: it starts, is reported
		// (below), and finishes at once.
		ws.Phase = configv1alpha2.WaveWaitingForApproval
		d.stop = &stopped{wave: *ws, reason: ReasonWaitingForApproval, detail: fmt.Sprintf(
			"waits for approval%s: variantctl rollout approve %s %s -n %s (or kubectl annotate -n %s packagevariantset %s %s=%s --overwrite)",
			notApproving(d.in.Spec, d.in.Approval, d.in.ID), d.in.Set, w.Name, d.in.Namespace,
			d.in.Namespace, d.in.Set, configv1alpha2.ApproveWaveAnnotation, helper.Approval{Wave: w.Name, ID: d.in.ID})}
		return false
	}
	ws.StartedAt = d.now()
	if n == 0 {
		d.event(true, EventWaveEmpty, "wave %q of rollout %s has no variant: no variant of the set has labels its selector matches (spec.rollout.waves[%d].selector, over the labels the set gives its variants); it is passed over", w.Name, d.in.ID, i)
		return true
	}
	d.event(false, EventWaveStarted, "wave %q of rollout %s started: %d variants", w.Name, d.in.ID, n)
	return true
}

// open chooses the variants of a started wave (tallied as t) that get the
// change now: in name order, as many as maxConcurrent leaves room for
// beside the unfinished ones.
func (d *decision) open(w configv1alpha2.Wave, vs []Variant, t tally) map[string]bool {
	room := MaxConcurrent(w, len(vs)) - t.started
	if room <= 0 || t.notUpdated == 0 {
		return nil
	}
	open := map[string]bool{}
	for _, v := range vs {
		if room <= 0 {
			break
		}
		if !v.Updated && !v.Skipped {
			open[v.Name] = true
			d.plan.Open = append(d.plan.Open, v.Name)
			room--
		}
	}
	return open
}

// mark marks the variants of a wave that the rollout skips, and, once the
// wave has started (started is not nil), fails those that stay blocked
// (Variant.Blocked) past the progress deadline, counted from when they
// were blocked or from the wave's start, whichever is later. vs is copied
// before it is changed.
func (d *decision) mark(vs []Variant, started *metav1.Time) []Variant {
	secs := d.in.Spec.ProgressDeadlineSeconds
	if len(d.skip) == 0 && (secs == nil || started == nil) {
		return vs
	}
	copied := false
	change := func(i int) *Variant {
		if !copied {
			vs, copied = slices.Clone(vs), true
		}
		return &vs[i]
	}
	for i, v := range vs {
		if d.skip[v.Name] {
			change(i).Skipped = true
			continue
		}
		if secs == nil || started == nil || v.Blocked == "" || v.Failed != "" || (v.Updated && v.Finished) {
			continue
		}
		at := started.Time
		if v.BlockedSince.After(at) {
			at = v.BlockedSince
		}
		at = at.Add(time.Duration(*secs) * time.Second)
		if d.in.Now.Before(at) {
			d.requeue(at)
			continue
		}
		change(i).Failed = fmt.Sprintf("%s for more than spec.rollout.progressDeadlineSeconds (%d)", v.Blocked, *secs)
	}
	return vs
}

// deadline reports a progressing wave past its progress deadline.
func (d *decision) deadline(ws configv1alpha2.WaveStatus) {
	secs := d.in.Spec.ProgressDeadlineSeconds
	if secs == nil || ws.StartedAt == nil {
		return
	}
	at := ws.StartedAt.Add(time.Duration(*secs) * time.Second)
	if d.in.Now.Before(at) {
		d.requeue(at)
		return
	}
	d.stop.reason = ReasonProgressDeadlineExceeded
	d.stop.detail = fmt.Sprintf("not finished within spec.rollout.progressDeadlineSeconds (%d) of its start at %s: %s",
		*secs, ws.StartedAt.UTC().Format(time.RFC3339), d.stop.detail)
}

func (d *decision) soakEnd(ws configv1alpha2.WaveStatus) time.Time {
	return ws.FinishedAt.Add(time.Duration(intOr(d.in.Spec.SoakSeconds, 0)) * time.Second)
}

// requeue asks for a decision again at t at the latest.
func (d *decision) requeue(t time.Time) {
	after := t.Sub(d.in.Now)
	if after <= 0 {
		return
	}
	if d.plan.RequeueAfter == 0 || after < d.plan.RequeueAfter {
		d.plan.RequeueAfter = after
	}
}

func (d *decision) now() *metav1.Time {
	t := metav1.NewTime(d.in.Now)
	return &t
}

func (d *decision) event(warning bool, reason, format string, args ...any) {
	d.plan.Events = append(d.plan.Events, Event{Warning: warning, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

func intOr(p *int32, def int) int {
	if p == nil {
		return def
	}
	return int(*p)
}

// listed is how many names a message lists before "and N more".
const listed = 3

// tally is what one pass over a wave's variants finds, once the open ones
// carry the change (Decide makes one or two such passes per wave).
type tally struct {
	States
	// updated carry the change, the open ones included; started carry it
	// without having finished or failed it, the open ones left out (a
	// failed variant frees its maxConcurrent slot: within maxFailures the
	// wave goes on); notUpdated do not carry it, the open ones counted as
	// not carrying it.
	updated, started, notUpdated int
	// done: every variant carries the change (none just opened) and
	// finished it or failed (whether the failures are within maxFailures
	// is the caller's to check).
	done bool
}

func tallyOf(vs []Variant, open map[string]bool) tally {
	t := tally{done: true}
	for _, v := range vs {
		if v.Skipped {
			t.Skipped++
			if v.Updated {
				t.updated++
			}
			continue
		}
		opened := len(open) > 0 && open[v.Name]
		switch {
		case v.Failed != "":
			t.Failed++
		case v.Updated && v.Finished:
			t.Finished++
		case v.Updated || opened:
			t.Open++
		default:
			t.Pending++
		}
		if v.Updated || opened {
			t.updated++
		}
		if !v.Updated {
			t.notUpdated++
		} else if !v.Finished && v.Failed == "" {
			t.started++
		}
		if !v.Updated || opened || (v.Failed == "" && !v.Finished) {
			t.done = false
		}
	}
	return t
}

// fill sets a wave's counts: its variants, those carrying the change once
// the open ones get it, those that finished it, and those that failed.
func (t tally) fill(ws *configv1alpha2.WaveStatus, variants int) {
	ws.Variants, ws.Finished, ws.Failed, ws.Updated, ws.Skipped = int32(variants), int32(t.Finished), int32(t.Failed), int32(t.updated), int32(t.Skipped)
}

func failedList(vs []Variant) string {
	var items []string
	for _, v := range vs {
		if v.Failed != "" && !v.Skipped {
			items = append(items, fmt.Sprintf("%s (%s)", v.Name, v.Failed))
		}
	}
	return conditions.List(items, listed)
}

// progress says where a progressing wave stands: "2 of 5 finished, 1
// waiting for approval (a.b.packagevariant-2), 2 not started yet".
func progress(vs []Variant, open map[string]bool) string {
	var finished, skipped int
	var waiting, blocked, failed, pending []string
	for _, v := range vs {
		switch {
		case v.Skipped:
			skipped++
		case v.Failed != "":
			failed = append(failed, fmt.Sprintf("%s (%s)", v.Name, v.Failed))
		case !v.Updated && !open[v.Name]:
			pending = append(pending, v.Name)
		case v.Finished && v.Updated:
			finished++
		case v.Blocked != "":
			blocked = append(blocked, fmt.Sprintf("%s (%s)", v.Name, v.Blocked))
		case v.WaitingFor != "":
			waiting = append(waiting, v.WaitingFor)
		}
	}
	parts := []string{fmt.Sprintf("%d of %d finished", finished, len(vs))}
	if len(waiting) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for approval (%s)", len(waiting), conditions.List(waiting, listed)))
	}
	if len(blocked) > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked (%s)", len(blocked), conditions.List(blocked, listed)))
	}
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", len(failed), conditions.List(failed, listed)))
	}
	if len(pending) > 0 {
		parts = append(parts, fmt.Sprintf("%d not started yet", len(pending)))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	return strings.Join(parts, ", ")
}

// listStates lists in ws the variants of vs a person looks for (see
// WaveStatus.VariantStates): those that failed or are skipped, and with
// unfinished (the wave has not finished), every one that carries the
// change once the open ones get it.
func listStates(ws *configv1alpha2.WaveStatus, vs []Variant, open map[string]bool, unfinished bool) {
	ws.VariantStates, ws.VariantStatesNotListed = nil, 0
	for _, v := range vs {
		s := configv1alpha2.VariantState{Name: v.Name}
		switch {
		case v.Skipped:
			s.State = configv1alpha2.VariantSkipped
		case v.Failed != "":
			s.State, s.Detail = configv1alpha2.VariantFailed, v.Failed
		case !unfinished || !(v.Updated || open[v.Name]):
			continue
		case v.Finished && v.Updated:
			s.State = configv1alpha2.VariantFinished
		case v.Blocked != "":
			s.State, s.Detail = configv1alpha2.VariantBlocked, v.Blocked
		case v.WaitingFor != "":
			s.State, s.Detail = configv1alpha2.VariantWaitingForApproval, v.WaitingFor
		default:
			s.State = configv1alpha2.VariantOpen
		}
		ws.VariantStates = append(ws.VariantStates, s)
	}
	slices.SortFunc(ws.VariantStates, func(a, b configv1alpha2.VariantState) int { return strings.Compare(a.Name, b.Name) })
	if n := len(ws.VariantStates); n > configv1alpha2.MaxVariantStatesListed {
		ws.VariantStates, ws.VariantStatesNotListed = ws.VariantStates[:configv1alpha2.MaxVariantStatesListed:configv1alpha2.MaxVariantStatesListed], int32(n-configv1alpha2.MaxVariantStatesListed)
	}
}

// MaxConcurrent is how many variants of a wave of n may have an unfinished
// change at once: all of them by default, a percentage rounded up, never
// less than 1.
func MaxConcurrent(w configv1alpha2.Wave, n int) int {
	if w.MaxConcurrent == nil {
		return max(n, 1)
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(w.MaxConcurrent, n, true)
	if err != nil || v < 1 {
		// Validation refuses both; a set that slipped through opens one
		// variant at a time rather than none or all.
		return 1
	}
	return v
}
