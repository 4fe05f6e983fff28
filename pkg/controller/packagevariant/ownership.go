package packagevariant

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func ownerReference(pv *configv1alpha1.PackageVariant) metav1.OwnerReference {
	isController := true
	return metav1.OwnerReference{
		APIVersion: configv1alpha1.SchemeGroupVersion.String(),
		Kind:       "PackageVariant",
		Name:       pv.Name,
		UID:        pv.UID,
		Controller: &isController,
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
