package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/workloop"
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
)

// Condition reasons. The first four are the reference controller's.
const (
	ReasonValidationError    = "ValidationError"
	ReasonValid              = conditions.ReasonValid
	ReasonError              = "Error"
	ReasonNoErrors           = "NoErrors"
	ReasonConflict           = "Conflict"
	ReasonWaitingForApproval = "WaitingForApproval"
	// ReasonInjectionForbidden: the variant asks to inject an object its
	// ServiceAccount may not get; the message names both.
	ReasonInjectionForbidden = "InjectionForbidden"
	ReasonDraftEdited        = "DraftEdited"
	ReasonNewRevision        = "NewUpstreamRevision"
	ReasonDeleting           = "Deleting"
	ReasonDeletionProposed   = "DeletionProposed"
	// ReasonRenderFailed: Porch could not render the downstream package's
	// pipeline with the variant's changes.
	ReasonRenderFailed = "RenderFailed"
	// ReasonRefused: the server refused a request in a way no retry can
	// change (invalid name, forbidden, missing Repository).
	ReasonRefused = "Refused"
	// ReasonOtherDraftOpen: the downstream package has a Draft or Proposed
	// revision the variant does not manage, and the variant makes no
	// second one beside it.
	ReasonOtherDraftOpen = "OtherDraftOpen"
)

const readyMessage = "successfully ensured downstream package variant"

func setCondition(pv *configv1alpha1.PackageVariant, condType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(&pv.Status.Conditions, pv.Generation, condType, status, reason, message)
}

// setInvalid reports a problem only a change of the variant (or of its
// upstream) can fix, with the reference controller's reasons.
func setInvalid(pv *configv1alpha1.PackageVariant, stalledMessage, readyMessage string) {
	conditions.SetStalled(&pv.Status.Conditions, pv.Generation, ReasonValidationError, stalledMessage, ReasonError, readyMessage)
}

func setValid(pv *configv1alpha1.PackageVariant) {
	conditions.SetValid(&pv.Status.Conditions, pv.Generation)
}

func setNotReady(pv *configv1alpha1.PackageVariant, reason, message string) {
	conditions.SetReady(&pv.Status.Conditions, pv.Generation, metav1.ConditionFalse, reason, message)
}

func setReady(pv *configv1alpha1.PackageVariant, message string) {
	conditions.SetReady(&pv.Status.Conditions, pv.Generation, metav1.ConditionTrue, ReasonNoErrors, message)
}

// reportRenderFailure says that Porch could not render a downstream
// revision with the variant's changes, what the pipeline said and what to
// do. A Warning event is recorded when the failure starts or its message
// changes, not on every retry.
func (c *Controller) reportRenderFailure(pv *configv1alpha1.PackageVariant, rerr *renderError) {
	msg := renderFailureMessage(rerr)
	prev := meta.FindStatusCondition(pv.Status.Conditions, ConditionReady)
	if prev == nil || prev.Reason != ReasonRenderFailed || prev.Message != msg {
		c.recorder.Eventf(pv, corev1.EventTypeWarning, ReasonRenderFailed, "%s", msg)
	}
	setNotReady(pv, ReasonRenderFailed, msg)
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

// setTargets lists the downstream revisions the variant controls: its
// Drafts and Proposed ones, else its latest Published one. Render outcomes
// already recorded for a revision are kept.
func setTargets(pv *configv1alpha1.PackageVariant, targets []*porchv1alpha1.PackageRevision, rendered map[string]porchv1alpha1.RenderStatus) {
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	previous := map[string]porchv1alpha1.RenderStatus{}
	for _, t := range pv.Status.DownstreamTargets {
		previous[t.Name] = t.RenderStatus
	}
	var out []configv1alpha1.DownstreamTarget
	for _, n := range names {
		rs, ok := rendered[n]
		if !ok {
			rs = previous[n]
		}
		out = append(out, configv1alpha1.DownstreamTarget{Name: n, RenderStatus: rs})
	}
	pv.Status.DownstreamTargets = out
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

// reportDenied sets Ready=False when the variant's last write looked up an
// object to inject that its ServiceAccount may not get: the package holds
// the refusal in place of the object, and the condition names the object
// and the permission. The variant is synced again when the refusal
// expires, so a grant takes effect without another change.
func (c *Controller) reportDenied(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	if c.access == nil || pv.Status.Applied == nil {
		return nil
	}
	for _, ref := range pv.Status.Applied.Injected {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		var denied *access.DeniedError
		if err := c.access.MayGet(ctx, pv.Namespace, pv.Spec.ServiceAccountName, gv.WithKind(ref.Kind), ref.Name); errors.As(err, &denied) {
			setNotReady(pv, ReasonInjectionForbidden, fmt.Sprintf("%s %q is not injected: %v", ref.Kind, ref.Name, denied))
			return workloop.RetryAfter(denied.RetryAfter, nil)
		}
	}
	return nil
}
