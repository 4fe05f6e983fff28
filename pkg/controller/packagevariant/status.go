package packagevariant

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchhelper "github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// Condition types set on a PackageVariant.
const (
	// ConditionStalled is True when only a person can unblock the variant.
	ConditionStalled = conditions.Stalled
	// ConditionReady is True when the downstream is up to date.
	ConditionReady = conditions.Ready
	// ConditionConflict is True while another variant manages the same
	// downstream package; this one then writes nothing.
	ConditionConflict = "Conflict"
	// ConditionUpgradeAvailable is True when spec.upgradePolicy is Manual
	// and a newer upstream revision exists than the downstream is based on.
	ConditionUpgradeAvailable = "UpgradeAvailable"
	// ConditionPublished is True when the downstream's latest Published
	// revision carries the variant's current spec and no draft or proposal
	// of the variant is open (a set's rollout waits on it).
	ConditionPublished = configv1alpha1.ConditionPublished
	// ConditionPaused is True while a person pauses the variant.
	ConditionPaused = configv1alpha1.ConditionPaused
)

// Condition reasons. The first four are the reference controller's.
const (
	ReasonValidationError    = "ValidationError"
	ReasonValid              = conditions.ReasonValid
	ReasonError              = "Error"
	ReasonNoErrors           = "NoErrors"
	ReasonConflict           = configv1alpha1.ReasonConflict
	ReasonWaitingForApproval = configv1alpha1.ReasonWaitingForApproval
	// ReasonInjectionForbidden: the variant asks to inject an object its
	// ServiceAccount may not get; the message names both.
	ReasonInjectionForbidden = "InjectionForbidden"
	ReasonDraftEdited        = "DraftEdited"
	ReasonDraftUnverified    = "DraftUnverified"
	ReasonNewRevision        = "NewUpstreamRevision"
	ReasonDeleting           = "Deleting"
	ReasonDeletionProposed   = "DeletionProposed"
	// ReasonRenderFailed: Porch could not render the downstream package's
	// pipeline with the variant's changes.
	ReasonRenderFailed = configv1alpha1.ReasonRenderFailed
	// ReasonRefused: the server refused a request in a way no retry can
	// change (invalid name, forbidden, missing Repository).
	ReasonRefused = configv1alpha1.ReasonRefused
	// ReasonOtherDraftOpen: the downstream package has a Draft or Proposed
	// revision the variant does not manage, and the variant makes no
	// second one beside it.
	ReasonOtherDraftOpen = "OtherDraftOpen"
)

const readyMessage = "successfully ensured downstream package variant"

// calculateStatus is the status of pv after one sync that went as o
// records: the conditions, the downstream targets and status.applied, the
// record of the controller's writes the sync kept (o.claimed.applied). pv
// is not changed.
func calculateStatus(pv *configv1alpha1.PackageVariant, o *outcome) configv1alpha1.PackageVariantStatus {
	out := pv.Status.DeepCopy()
	conditions.Make(&out.Conditions, pv.Generation, conditionEdits(pv, o)...)
	if o.paused || o.cleanup != nil || o.invalid != nil || o.conflictWith != nil {
		// Everything else stays as the last sync left it.
		return *out
	}
	if o.claimed != nil {
		out.Applied = o.claimed.applied
	}
	if o.st != nil {
		out.DownstreamTargets = targetsOf(out.DownstreamTargets, o.st.targets(), o.st.rendered)
	}
	return *out
}

