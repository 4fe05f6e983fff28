package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// sync reconciles one PackageVariant. Contract: NotFound -> nil; an invalid
// spec or a problem only a person can fix -> conditions, nil; Conflict ->
// silent requeue; other errors -> returned for a rate-limited retry. A
// variant that is already up to date costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("packageVariant", key.String())
	ctx = klog.NewContext(ctx, logger)
	pv, err := c.pvLister.PackageVariants(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PackageVariant is gone")
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PackageVariant %s: %w", key, err)
	}
	pv = c.written.Latest(pv)
	if pv.DeletionTimestamp != nil {
		return c.cleanup(ctx, pv)
	}
	if !hasFinalizer(pv) {
		if pv, err = c.addFinalizer(ctx, pv); err != nil {
			return err
		}
	}
	desired := c.unsaved.restore(pv).DeepCopy()
	syncErr := c.reconcile(ctx, desired)
	if errors.Is(syncErr, errDraftPending) {
		syncErr = nil
	}
	if msg, ok := refusedForGood(syncErr); ok {
		// Retrying cannot fix it: say so once and wait for a change of the
		// variant (or of its packages) instead of retrying for ever.
		msg = fmt.Sprintf("%s; the server refuses this on every try: fix the variant (or what the message names), and it is tried again", msg)
		if cur := meta.FindStatusCondition(pv.Status.Conditions, ConditionStalled); cur == nil || cur.Status != metav1.ConditionTrue || cur.Message != msg {
			c.recorder.Eventf(pv, corev1.EventTypeWarning, ReasonRefused, "%s", msg)
		}
		setCondition(desired, ConditionStalled, metav1.ConditionTrue, ReasonRefused, msg)
		setNotReady(desired, ReasonRefused, msg)
		syncErr = nil
	}
	if syncErr != nil && !apierrors.IsConflict(syncErr) && !workloop.IsRetryAfter(syncErr) {
		// Say what fails while it is retried; the next success replaces it.
		setNotReady(desired, ReasonError, fmt.Sprintf("%v; retrying", syncErr))
	}
	conditions.KeepTransitionTimes(pv.Status.Conditions, desired.Status.Conditions)
	if err := c.writeStatus(ctx, pv, desired); err != nil {
		// What the sync wrote into the draft must not be forgotten with
		// the status: the next sync would take it for a person's edit.
		c.unsaved.remember(pv, desired.Status.Applied)
		if syncErr == nil {
			return err
		}
		logger.V(2).Info("Could not write status", "err", err)
		return syncErr
	}
	c.unsaved.forget(pv.UID)
	return syncErr
}

// refusedForGood reports whether err is an answer of the API server that
// the same request will get every time (a 4xx other than conflict, timeout
// and throttling, or a missing downstream Repository), with the error's
// text.
func refusedForGood(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "", false
	}
	s := st.Status()
	switch s.Code {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusMethodNotAllowed,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return err.Error(), true
	case http.StatusNotFound:
		if s.Details != nil && s.Details.Kind == "repositories" {
			return err.Error(), true
		}
	case http.StatusInternalServerError:
		// Porch refuses a clone into a package that exists: when every
		// revision the controller sees is gone, its placeholder on the
		// repository's main branch may still be there.
		if helper.IsCloneIntoExisting(err) {
			return err.Error() + " (the package still exists in the repository, perhaps only on its main branch: delete it there or choose another spec.downstream)", true
		}
	}
	return "", false
}

