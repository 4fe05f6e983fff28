package packagevariant

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// The claim step, as the ReplicaSet controller's claimPods: before the
// plan, the variant makes the revisions of its downstream package what
// they must be to be planned on, and it is the only step before the plan
// that writes. It learns the fate of a create whose answer was lost,
// releases the revisions an earlier spec.downstream left behind, gives
// its own revisions back the metadata Porch lost, adopts the revisions
// nobody controls (adoptExisting), and finishes the replacements an
// earlier sync left half-way. What it writes replaces the cached copy in
// st.dsRevs, so that the plan sees it before the cache does.

// pendingCreate is a draft the variant created whose fate the cache cannot
// tell: the answer to its create was lost (unconfirmed), or the cache has
// not shown it for expectations.CheckAfter.
type pendingCreate struct {
	name        string
	unconfirmed bool
}

// expectationsSatisfied is the expectations check, in memory and first, as
// ReplicaSet's SatisfiedExpectations: nil when no draft the variant
// created is on its way to the cache; workloop.RecheckAfter while one is
// and CheckAfter has not passed; otherwise the create whose fate the claim
// step asks Porch about. A stale cache never causes a second draft.
func (c *Controller) expectationsSatisfied(ctx context.Context, pv *configv1alpha1.PackageVariant) (*pendingCreate, error) {
	if name, ok := c.expectations.Unconfirmed(pv.UID); ok {
		return &pendingCreate{name: name, unconfirmed: true}, nil
	}
	name, waited := c.expectations.Waiting(pv.UID, func(name string) bool {
		_, err := c.prLister.PackageRevisions(pv.Namespace).Get(name)
		return err == nil
	})
	if name == "" {
		return nil, nil
	}
	if d := expectations.CheckAfter - waited; d > 0 {
		klog.FromContext(ctx).V(4).Info("Waiting for a created draft to reach the cache", "packageRevision", name)
		return nil, workloop.RecheckAfter(d)
	}
	return &pendingCreate{name: name}, nil
}

// claim makes the writes that must come before the plan (see above). It
// returns what the sync knows of the variant's packages: the downstream
// revisions as they are after those writes, not yet classified, and the
// record of the controller's writes (st.applied), also when it fails.
func (c *Controller) claim(ctx context.Context, pv *configv1alpha1.PackageVariant, upstream *porchv1alpha1.PackageRevision,
	upRevs []*porchv1alpha1.PackageRevision, pending *pendingCreate) (*state, error) {
	st := &state{pv: pv, upstream: upstream, upRevs: upRevs, rendered: map[string]porchv1alpha1.RenderStatus{}, applied: pv.Status.Applied}
	if err := c.confirmCreated(ctx, st, pending); err != nil {
		return st, err
	}
	if err := c.releaseMoved(ctx, pv); err != nil {
		return st, err
	}
	st.dsRevs = c.packageRevisions(pv.Namespace, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
	if err := c.repairLostMetadata(ctx, st); err != nil {
		return st, err
	}
	if err := c.adopt(ctx, st); err != nil {
		return st, err
	}
	return st, c.finishReplacing(ctx, st)
}

// confirmCreated asks Porch about a create the cache cannot tell the fate
// of. A create whose answer was lost and that was made becomes an
// expected draft, waited for like any other; one that was not made, or an
// expected draft deleted before the cache showed it, is nothing to wait
// for.
func (c *Controller) confirmCreated(ctx context.Context, st *state, p *pendingCreate) error {
	pv := st.pv
	for p != nil {
		_, err := c.client.PorchV1alpha1().PackageRevisions(pv.Namespace).Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			// Not made, or deleted before the cache showed it.
			c.expectations.Observed(pv.UID, p.name)
			return nil
		case err != nil && p.unconfirmed:
			return fmt.Errorf("check whether draft %s was created: %w", p.name, err)
		case err != nil:
			return fmt.Errorf("check whether draft %s still exists: %w", p.name, err)
		case !p.unconfirmed:
			return workloop.RecheckAfter(expectations.CheckAfter)
		}
		// The create was made. What Porch made is not known (a person
		// may have edited the draft since), so the draft is not recorded
		// as the variant's own. A record that names it is of an earlier
		// draft of the same name (Porch names drafts by workspace, and a
		// deleted draft's name comes back): the draft is unverified.
		st.recordUnverified(p.name)
		c.expectDraft(pv.UID, p.name)
		if p, err = c.expectationsSatisfied(ctx, pv); err != nil {
			return err
		}
	}
	return nil
}