// conditionEdits are the changes one sync that went as o makes to pv's
// conditions, in order. A paused variant keeps every other condition with
// the generation it was computed for.
func conditionEdits(pv *configv1alpha1.PackageVariant, o *outcome) []conditions.Edit {
	if o.paused {
		return []conditions.Edit{edit(ConditionPaused, metav1.ConditionTrue, configv1alpha1.ReasonPaused, confighelper.PausedMessage("PackageVariant", pv))}
	}
	edits := []conditions.Edit{conditions.Remove(ConditionPaused)}
	switch {
	case o.cleanup != nil:
		return append(edits, edit(conditions.Ready, metav1.ConditionFalse, ReasonDeleting, fmt.Sprintf(
			"cleanup of downstream revisions %s failed; the controller keeps retrying and keeps the finalizer until it succeeds: %v",
			conditions.List(o.cleanup.revisions, 3), o.cleanup.err)))
	case o.invalid != nil:
		edits = append(edits, conditions.Remove(ConditionConflict))
		edits = append(edits, conditions.StalledNotReady(ReasonValidationError, o.invalid.stalled, ReasonError, o.invalid.ready)...)
		return append(edits, notPublished("the variant is invalid: fix the problems the Stalled condition lists"))
	case o.conflictWith != nil:
		msg := conflictMessage(pv, o.conflictWith)
		return append(edits, edit(ConditionConflict, metav1.ConditionTrue, ReasonConflict, msg),
			edit(ConditionStalled, metav1.ConditionTrue, ReasonConflict, msg),
			edit(conditions.Ready, metav1.ConditionFalse, ReasonConflict, msg),
			notPublished("another variant manages the downstream package: see the Conflict condition"))
	}
	edits = append(edits, conditions.Remove(ConditionConflict))
	if o.refused != "" {
		edits = append(edits, edit(ConditionStalled, metav1.ConditionTrue, ReasonRefused, refusedMessage(o.refused)))
	} else {
		edits = append(edits, conditions.Valid())
	}
	upgradeShown := meta.IsStatusConditionTrue(pv.Status.Conditions, ConditionUpgradeAvailable)
	if u := o.upgrade; u != nil {
		if u.message == "" || u.removedFirst {
			edits, upgradeShown = append(edits, conditions.Remove(ConditionUpgradeAvailable)), false
		}
		if u.message != "" {
			edits, upgradeShown = append(edits, edit(ConditionUpgradeAvailable, metav1.ConditionTrue, ReasonNewRevision, u.message)), true
		}
	}
	readyReason, msg := readiness(pv, o)
	switch readyReason {
	case "":
	case ReasonNoErrors:
		edits = append(edits, edit(conditions.Ready, metav1.ConditionTrue, ReasonNoErrors, msg))
	default:
		edits = append(edits, edit(conditions.Ready, metav1.ConditionFalse, readyReason, msg))
	}
	if status, reason, msg := publication(pv, o, upgradeShown, readyReason); reason != "" {
		edits = append(edits, edit(ConditionPublished, status, reason, msg))
	}
	return edits
}

// edit sets condition condType of a variant.
func edit(condType string, status metav1.ConditionStatus, reason, message string) conditions.Edit {
	return conditions.Edit{Type: condType, Status: status, Reason: reason, Message: message}
}

