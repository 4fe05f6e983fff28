package packagevariant

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
	name, waited := c.expectations.Waiting(pv.UID, c.inCache(pv.Namespace))
	if name == "" {
		return nil, nil
	}
	if d := expectations.CheckAfter - waited; d > 0 {
		klog.FromContext(ctx).V(4).Info("Waiting for a created draft to reach the cache", "packageRevision", name)
		return nil, workloop.RecheckAfter(d)
	}
	return &pendingCreate{name: name}, nil
}

// claim makes the writes that must come before the plan (see above) and
// leaves in st the downstream revisions as they are after them.
func (c *Controller) claim(ctx context.Context, st *state, pending *pendingCreate) error {
	if err := c.confirmCreated(ctx, st.pv, pending); err != nil {
		return err
	}
	if err := c.releaseMoved(ctx, st.pv); err != nil {
		return err
	}
	st.dsRevs = c.packageRevisions(st.pv.Namespace, st.pv.Spec.Downstream.Repo, st.pv.Spec.Downstream.Package)
	if err := c.repairLostMetadata(ctx, st); err != nil {
		return err
	}
	if err := c.adopt(ctx, st); err != nil {
		return err
	}
	return c.finishReplacing(ctx, st)
}

// confirmCreated asks Porch about a create the cache cannot tell the fate
// of. A create whose answer was lost and that was made becomes an
// expected draft, waited for like any other; one that was not made, or an
// expected draft deleted before the cache showed it, is nothing to wait
// for.
func (c *Controller) confirmCreated(ctx context.Context, pv *configv1alpha1.PackageVariant, p *pendingCreate) error {
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
		// as the variant's own: it counts as edited.
		c.expectDraft(pv.UID, p.name)
		if p, err = c.expectationsSatisfied(ctx, pv); err != nil {
			return err
		}
	}
	return nil
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
	if a := pv.Status.Applied; a != nil {
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
		if a := pv.Status.Applied; a != nil && a.Downstream == pr.Name && a.ResourcesDigest == createdMark+pr.ResourceVersion {
			// The repair is the variant's own change of its new draft.
			recordCreated(pv, repaired)
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

// finishReplacing completes the replacements an earlier sync began and did
// not end (the delete failed, or the controller stopped between proposing
// the stale draft and deleting it; see porchWriter.retire). A Proposed
// revision of the variant marked with configv1alpha1.ReplacingAnnotation is
// deleted when its files are still the ones the controller wrote; otherwise
// it is given back as the Draft it was, without the mark, so that nothing
// waits for an approval nobody asked for. A marked Draft was proposed by
// the controller and set back to Draft by someone: it is theirs again, and
// a later proposal of it is theirs too, so the mark goes.
func (c *Controller) finishReplacing(ctx context.Context, st *state) error {
	pv := st.pv
	var drafts []int
	for i, p := range st.dsRevs {
		if _, marked := p.Annotations[configv1alpha1.ReplacingAnnotation]; !marked || helper.IsPlaceholder(p) || controllerUID(p) != pv.UID {
			continue
		}
		switch p.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft, "":
			drafts = append(drafts, i)
			continue
		case porchv1alpha1.PackageRevisionLifecycleProposed:
		default:
			continue
		}
		deleted, err := c.porch.retire(ctx, p, st.upstream.Name,
			func() (*porchv1alpha1.PackageRevision, error) { return c.uneditedLive(ctx, pv, p) }, st.proposedToReplace)
		if err != nil {
			return fmt.Errorf("finish replacing %s: %w", p.Name, err)
		}
		if deleted {
			c.replaced(ctx, st, p)
			st.gone = append(st.gone, p.Name)
			continue
		}
		if err := c.unmarkReplacing(ctx, st, i); err != nil {
			return err
		}
	}
	sort.Slice(drafts, func(a, b int) bool { return st.dsRevs[drafts[a]].Name < st.dsRevs[drafts[b]].Name })
	for _, i := range drafts {
		if err := c.unmarkReplacing(ctx, st, i); err != nil {
			return err
		}
	}
	return nil
}

// unmarkReplacing takes the replacement mark off st.dsRevs[i], a revision
// the controller proposed to delete and did not, and sets it back to Draft
// if it is still Proposed; st.dsRevs[i] becomes the revision as stored.
// Nothing is done when the revision is gone, or no longer the variant's.
func (c *Controller) unmarkReplacing(ctx context.Context, st *state, i int) error {
	pr := st.dsRevs[i]
	live, err := c.client.PorchV1alpha1().PackageRevisions(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", pr.Name, err)
	}
	if _, marked := live.Annotations[configv1alpha1.ReplacingAnnotation]; !marked || controllerUID(live) != st.pv.UID {
		return nil
	}
	upd := live.DeepCopy()
	unmark(upd)
	updated, err := c.porch.update(ctx, upd)
	if err != nil {
		return fmt.Errorf("set %s back to Draft: %w", pr.Name, err)
	}
	klog.FromContext(ctx).Info("Took the replacement mark off a revision that stays", "packageRevision", klog.KObj(pr), "lifecycle", updated.Spec.Lifecycle)
	st.dsRevs[i] = updated
	return nil
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
