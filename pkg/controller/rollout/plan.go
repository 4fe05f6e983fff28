package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
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

// summarise sets the progress, the RolledOut condition and the events that
// follow from it.
func (d *decision) summarise() {
	st := d.plan.Status
	var finished, total int32
	for _, w := range st.Waves {
		finished += w.Finished
		total += w.Variants
	}
	total += st.Unassigned
	st.Progress = fmt.Sprintf("%d/%d", finished, total)
	if st.Unassigned > 0 && d.stop == nil {
		d.stop = &stopped{wave: st.Waves[len(st.Waves)-1], reason: ReasonVariantsWithoutWave}
	}
	if total == 0 && d.stop == nil {
		// Nothing to roll out is not rolled out: kubectl wait
		// --for=condition=RolledOut must not pass on a selector that
		// selects nothing.
		d.plan.Condition = Condition{Status: metav1.ConditionFalse, Reason: ReasonNoVariants, Message: fmt.Sprintf(
			"rollout %s (upstream revision %d) has no variant to roll out: the set's targets render none; check spec.targets (a repositorySelector or objectSelector that matches nothing?)", d.in.ID, d.in.UpstreamRevision)}
		return
	}
	if d.stop == nil {
		d.plan.Condition = Condition{Status: metav1.ConditionTrue, Reason: ReasonRolledOut, Message: fmt.Sprintf(
			"rollout %s (upstream revision %d) is complete: every wave finished, %d of %d variants published it", d.in.ID, d.in.UpstreamRevision, finished, total)}
		if d.in.PreviousReason != ReasonRolledOut || d.in.Previous == nil || d.in.Previous.ID != d.in.ID {
			d.event(false, EventRolloutComplete, "%s", d.plan.Condition.Message)
		}
		return
	}
	reason := d.stop.reason
	if d.in.Spec.Paused {
		reason = ReasonPaused
	}
	message := fmt.Sprintf("rollout %s (upstream revision %d), wave %q: %s", d.in.ID, d.in.UpstreamRevision, d.stop.wave.Name, d.stop.detail)
	if d.stop.reason == ReasonVariantsWithoutWave {
		message = fmt.Sprintf("rollout %s (upstream revision %d): every wave finished", d.in.ID, d.in.UpstreamRevision)
	}
	message += d.unassigned() + d.staleAnnotations()
	if d.in.Spec.Paused && d.stop.reason != ReasonPaused {
		message += "; spec.rollout.paused is true: nothing new starts until it is false"
	}
	if d.in.Spec.Paused {
		message += d.heldWhilePaused()
	}
	d.plan.Condition = Condition{Status: metav1.ConditionFalse, Reason: reason, Message: message}
	if reason == d.in.PreviousReason {
		return
	}
	switch reason {
	case ReasonHalted:
		d.event(true, EventRolloutHalted, "%s", message)
	case ReasonProgressDeadlineExceeded:
		d.event(true, EventProgressDeadlineExceeded, "%s", message)
	case ReasonVariantsWithoutWave:
		d.event(true, EventVariantsWithoutWave, "%s", message)
	}
}

func intOr(p *int32, def int) int {
	if p == nil {
		return def
	}
	return int(*p)
}

// heldWhilePaused says what a paused rollout keeps from happening
// besides its waves: creates and deletes ("" when nothing).
func (d *decision) heldWhilePaused() string {
	var parts []string
	if d.heldCreates > 0 {
		parts = append(parts, fmt.Sprintf("%d variants of new targets are not created", d.heldCreates))
	}
	if d.in.HeldDeletes > 0 {
		parts = append(parts, fmt.Sprintf("%d variants of vanished targets are not deleted", d.in.HeldDeletes))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; while paused, " + strings.Join(parts, " and ")
}

// unassigned says which variants no wave takes ("" when none).
func (d *decision) unassigned() string {
	st := d.plan.Status
	if st.Unassigned == 0 {
		return ""
	}
	shown := st.UnassignedVariants[:min(len(st.UnassignedVariants), listed)]
	names := strings.Join(shown, ", ")
	if more := int(st.Unassigned) - len(shown); more > 0 {
		names += fmt.Sprintf(" and %d more (status.rollout.unassignedVariants)", more)
	}
	return fmt.Sprintf("; %d variants are in no wave, held on what they carry: %s; give them a wave (a selector over their labels, or a repositorySelector over their Repository's; a wave with neither takes every variant left)",
		st.Unassigned, names)
}

// staleAnnotations says which of the set's skip and resume annotations
// do nothing in this rollout, and why ("" when none).
func (d *decision) staleAnnotations() string {
	var out []string
	if v := d.in.Skip; v != "" && d.skip == nil {
		if sk, ok := helper.ParseSkip(v); !ok {
			out = append(out, fmt.Sprintf("%s=%q skips nothing: it is not <variant>[,<variant>...]@<rollout id>", configv1alpha2.SkipVariantsAnnotation, v))
		} else {
			out = append(out, fmt.Sprintf("%s=%s skips nothing: it names rollout %s, not the current %s", configv1alpha2.SkipVariantsAnnotation, v, sk.ID, d.in.ID))
		}
	}
	if d.resumed != "" && !slices.ContainsFunc(d.in.Spec.Waves, func(w configv1alpha2.Wave) bool { return w.Name == d.resumed }) {
		out = append(out, fmt.Sprintf("%s=%s resumes nothing: the rollout has no wave %q", configv1alpha2.ResumeWaveAnnotation, d.in.Resume, d.resumed))
	}
	if v := d.in.Resume; v != "" && d.resumed == "" {
		if r, ok := helper.ParseApproval(v); !ok {
			out = append(out, fmt.Sprintf("%s=%q resumes nothing: it is not <wave>@<rollout id>", configv1alpha2.ResumeWaveAnnotation, v))
		} else {
			out = append(out, fmt.Sprintf("%s=%s resumes nothing: it names rollout %s, not the current %s", configv1alpha2.ResumeWaveAnnotation, v, r.ID, d.in.ID))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}
