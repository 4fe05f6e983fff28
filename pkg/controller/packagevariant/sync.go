package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
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
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
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

// outcomeUnknown reports whether a failed write may still have been made:
// the answer was lost (a transport error, a timeout) or the server failed
// after it started (5xx). A 4xx means the write was refused.
func outcomeUnknown(err error) bool {
	if errors.Is(err, context.Canceled) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	code := st.Status().Code
	return code >= http.StatusInternalServerError || code == http.StatusRequestTimeout
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
		if strings.Contains(s.Message, "cannot create a new revision for package") {
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
		if d := expectationCheck - waited; d > 0 {
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
			return workloop.RecheckAfter(expectationCheck)
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
	var pending *renderPending
	if rerr, ok := isRenderError(err); ok {
		c.reportRenderFailure(pv, rerr)
		err = workloop.RetryAfter(c.renderRetries.failed(pv.UID, rerr.name), err)
	} else if errors.As(err, &pending) {
		// Still failing as reported; the status says so already.
		err = workloop.RetryAfter(pending.after, nil)
	}
	setTargets(pv, st.targets(), st.rendered)
	return err
}

// state is what one sync knows about a variant's packages.
type state struct {
	pv       *configv1alpha1.PackageVariant
	upstream *porchv1alpha1.PackageRevision
	upRevs   []*porchv1alpha1.PackageRevision
	dsRevs   []*porchv1alpha1.PackageRevision

	// The variant's own revisions of the downstream package.
	drafts, proposed []*porchv1alpha1.PackageRevision
	published        *porchv1alpha1.PackageRevision // latest
	deletionProposed *porchv1alpha1.PackageRevision // latest
	// Revisions of the package the variant does not own (placeholder excluded).
	foreign []*porchv1alpha1.PackageRevision

	created  *porchv1alpha1.PackageRevision
	rendered map[string]porchv1alpha1.RenderStatus
}

func (st *state) classify() {
	st.drafts, st.proposed, st.published, st.deletionProposed, st.foreign = nil, nil, nil, nil, nil
	for _, pr := range st.dsRevs {
		if helper.IsPlaceholder(pr) {
			continue
		}
		if controllerUID(pr) != st.pv.UID {
			st.foreign = append(st.foreign, pr)
			continue
		}
		switch pr.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft, "":
			st.drafts = append(st.drafts, pr)
		case porchv1alpha1.PackageRevisionLifecycleProposed:
			st.proposed = append(st.proposed, pr)
		case porchv1alpha1.PackageRevisionLifecyclePublished:
			if st.published == nil || pr.Spec.Revision > st.published.Spec.Revision {
				st.published = pr
			}
		case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
			if st.deletionProposed == nil || pr.Spec.Revision > st.deletionProposed.Spec.Revision {
				st.deletionProposed = pr
			}
		}
	}
	sort.Slice(st.drafts, func(i, j int) bool { return st.drafts[i].Name < st.drafts[j].Name })
}

func (st *state) targets() []*porchv1alpha1.PackageRevision {
	out := append([]*porchv1alpha1.PackageRevision{}, st.drafts...)
	out = append(out, st.proposed...)
	if st.created != nil {
		out = append(out, st.created)
	}
	if len(out) == 0 && st.published != nil {
		out = append(out, st.published)
	}
	return out
}

// needsUpgrade reports whether a downstream revision is based on another
// upstream revision than the one selected. A revision whose lock does not
// say (adopted, made by init) is taken as up to date, as the reference does.
func needsUpgrade(pr, upstream *porchv1alpha1.PackageRevision) bool {
	if helper.LockedToDraft(pr) {
		return true
	}
	rev, ok := helper.LockedUpstreamRevision(pr)
	return ok && rev != upstream.Spec.Revision
}

// holdUpgrade applies spec.upgradePolicy: Manual while the variant follows
// the latest upstream revision. It reports UpgradeAvailable and returns the
// upstream revision the downstream stays on; nil when there is nothing to
// hold (an explicit revision or workspace is itself the manual decision).
func (c *Controller) holdUpgrade(st *state, current *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	pv := st.pv
	floating := pv.Spec.Upstream.Revision == 0 && pv.Spec.Upstream.WorkspaceName == ""
	if !manualUpgrades(pv) || !floating || current == nil || !needsUpgrade(current, st.upstream) {
		meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionUpgradeAvailable)
		return nil
	}
	rev, ok := helper.LockedUpstreamRevision(current)
	if !ok {
		meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionUpgradeAvailable)
		return nil
	}
	setCondition(pv, ConditionUpgradeAvailable, metav1.ConditionTrue, ReasonNewRevision,
		fmt.Sprintf("upstream %s revision %d (%s) is available; %s is based on revision %d. spec.upgradePolicy is Manual: set spec.upstream.revision to %d (or the policy to Automatic) to get an upgrade draft",
			describePackage(pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package), st.upstream.Spec.Revision, st.upstream.Name, current.Name, rev, st.upstream.Spec.Revision))
	return helper.PublishedRevision(st.upRevs, rev)
}