// publication is the Published condition of a valid variant after a sync
// that went as o records (upgradeShown: whether the sync leaves
// UpgradeAvailable True, readyReason the reason readiness gave). No reason when the sync has nothing new to say
// (Ready stays as it was, or the sync is retried): Published stays as it
// was.
func publication(pv *configv1alpha1.PackageVariant, o *outcome, upgradeShown bool, readyReason string) (metav1.ConditionStatus, string, string) {
	if readyReason == "" || o.retrying != nil || o.st == nil {
		return "", "", ""
	}
	st := o.st
	var open, unmet []string
	for _, pr := range st.targets() {
		if pr != st.published {
			open = append(open, pr.Name)
			if gates := porchhelper.UnmetReadinessGates(pr); len(gates) > 0 {
				unmet = append(unmet, fmt.Sprintf("%s: %s", pr.Name, strings.Join(gates, ", ")))
			}
		}
	}
	switch {
	case len(unmet) > 0:
		return metav1.ConditionFalse, configv1alpha1.ReasonReadinessGatesNotMet, fmt.Sprintf(
			"readiness gates not met, so the change cannot be published by the rules: %s; make what they name exist (an injected object that is gone?) and the next sync fills them",
			conditions.List(unmet, 3))
	case len(open) > 0:
		return metav1.ConditionFalse, ReasonWaitingForApproval, fmt.Sprintf(
			"%s of the variant waits for approval: the change is finished once it is published", conditions.List(open, 3))
	case st.published == nil:
		return metav1.ConditionFalse, configv1alpha1.ReasonNotPublished, fmt.Sprintf(
			"downstream package %s has no published revision of this variant yet", describePackage(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package))
	case upgradeShown:
		return metav1.ConditionFalse, configv1alpha1.ReasonNotPublished, fmt.Sprintf(
			"%s is not based on the selected upstream revision: the upgrade is held (see UpgradeAvailable)", st.published.Name)
	case readyReason != ReasonNoErrors || o.progress.kind != progressReady:
		return metav1.ConditionFalse, configv1alpha1.ReasonNotPublished, fmt.Sprintf(
			"%s does not carry the variant's current spec yet: see the Ready condition", st.published.Name)
	}
	return metav1.ConditionTrue, configv1alpha1.ReasonPublished, fmt.Sprintf(
		"%s carries upstream %s and the variant's changes", st.published.Name, st.upstream.Name)
}

// notPublished is Published=False, NotPublished, for a variant the sync
// did not work on.
func notPublished(message string) conditions.Edit {
	return edit(ConditionPublished, metav1.ConditionFalse, configv1alpha1.ReasonNotPublished, message)
}

// readiness is the reason and message of the Ready condition a valid
// variant's sync reports: the latest problem it met, else where it left
// the downstream. Ready is True with ReasonNoErrors, False with any other
// reason; no reason when the sync has nothing new to say (Ready stays as
// it was).
func readiness(pv *configv1alpha1.PackageVariant, o *outcome) (string, string) {
	switch {
	case o.retrying != nil:
		// Say what fails while it is retried; the next success replaces it.
		return ReasonError, fmt.Sprintf("%v; retrying", o.retrying)
	case o.refused != "":
		return ReasonRefused, refusedMessage(o.refused)
	case o.render != nil:
		return ReasonRenderFailed, renderFailureMessage(o.render)
	case o.denied != nil:
		return ReasonInjectionForbidden, fmt.Sprintf("%s %q is not injected: %v", o.denied.ref.Kind, o.denied.ref.Name, o.denied.err)
	case o.otherDraft != nil:
		return ReasonOtherDraftOpen, o.otherDraft.Error()
	case o.mutation != nil:
		return ReasonError, o.mutation.Error() + "; fix the upstream package or the variant"
	}
	p := o.progress
	switch p.kind {
	case progressReady:
		return ReasonNoErrors, readyMessage
	case progressReadyProposed:
		return ReasonNoErrors, fmt.Sprintf("%s; %s is Proposed and waiting for approval", readyMessage, p.revision.Name)
	case progressDraftEdited:
		return ReasonDraftEdited, fmt.Sprintf(
			"upstream moved to %s (revision %d) but draft %s was changed since the controller last wrote it, so it is kept as it is: publish it (an upgrade draft follows) or delete it (a new draft is made from the new upstream)",
			p.upstream.Name, p.upstream.Spec.Revision, p.revision.Name)
	case progressDraftUnverified:
		return ReasonDraftUnverified, fmt.Sprintf(
			"upstream moved to %s (revision %d) but the variant cannot tell whether draft %s holds a person's edits (it adopted the draft, lost Porch's answer to one of its writes, or the controller restarted before recording a write), so it keeps the draft as it is: publish it (an upgrade draft follows) or delete it (a new draft is made from the new upstream)",
			p.upstream.Name, p.upstream.Spec.Revision, p.revision.Name)
	case progressApprovalBeforeUpgrade:
		return ReasonWaitingForApproval, fmt.Sprintf("%s is Proposed and waiting for approval; the upgrade to %s follows in a new draft once it is published (or set back to Draft)", p.revision.Name, p.upstream.Name)
	case progressApprovalBeforeChanges:
		return ReasonWaitingForApproval, fmt.Sprintf("%s is Proposed and waiting for approval; the variant's changes follow in a new draft once it is published (or set back to Draft)", p.revision.Name)
	case progressDeletionProposed:
		return ReasonDeletionProposed, fmt.Sprintf(
			"downstream %s is proposed for deletion, so the variant changes nothing; approve the deletion and delete or retarget this variant, or set the revision back to Published",
			p.revision.Name)
	case progressForeign:
		return ReasonError, foreignMessage(pv, p.others)
	case progressCannotUpgrade:
		return ReasonError, fmt.Sprintf("cannot upgrade %s to %s: the upstream revision it is based on (%s) is not a published revision of %s any more, so Porch cannot merge; make the change by hand",
			p.revision.Name, p.upstream.Name, lockRef(p.revision), describePackage(pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package))
	case progressHeldOnGone:
		return ReasonError, heldOnGoneMessage(pv, o.st, p)
	}
	return "", ""
}