// reconcile brings the downstream up to date and records the outcome in
// pv.Status (pv is the caller's copy).
func (c *Controller) reconcile(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	if errs := validation.ValidatePackageVariant(pv); len(errs) > 0 {
		meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionConflict)
		setInvalid(pv, strings.Join(validation.Messages(errs), "; "), "invalid packagevariant object: fix the problems the Stalled condition lists")
		return nil
	}

	if winner := c.downstreamWinner(pv); winner != nil && winner.UID != pv.UID {
		msg := fmt.Sprintf("downstream package %s is managed by PackageVariant %s/%s; this variant writes nothing until that one is deleted or this one targets another downstream",
			describePackage(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package), winner.Namespace, winner.Name)
		// An event only when the conflict starts: neither the status (which
		// survives a restart) nor this process (whose status write may not
		// be in the cache yet) has recorded it.
		cond := meta.FindStatusCondition(pv.Status.Conditions, ConditionConflict)
		if prev, seen := c.conflicts.Swap(pv.UID, winner.UID); (!seen || prev != winner.UID) && (cond == nil || cond.Status != metav1.ConditionTrue) {
			c.recorder.Eventf(pv, corev1.EventTypeWarning, "Conflict", "%s", msg)
		}
		setCondition(pv, ConditionConflict, metav1.ConditionTrue, ReasonConflict, msg)
		setCondition(pv, ConditionStalled, metav1.ConditionTrue, ReasonConflict, msg)
		setNotReady(pv, ReasonConflict, msg)
		return nil
	}
	meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionConflict)
	c.conflicts.Delete(pv.UID)

	up := pv.Spec.Upstream
	upRevs := c.packageRevisions(pv.Namespace, up.Repo, up.Package)
	upstream, err := helper.ResolveUpstream(up, upRevs)
	if err != nil {
		setInvalid(pv, err.Error(), err.Error())
		return nil
	}
	setValid(pv)

	// Revisions the variant owns in another package: left over from an
	// earlier spec.downstream; the deletion policy applies to them.
	for _, pr := range c.ownedRevisions(pv) {
		if pr.Spec.RepositoryName != pv.Spec.Downstream.Repo || pr.Spec.PackageName != pv.Spec.Downstream.Package {
			if err := c.release(ctx, pv, pr, "no longer the variant's downstream"); err != nil {
				return err
			}
		}
	}

	if name, ok := c.expectations.Unconfirmed(pv.UID); ok {
		_, err := c.client.PorchV1alpha1().PackageRevisions(pv.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			// The create was made. What Porch made is not known (a
			// person may have edited the draft since), so the draft is
			// not recorded as the variant's own: it counts as edited.
			c.expectDraft(pv.UID, name)
		case apierrors.IsNotFound(err):
			c.expectations.Observed(pv.UID, name)
		default:
			return fmt.Errorf("check whether draft %s was created: %w", name, err)
		}
	}
	if name, waited := c.expectations.Waiting(pv.UID, c.inCache(pv.Namespace)); name != "" {
		if d := expectations.CheckAfter - waited; d > 0 {
			klog.FromContext(ctx).V(4).Info("Waiting for a created draft to reach the cache", "packageRevision", name)
			return workloop.RecheckAfter(d)
		}
		_, err := c.client.PorchV1alpha1().PackageRevisions(pv.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Deleted before the cache showed it: nothing to wait for.
			c.expectations.Observed(pv.UID, name)
		case err != nil:
			return fmt.Errorf("check whether draft %s still exists: %w", name, err)
		default:
			return workloop.RecheckAfter(expectations.CheckAfter)
		}
	}

	st := &state{pv: pv, upstream: upstream, upRevs: upRevs, rendered: map[string]porchv1alpha1.RenderStatus{}}
	st.dsRevs = c.packageRevisions(pv.Namespace, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
	if err := c.repairLostMetadata(ctx, st); err != nil {
		return err
	}
	if err := c.adopt(ctx, st); err != nil {
		return err
	}
	st.classify()
	if err := c.finishReplacing(ctx, st); err != nil {
		return err
	}

	err = c.ensureDownstream(ctx, st)
	var merr *mutationError
	if errors.As(err, &merr) {
		setNotReady(pv, ReasonError, merr.Error()+"; fix the upstream package or the variant")
		err = nil
	}
	var other *otherDraftOpen
	if errors.As(err, &other) {
		setNotReady(pv, ReasonOtherDraftOpen, other.Error())
		err = nil
	}
	if err == nil {
		err = c.reportDenied(ctx, pv)
	}
	var pending *renderPending
	if rerr, ok := isRenderError(err); ok {
		c.reportRenderFailure(pv, rerr)
		err = workloop.RetryAfter(c.renderRetries.failed(pv.UID, rerr.retryKey()), err)
	} else if errors.As(err, &pending) {
		// Still failing as reported; the status says so already.
		err = workloop.RetryAfter(pending.after, nil)
	}
	setTargets(pv, st.targets(), st.rendered)
	return err
}