// ensureDownstream decides, from the variant's revisions of the downstream
// package, whether to create a clone, edit or upgrade draft, update a
// draft, wait for approval, or do nothing.
func (c *Controller) ensureDownstream(ctx context.Context, st *state) error {
	pv := st.pv
	switch {
	case len(st.drafts) > 0:
		return c.ensureDrafts(ctx, st)
	case len(st.proposed) > 0:
		return c.ensureProposed(ctx, st)
	case st.published != nil:
		return c.ensurePublished(ctx, st, st.published)
	case st.deletionProposed != nil:
		// Someone proposed deleting the downstream. Restoring it, or making
		// a new draft, would overrule that person: wait for their decision.
		meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionUpgradeAvailable)
		setNotReady(pv, ReasonDeletionProposed, fmt.Sprintf(
			"downstream %s is proposed for deletion, so the variant changes nothing; approve the deletion and delete or retarget this variant, or set the revision back to Published",
			st.deletionProposed.Name))
		return nil
	}
	meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionUpgradeAvailable)
	if len(st.foreign) > 0 {
		names := make([]string, 0, len(st.foreign))
		for _, pr := range st.foreign {
			names = append(names, pr.Name)
		}
		hint := "set spec.adoptionPolicy: adoptExisting to take it over, or choose another spec.downstream"
		if adoptionPolicy(pv) == configv1alpha1.AdoptionPolicyAdoptExisting {
			hint = "its revisions are controlled by another owner and cannot be adopted; remove that owner reference or choose another spec.downstream"
		}
		setNotReady(pv, ReasonError, fmt.Sprintf("downstream package %s already exists (%s) and is not managed by this variant; %s",
			describePackage(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package), conditions.List(names, 3), hint))
		return nil
	}
	draft, err := c.createDraft(ctx, pv, st.dsRevs, cloneTask(st.upstream), "clone of "+st.upstream.Name)
	if err != nil {
		return err
	}
	st.created = draft
	if _, err := c.applyTo(ctx, pv, draft, st.upstream, true, st.rendered); err != nil {
		return err
	}
	setReady(pv, readyMessage)
	return nil
}

// ensureDrafts keeps the variant's open drafts current. A draft based on an
// old upstream is replaced only when nobody edited it since the controller
// wrote it (Porch cannot upgrade a draft in place); an edited one is kept.
func (c *Controller) ensureDrafts(ctx context.Context, st *state) error {
	pv := st.pv
	for _, d := range st.drafts {
		base := st.upstream
		if held := c.holdUpgrade(st, d); held != nil {
			base = held
		} else if needsUpgrade(d, st.upstream) {
			replaced, err := c.replaceDraft(ctx, st, d)
			if err != nil || replaced {
				return err
			}
			setNotReady(pv, ReasonDraftEdited, fmt.Sprintf(
				"upstream moved to %s (revision %d) but draft %s was changed since the controller last wrote it, so it is kept as it is: publish it (an upgrade draft follows) or delete it (a new draft is made from the new upstream)",
				st.upstream.Name, st.upstream.Spec.Revision, d.Name))
			return nil
		}
		if c.upToDate(pv, d, base) {
			continue
		}
		if _, err := c.applyTo(ctx, pv, d, base, true, st.rendered); err != nil {
			return err
		}
	}
	setReady(pv, readyMessage)
	return nil
}