// heldOnGoneMessage says why a draft based on an upstream revision that is
// gone is kept (progressHeldOnGone), and what moves it.
func heldOnGoneMessage(pv *configv1alpha1.PackageVariant, st *state, p progress) string {
	why, next := "spec.upgradePolicy is Manual", fmt.Sprintf("set spec.upstream.revision to %d", p.upstream.Spec.Revision)
	if !manualUpgrades(pv) { // held by the set's rollout, as heldUpgrade decides
		why, next = fmt.Sprintf("PackageVariantSet %s rolls upstream changes out in waves", st.rolloutSet), "its wave sets spec.upstream.revision when it opens"
	}
	return fmt.Sprintf("draft %s is based on upstream %s, which is not a published revision of %s any more; %s, so the variant does not move the draft to %s (revision %d) by itself: %s, or delete the draft",
		p.revision.Name, lockRef(p.revision), describePackage(pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package), why, p.upstream.Name, p.upstream.Spec.Revision, next)
}

// conflictMessage says which variant manages pv's downstream instead.
func conflictMessage(pv, winner *configv1alpha1.PackageVariant) string {
	return fmt.Sprintf("downstream package %s is managed by PackageVariant %s/%s; this variant writes nothing until that one is deleted or this one targets another downstream",
		describePackage(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package), winner.Namespace, winner.Name)
}

// refusedMessage says that the server refuses a request on every try (msg
// is its refusal) and what to do.
func refusedMessage(msg string) string {
	return fmt.Sprintf("%s; the server refuses this on every try: fix the variant (or what the message names), and it is tried again", msg)
}

// foreignMessage says that the downstream package exists and is not the
// variant's, and what to do.
func foreignMessage(pv *configv1alpha1.PackageVariant, foreign []*porchv1alpha1.PackageRevision) string {
	names := make([]string, 0, len(foreign))
	for _, pr := range foreign {
		names = append(names, pr.Name)
	}
	hint := "set spec.adoptionPolicy: adoptExisting to take it over, or choose another spec.downstream"
	if adoptionPolicy(pv) == configv1alpha1.AdoptionPolicyAdoptExisting {
		hint = "its revisions are controlled by another owner and cannot be adopted; remove that owner reference or choose another spec.downstream"
	}
	return fmt.Sprintf("downstream package %s already exists (%s) and is not managed by this variant; %s",
		describePackage(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package), conditions.List(names, 3), hint)
}

