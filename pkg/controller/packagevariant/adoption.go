package packagevariant

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

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
		if isPlaceholder(pr) || metav1.GetControllerOf(pr) != nil {
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
		adopted, err := c.client.PorchV1alpha1().PackageRevisions(pr.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("adopt %s: %w", pr.Name, err)
		}
		klog.FromContext(ctx).Info("Adopted downstream revision", "packageRevision", klog.KObj(pr))
		c.recorder.Eventf(pv, corev1.EventTypeNormal, "Adopted", "Adopted %s %s (adoptionPolicy adoptExisting)", pr.Spec.Lifecycle, pr.Name)
		st.dsRevs[i] = adopted
	}
	return nil
}

// downstreamWinner decides which of the variants targeting the same
// downstream package manages it: the one that already controls a revision
// of the package, else the oldest (then by name). The others report a
// conflict and write nothing, so two variants never fight over a package.
func (c *Controller) downstreamWinner(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	ds := pv.Spec.Downstream
	objs, err := c.pvIndexer.ByIndex(ByDownstreamIndex, packageIndexKey(pv.Namespace, ds.Repo, ds.Package))
	if err != nil || len(objs) <= 1 {
		return pv
	}
	candidates := map[string]*configv1alpha1.PackageVariant{}
	var oldest *configv1alpha1.PackageVariant
	for _, o := range objs {
		other, ok := o.(*configv1alpha1.PackageVariant)
		if !ok {
			continue
		}
		if other.UID == pv.UID {
			other = pv
		} else if other.DeletionTimestamp != nil {
			// A variant being deleted gives its downstream up.
			continue
		}
		candidates[string(other.UID)] = other
		if oldest == nil || olderThan(other, oldest) {
			oldest = other
		}
	}
	for _, pr := range c.packageRevisions(pv.Namespace, ds.Repo, ds.Package) {
		if owner, ok := candidates[string(controllerUID(pr))]; ok {
			return owner
		}
	}
	return oldest
}

func olderThan(a, b *configv1alpha1.PackageVariant) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