// expectationTimeout is how long a variant waits for a draft it created to
// appear in the informer cache before it trusts the cache again.
const expectationTimeout = 2 * time.Minute

// expectDraft records that variant uid created the draft name: while the
// cache does not show it the variant creates nothing else (with a lagging
// cache the reference controller makes a second packagevariant-N draft for
// the same change), and the name is remembered as the variant's last
// draft, seen or not.
func (c *Controller) expectDraft(uid types.UID, name string) {
	c.expectations.Forget(uid) // one draft at a time: the latest
	c.expectations.Expect(uid, name)
	c.created.Store(uid, name)
}

// expectUnconfirmed records that variant uid tried to create the draft
// name and does not know whether it was created: Porch is asked before the
// variant creates anything else.
func (c *Controller) expectUnconfirmed(uid types.UID, name string) {
	c.expectations.Forget(uid)
	c.expectations.ExpectUnconfirmed(uid, name)
}

// lastCreated is the name of the last draft variant uid created ("" if
// none since the process started): Porch can hand a new draft back without
// its metadata, and then only this (or the variant's status) tells that the
// draft is the variant's own.
func (c *Controller) lastCreated(uid types.UID) string {
	name, _ := c.created.Load(uid)
	s, _ := name.(string)
	return s
}

// forgetDrafts drops what the controller remembers of a variant that is
// gone.
func (c *Controller) forgetDrafts(uid types.UID) {
	c.expectations.Forget(uid)
	c.created.Delete(uid)
}

// releaseMoved applies the deletion policy to the revisions the variant
// owns in another package than its downstream: left over from an earlier
// spec.downstream.
func (c *Controller) releaseMoved(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	for _, pr := range c.ownedRevisions(pv) {
		if pr.Spec.RepositoryName != pv.Spec.Downstream.Repo || pr.Spec.PackageName != pv.Spec.Downstream.Package {
			if err := c.release(ctx, pv, pr, "no longer the variant's downstream"); err != nil {
				return err
			}
		}
	}
	return nil
}

// release applies the deletion policy to one revision the variant owns:
//   - delete: Drafts and Proposed revisions are deleted; a Published one is
//     moved to DeletionProposed (Porch does not delete published packages
//     directly) and released, so that a person approves the deletion;
//   - orphan: only the variant's owner reference is removed.
//
// pr may come from a cache that lags. Porch ignores delete preconditions,
// so before deleting, the revision is read live: a revision that has become
// Published (or DeletionProposed) meanwhile, or that the variant no longer
// owns, is treated as it is now, never deleted on stale information.
func (c *Controller) release(ctx context.Context, pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision, why string) error {
	logger := klog.FromContext(ctx)
	if deletionPolicy(pv) == configv1alpha1.DeletionPolicyDelete && deletable(pr) {
		live, err := c.client.PorchV1alpha1().PackageRevisions(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", pr.Name, err)
		}
		if !hasOwner(live, pv.UID) {
			return nil
		}
		pr = live
	}
	if deletionPolicy(pv) == configv1alpha1.DeletionPolicyDelete {
		switch {
		case deletable(pr):
			if err := c.porch.delete(ctx, pr); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %s: %w", pr.Name, err)
			}
			logger.Info("Deleted downstream revision", "packageRevision", klog.KObj(pr), "lifecycle", pr.Spec.Lifecycle, "why", why)
			c.recorder.Eventf(pv, corev1.EventTypeNormal, "Deleted", "Deleted %s %s: %s", pr.Spec.Lifecycle, pr.Name, why)
			return nil
		case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished:
			upd := pr.DeepCopy()
			upd.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDeletionProposed
			upd.OwnerReferences = withoutOwner(upd.OwnerReferences, pv.UID)
			if _, err := c.porch.update(ctx, upd); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("propose deletion of %s: %w", pr.Name, err)
			}
			logger.Info("Proposed deletion of published downstream revision", "packageRevision", klog.KObj(pr), "why", why)
			c.recorder.Eventf(pv, corev1.EventTypeNormal, "DeletionProposed",
				"Proposed deletion of published %s (%s); approve the deletion in Porch to remove it", pr.Name, why)
			return nil
		}
	}
	// orphan, or a DeletionProposed revision: keep it, let go of it. A
	// draft the variant proposed only to replace it goes back to Draft.
	upd := pr.DeepCopy()
	upd.OwnerReferences = withoutOwner(upd.OwnerReferences, pv.UID)
	unmark(upd)
	if _, err := c.porch.update(ctx, upd); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("orphan %s: %w", pr.Name, err)
	}
	logger.Info("Orphaned downstream revision", "packageRevision", klog.KObj(pr), "why", why)
	c.recorder.Eventf(pv, corev1.EventTypeNormal, "Orphaned", "Released %s %s: %s", pr.Spec.Lifecycle, pr.Name, why)
	return nil
}