// replaceDraft deletes a stale draft the controller made and nobody edited,
// and makes a fresh one from the new upstream: an upgrade of the latest
// published revision, or a clone when nothing was published yet.
//
// "Nobody edited it" is checked live (uneditedLive), and the draft is
// proposed at the resourceVersion checked before it is deleted (see
// porchWriter.retire): Porch ignores delete preconditions, so a plain
// check-then-delete would lose an edit saved in between.
func (c *Controller) replaceDraft(ctx context.Context, st *state, d *porchv1alpha1.PackageRevision) (bool, error) {
	pv := st.pv
	a := pv.Status.Applied
	if a == nil || a.Downstream != d.Name || a.ResourcesDigest == "" {
		return false, nil
	}
	deleted, err := c.porch.retire(ctx, d, st.upstream.Name,
		func() (*porchv1alpha1.PackageRevision, error) { return c.uneditedLive(ctx, pv, d) }, st.proposedToReplace)
	if err != nil {
		return false, fmt.Errorf("replace stale draft %s: %w", d.Name, err)
	}
	if !deleted {
		return false, nil
	}
	c.replaced(ctx, st, d)
	var remaining []*porchv1alpha1.PackageRevision
	for _, pr := range st.drafts {
		if pr.Name != d.Name {
			remaining = append(remaining, pr)
		}
	}
	st.drafts = remaining
	// Workspace numbers keep counting past the deleted draft.
	if st.published != nil {
		return true, c.createUpgrade(ctx, st, st.published)
	}
	if len(st.proposed) > 0 || len(st.foreign) > 0 || len(st.drafts) > 0 {
		// Porch clones only a package that does not exist yet.
		return true, nil
	}
	draft, err := c.createDraft(ctx, pv, st.dsRevs, cloneTask(st.upstream), "clone of "+st.upstream.Name+", replacing "+d.Name)
	if err != nil {
		return true, err
	}
	st.created = draft
	if _, err := c.applyTo(ctx, pv, draft, st.upstream, true, st.rendered); err != nil {
		return true, err
	}
	setReady(pv, readyMessage)
	return true, nil
}

// proposedToReplace keeps the variant's record of a draft it proposed on
// the way to deleting it: a draft recorded by its resourceVersion alone (as
// Porch made it) is recorded at the proposal's, which is the variant's own
// change, so that a delete that fails leaves the draft still recognised as
// unedited.
func (st *state) proposedToReplace(pr *porchv1alpha1.PackageRevision) {
	if a := st.pv.Status.Applied; a != nil && a.Downstream == pr.Name && strings.HasPrefix(a.ResourcesDigest, createdMark) {
		recordCreated(st.pv, pr)
	}
}

// replaced logs and records that a stale draft was deleted to be replaced.
func (c *Controller) replaced(ctx context.Context, st *state, d *porchv1alpha1.PackageRevision) {
	klog.FromContext(ctx).Info("Deleted unedited draft based on an old upstream", "packageRevision", klog.KObj(d), "upstream", st.upstream.Name)
	c.recorder.Eventf(st.pv, corev1.EventTypeNormal, "Replaced",
		"Draft %s was based on an old upstream and unedited; replacing it with a draft from %s", d.Name, st.upstream.Name)
	if a := st.pv.Status.Applied; a != nil && a.Downstream == d.Name {
		st.pv.Status.Applied = nil
	}
}

