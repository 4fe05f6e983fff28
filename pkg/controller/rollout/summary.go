package rollout

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

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