// announce records the Warning events of a sync's problems when they
// start or their message changes, not on every retry: pv carries the
// conditions stored before the sync.
func (c *Controller) announce(pv *configv1alpha1.PackageVariant, o *outcome) {
	if o.render != nil {
		msg := renderFailureMessage(o.render)
		if prev := meta.FindStatusCondition(pv.Status.Conditions, ConditionReady); prev == nil || prev.Reason != ReasonRenderFailed || prev.Message != msg {
			c.recorder.Eventf(pv, corev1.EventTypeWarning, ReasonRenderFailed, "%s", msg)
		}
	}
	if o.refused != "" {
		msg := refusedMessage(o.refused)
		if cur := meta.FindStatusCondition(pv.Status.Conditions, ConditionStalled); cur == nil || cur.Status != metav1.ConditionTrue || cur.Message != msg {
			c.recorder.Eventf(pv, corev1.EventTypeWarning, ReasonRefused, "%s", msg)
		}
	}
}

// renderFailureMessage says which package's pipeline failed, which function
// (or, for a create, where Porch does not say, which functions ran), what
// it said, what Porch kept and what to do.
func renderFailureMessage(rerr *renderError) string {
	const fix = "Fix the failing function or its configuration (in the upstream package, or the variant's spec.pipeline); the controller retries with backoff"
	if rerr.creating != "" {
		ran := "none could be listed"
		if len(rerr.candidates) > 0 {
			ran = strings.Join(rerr.candidates, "; ")
		}
		return fmt.Sprintf("Porch could not create draft %s (%s): its pipeline failed to render: %s. Porch stored nothing, and does not say which function failed; the pipeline's functions: %s. %s",
			rerr.name, rerr.creating, lastLine(rerr.details), ran, fix)
	}
	kept := "Porch stored nothing: the draft keeps the files it had"
	if rerr.stored {
		kept = "Porch stored the variant's changes unrendered, and the draft's Kptfile says Rendered=False: Porch refuses to propose it until it renders"
	}
	// The Kptfile names the failed function; Porch's own message says
	// why a function could not run at all (no function runner, say).
	said := rerr.details
	if len(rerr.functions) > 0 {
		said = strings.Join(rerr.functions, "; ") + " (Porch: " + lastLine(rerr.details) + ")"
	}
	return fmt.Sprintf("the pipeline of %s failed to render: %s. %s. %s", rerr.name, said, kept, fix)
}

// targetsOf lists the downstream revisions the variant controls: its
// Drafts and Proposed ones, else its latest Published one. Render outcomes
// already recorded for a revision (previous) are kept.
func targetsOf(previous []configv1alpha1.DownstreamTarget, targets []*porchv1alpha1.PackageRevision, rendered map[string]porchv1alpha1.RenderStatus) []configv1alpha1.DownstreamTarget {
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	before := map[string]porchv1alpha1.RenderStatus{}
	for _, t := range previous {
		before[t.Name] = t.RenderStatus
	}
	var out []configv1alpha1.DownstreamTarget
	for _, n := range names {
		rs, ok := rendered[n]
		if !ok {
			rs = before[n]
		}
		out = append(out, configv1alpha1.DownstreamTarget{Name: n, RenderStatus: rs})
	}
	return out
}

// writeStatus writes the status when it differs from what the cache holds;
// an unchanged status costs no API call.
//
// Unlike the set's writeStatus, a conflict is not written again onto a live
// read: a set's status is recomputed whole from the caches at every sync,
// but a variant's carries status.applied, the record of the controller's
// own writes into drafts, made together with those writes from the variant
// the sync read. A conflict retries the whole sync instead (the record
// waits in c.unsaved until it is stored), which computes the status anew
// from the newer variant.
func (c *Controller) writeStatus(ctx context.Context, old, pv *configv1alpha1.PackageVariant) error {
	pv.Status.ObservedGeneration = pv.Generation
	if equality.Semantic.DeepEqual(old.Status, pv.Status) {
		return nil
	}
	updated, err := c.client.ConfigV1alpha1().PackageVariants(pv.Namespace).UpdateStatus(ctx, pv, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of PackageVariant %s/%s: %w", pv.Namespace, pv.Name, err)
	}
	c.written.Record(old.ResourceVersion, updated)
	return nil
}

// lastLine is the last non-empty line of s, trimmed: kpt's render errors
// end with the innermost cause.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