// finishReplacing completes the replacements an earlier sync began and did
// not end (the delete failed, or the controller stopped between proposing
// the stale draft and deleting it; see porchWriter.retire). A Proposed
// revision of the variant marked with configv1alpha1.ReplacingAnnotation is
// deleted when its files are still the ones the controller wrote; otherwise
// it is given back as the Draft it was, without the mark, so that nothing
// waits for an approval nobody asked for.
func (c *Controller) finishReplacing(ctx context.Context, st *state) error {
	pv := st.pv
	var proposed []*porchv1alpha1.PackageRevision
	for _, p := range st.proposed {
		if _, marked := p.Annotations[configv1alpha1.ReplacingAnnotation]; !marked {
			proposed = append(proposed, p)
			continue
		}
		deleted, err := c.porch.retire(ctx, p, st.upstream.Name,
			func() (*porchv1alpha1.PackageRevision, error) { return c.uneditedLive(ctx, pv, p) }, st.proposedToReplace)
		if err != nil {
			return fmt.Errorf("finish replacing %s: %w", p.Name, err)
		}
		if deleted {
			c.replaced(ctx, st, p)
			continue
		}
		draft, err := c.unmarkReplacing(ctx, pv, p)
		if err != nil {
			return err
		}
		switch {
		case draft == nil:
			proposed = append(proposed, p)
		case draft.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft:
			st.drafts = append(st.drafts, draft)
		default:
			proposed = append(proposed, draft)
		}
	}
	st.proposed = proposed
	// A marked Draft was proposed by the controller and set back to Draft
	// by someone: it is theirs again, and a later proposal of it is theirs
	// too, so the mark goes.
	for i, d := range st.drafts {
		if _, marked := d.Annotations[configv1alpha1.ReplacingAnnotation]; !marked {
			continue
		}
		draft, err := c.unmarkReplacing(ctx, pv, d)
		if err != nil {
			return err
		}
		if draft != nil {
			st.drafts[i] = draft
		}
	}
	sort.Slice(st.drafts, func(i, j int) bool { return st.drafts[i].Name < st.drafts[j].Name })
	return nil
}

// unmarkReplacing takes the replacement mark off a revision the controller
// proposed to delete and did not, and sets it back to Draft if it is still
// Proposed. It returns the revision as stored, or nil when there was
// nothing to do (the revision is gone, or no longer the variant's).
func (c *Controller) unmarkReplacing(ctx context.Context, pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	live, err := c.client.PorchV1alpha1().PackageRevisions(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", pr.Name, err)
	}
	if _, marked := live.Annotations[configv1alpha1.ReplacingAnnotation]; !marked || controllerUID(live) != pv.UID {
		return nil, nil
	}
	upd := live.DeepCopy()
	unmark(upd)
	updated, err := c.porch.update(ctx, upd)
	if err != nil {
		return nil, fmt.Errorf("set %s back to Draft: %w", pr.Name, err)
	}
	klog.FromContext(ctx).Info("Took the replacement mark off a revision that stays", "packageRevision", klog.KObj(pr), "lifecycle", updated.Spec.Lifecycle)
	return updated, nil
}

// unmark takes the replacement mark off a revision and sets it back to
// Draft if the mark made it Proposed.
func unmark(pr *porchv1alpha1.PackageRevision) {
	if _, marked := pr.Annotations[configv1alpha1.ReplacingAnnotation]; !marked {
		return
	}
	delete(pr.Annotations, configv1alpha1.ReplacingAnnotation)
	if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed {
		pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDraft
	}
}