// deletable reports whether the delete policy deletes a revision outright:
// it is not published yet.
func deletable(pr *porchv1alpha1.PackageRevision) bool {
	switch pr.Spec.Lifecycle {
	case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed, "":
		return true
	}
	return false
}

// ownedRevisions are the revisions carrying an owner reference to the
// variant (by UID), from the cache.
func (c *Controller) ownedRevisions(pv *configv1alpha1.PackageVariant) []*porchv1alpha1.PackageRevision {
	objs, err := c.prIndexer.ByIndex(ByOwnerIndex, string(pv.UID))
	if err != nil {
		return nil
	}
	var out []*porchv1alpha1.PackageRevision
	for _, o := range objs {
		if pr, ok := o.(*porchv1alpha1.PackageRevision); ok && pr.Namespace == pv.Namespace {
			out = append(out, pr)
		}
	}
	return out
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

// repairLostMetadata gives the variant's own revisions back the metadata
// Porch lost. When writes into one repository overlap, Porch can hand back a
// new draft without its labels, annotations and owner references; the
// variant would then take its own draft for a stranger's. A revision is
// recognised as the variant's own when it has no controller, lacks the
// push-on-render-failure annotation every draft the variant creates
// carries (so both were lost together, rather than a person removing the
// owner reference), and its name is one the variant created or lists in
// its status. It gets the owner reference, labels and annotations the
// variant gives a new draft; nothing it has is removed.
func (c *Controller) repairLostMetadata(ctx context.Context, st *state) error {
	pv := st.pv
	own := map[string]bool{c.lastCreated(pv.UID): true}
	for _, t := range pv.Status.DownstreamTargets {
		own[t.Name] = true
	}
	if a := st.applied; a != nil {
		own[a.Downstream] = true
	}
	for i, pr := range st.dsRevs {
		if !own[pr.Name] || helper.IsPlaceholder(pr) || metav1.GetControllerOf(pr) != nil {
			continue
		}
		if _, ok := pr.Annotations[porchv1alpha1.PushOnRenderFailureAnnotation]; ok {
			continue
		}
		upd := pr.DeepCopy()
		upd.OwnerReferences = append(withoutOwner(upd.OwnerReferences, pv.UID), ownerReference(pv))
		upd.Labels = mergeMissing(upd.Labels, pv.Spec.Labels)
		upd.Annotations = mergeMissing(upd.Annotations, draftAnnotations(pv))
		repaired, err := c.porch.update(ctx, upd)
		if err != nil {
			return fmt.Errorf("restore the metadata of %s: %w", pr.Name, err)
		}
		klog.FromContext(ctx).Info("Restored lost metadata of own revision", "packageRevision", klog.KObj(pr))
		c.recorder.Eventf(pv, corev1.EventTypeWarning, "MetadataRestored",
			"%s came back from Porch without its owner reference, labels and annotations; restored them", pr.Name)
		if a := st.applied; a != nil && a.Downstream == pr.Name && a.ResourcesDigest == createdMark+pr.ResourceVersion {
			// The repair is the variant's own change of its new draft.
			st.recordCreated(repaired)
		}
		st.dsRevs[i] = repaired
	}
	return nil
}

// mergeMissing adds the entries of add that m lacks; existing values win.
func mergeMissing(m, add map[string]string) map[string]string {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	for k, v := range add {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return m
}

// draftAnnotations are the annotations of a draft the variant creates: the
// variant's own, and Porch's push-on-render-failure (see createDraft).
func draftAnnotations(pv *configv1alpha1.PackageVariant) map[string]string {
	out := copyMap(pv.Spec.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[porchv1alpha1.PushOnRenderFailureAnnotation] = "true"
	return out
}

func copyMap(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	return maps.Clone(in)
}

// adopt takes over the revisions of the downstream package that nobody
// controls, when spec.adoptionPolicy is adoptExisting. A revision with
// another controller owner is never adopted: a second controller reference
// would make two owners fight over it.
func (c *Controller) adopt(ctx context.Context, st *state) error {
	pv := st.pv
	if adoptionPolicy(pv) != configv1alpha1.AdoptionPolicyAdoptExisting {
		return nil
	}
	for i, pr := range st.dsRevs {
		if helper.IsPlaceholder(pr) || metav1.GetControllerOf(pr) != nil {
			continue
		}
		upd := pr.DeepCopy()
		upd.OwnerReferences = append(withoutOwner(upd.OwnerReferences, pv.UID), ownerReference(pv))
		if len(pv.Spec.Labels) > 0 && upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range pv.Spec.Labels {
			upd.Labels[k] = v
		}
		if len(pv.Spec.Annotations) > 0 && upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		for k, v := range pv.Spec.Annotations {
			upd.Annotations[k] = v
		}
		adopted, err := c.porch.update(ctx, upd)
		if err != nil {
			return fmt.Errorf("adopt %s: %w", pr.Name, err)
		}
		klog.FromContext(ctx).Info("Adopted downstream revision", "packageRevision", klog.KObj(pr))
		c.recorder.Eventf(pv, corev1.EventTypeNormal, "Adopted", "Adopted %s %s (adoptionPolicy adoptExisting)", pr.Spec.Lifecycle, pr.Name)
		st.dsRevs[i] = adopted
	}
	return nil
}

func ownerReference(pv *configv1alpha1.PackageVariant) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: configv1alpha1.SchemeGroupVersion.String(),
		Kind:       "PackageVariant",
		Name:       pv.Name,
		UID:        pv.UID,
		Controller: ptr.To(true),
	}
}

// controllerUID returns the UID of the controller owner of a revision, or "".
func controllerUID(pr *porchv1alpha1.PackageRevision) types.UID {
	if ref := metav1.GetControllerOf(pr); ref != nil {
		return ref.UID
	}
	return ""
}

func hasOwner(pr *porchv1alpha1.PackageRevision, uid types.UID) bool {
	for _, ref := range pr.OwnerReferences {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func withoutOwner(refs []metav1.OwnerReference, uid types.UID) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range refs {
		if ref.UID != uid {
			out = append(out, ref)
		}
	}
	return out
}

// adoptionPolicy is the effective adoption policy (default adoptNone).
func adoptionPolicy(pv *configv1alpha1.PackageVariant) configv1alpha1.AdoptionPolicy {
	if pv.Spec.AdoptionPolicy == "" {
		return configv1alpha1.AdoptionPolicyAdoptNone
	}
	return pv.Spec.AdoptionPolicy
}

// deletionPolicy is the effective deletion policy (default delete).
func deletionPolicy(pv *configv1alpha1.PackageVariant) configv1alpha1.DeletionPolicy {
	if pv.Spec.DeletionPolicy == "" {
		return configv1alpha1.DeletionPolicyDelete
	}
	return pv.Spec.DeletionPolicy
}