// uneditedLive reads a draft's files and then the draft itself from Porch,
// not from the cache, and returns the draft when it is as the variant last
// recorded it (editedSince) and still, at the same commit, a Draft the
// variant controls (or the Proposed revision an unfinished replacement
// marked); nil otherwise. A person who changed the files or proposed the
// draft before the second read is seen.
func (c *Controller) uneditedLive(ctx context.Context, pv *configv1alpha1.PackageVariant, d *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	prr, err := c.porch.getResources(ctx, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if editedSince(pv.Status.Applied, d.Name, prr.Spec.Resources, prr.ResourceVersion) {
		return nil, nil
	}
	live, err := c.client.PorchV1alpha1().PackageRevisions(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", d.Name, err)
	}
	_, marked := live.Annotations[configv1alpha1.ReplacingAnnotation]
	ours := live.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft ||
		live.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed && marked
	// One commit holds a revision and its files: another resourceVersion
	// means a change since the files were read.
	if !ours || controllerUID(live) != pv.UID || live.ResourceVersion != prr.ResourceVersion {
		return nil, nil
	}
	return live, nil
}

// createUpgrade makes an upgrade draft of a published downstream revision
// to the selected upstream (three-way resource-merge in Porch), then
// applies the variant to it.
func (c *Controller) createUpgrade(ctx context.Context, st *state, local *porchv1alpha1.PackageRevision) error {
	pv := st.pv
	oldRev, ok := helper.LockedUpstreamRevision(local)
	var oldUpstream *porchv1alpha1.PackageRevision
	if ok {
		oldUpstream = helper.PublishedRevision(st.upRevs, oldRev)
	}
	if oldUpstream == nil {
		setNotReady(pv, ReasonError, fmt.Sprintf("cannot upgrade %s to %s: the upstream revision it is based on (%s) is not a published revision of %s any more, so Porch cannot merge; make the change by hand",
			local.Name, st.upstream.Name, lockRef(local), describePackage(pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package)))
		return nil
	}
	draft, err := c.createDraft(ctx, pv, st.dsRevs, upgradeTask(oldUpstream, st.upstream, local),
		fmt.Sprintf("upgrade of %s from upstream revision %d to %d", local.Name, oldUpstream.Spec.Revision, st.upstream.Spec.Revision))
	if err != nil {
		return err
	}
	st.created = draft
	if _, err := c.applyTo(ctx, pv, draft, st.upstream, true, st.rendered); err != nil {
		return err
	}
	setReady(pv, readyMessage)
	return nil
}

func lockRef(pr *porchv1alpha1.PackageRevision) string {
	if l := pr.Status.UpstreamLock; l != nil && l.Git != nil {
		return l.Git.Ref
	}
	return "unknown"
}

// ensurePublished handles a downstream whose latest revision is Published:
// an upgrade draft when the upstream moved, an edit draft when the variant's
// mutations would change the package, nothing otherwise.
func (c *Controller) ensurePublished(ctx context.Context, st *state, pub *porchv1alpha1.PackageRevision) error {
	pv := st.pv
	base := st.upstream
	if held := c.holdUpgrade(st, pub); held != nil {
		base = held
	} else if needsUpgrade(pub, st.upstream) {
		return c.createUpgrade(ctx, st, pub)
	}
	if c.upToDate(pv, pub, base) {
		setReady(pv, readyMessage)
		return nil
	}
	changed, err := c.applyTo(ctx, pv, pub, base, false, st.rendered)
	if err != nil {
		return err
	}
	if changed {
		draft, err := c.createDraft(ctx, pv, st.dsRevs, editTask(pub), "edit of "+pub.Name+" to apply the variant's changes")
		if err != nil {
			return err
		}
		st.created = draft
		if _, err := c.applyTo(ctx, pv, draft, base, true, st.rendered); err != nil {
			return err
		}
	}
	setReady(pv, readyMessage)
	return nil
}

// ensureProposed: Porch refuses changes to a Proposed revision, so the
// variant reports that it waits for the approval instead of failing (the
// reference errors for ever) or making another draft.
func (c *Controller) ensureProposed(ctx context.Context, st *state) error {
	pv := st.pv
	p := st.proposed[0]
	base := st.upstream
	if held := c.holdUpgrade(st, p); held != nil {
		base = held
	} else if needsUpgrade(p, st.upstream) {
		setNotReady(pv, ReasonWaitingForApproval, fmt.Sprintf("%s is Proposed and waiting for approval; the upgrade to %s follows in a new draft once it is published (or set back to Draft)", p.Name, st.upstream.Name))
		return nil
	}
	if !c.upToDate(pv, p, base) {
		changed, err := c.applyTo(ctx, pv, p, base, false, st.rendered)
		if err != nil {
			return err
		}
		if changed {
			setNotReady(pv, ReasonWaitingForApproval, fmt.Sprintf("%s is Proposed and waiting for approval; the variant's changes follow in a new draft once it is published (or set back to Draft)", p.Name))
			return nil
		}
	}
	setReady(pv, fmt.Sprintf("%s; %s is Proposed and waiting for approval", readyMessage, p.Name))
	return nil
}

// packageRevisions lists the revisions of one package from the cache.
func (c *Controller) packageRevisions(namespace, repo, pkg string) []*porchv1alpha1.PackageRevision {
	return prindex.Revisions(c.prIndexer, namespace, repo, pkg)
}
