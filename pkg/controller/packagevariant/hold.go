package packagevariant

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	configv1alpha2listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha2"
)

// A PackageVariantSet with spec.rollout takes each of its variants to a
// new upstream revision when the variant's wave opens, by writing the
// revision into the variant's spec.upstream. A variant the set made before
// it had spec.rollout follows the latest revision (no spec.upstream.revision)
// until its wave opens; so that it does not take a new revision the moment
// one is published, the variant controller holds the upgrade of every
// variant that follows the latest revision while its owning set has
// spec.rollout, as spec.upgradePolicy: Manual does: the downstream stays
// on the revision it carries, UpgradeAvailable says what is held and why.
// Creates are not held: a variant with no downstream yet is cloned from the
// latest revision, as a rollout never holds back creates. Removing
// spec.rollout from the set ends the hold: variants that follow the latest
// revision upgrade to it at once, as without a rollout.

// rolloutSetOf is the name of the PackageVariantSet that controls pv and has
// spec.rollout, "" when there is none (or the controller has no set lister).
func (c *Controller) rolloutSetOf(pv *configv1alpha1.PackageVariant) string {
	if c.setLister == nil {
		return ""
	}
	set, ok := owningSet(c.setLister, pv)
	if !ok || set.Spec.Rollout == nil {
		return ""
	}
	return set.Name
}

// owningSet is the PackageVariantSet the cache shows as pv's controller,
// checked by UID.
func owningSet(sets configv1alpha2listers.PackageVariantSetLister, pv *configv1alpha1.PackageVariant) (*configv1alpha2.PackageVariantSet, bool) {
	ref := metav1.GetControllerOfNoCopy(pv)
	if ref == nil || ref.Kind != "PackageVariantSet" || ref.APIVersion != configv1alpha2.SchemeGroupVersion.String() {
		return nil, false
	}
	set, err := sets.PackageVariantSets(pv.Namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil, false
	}
	return set, true
}

// rolloutHoldMessage is the second half of the UpgradeAvailable message of
// a variant held by its set's rollout.
func rolloutHoldMessage(set string) string {
	return fmt.Sprintf("PackageVariantSet %s rolls upstream changes out in waves (spec.rollout): it sets this variant's spec.upstream.revision when the variant's wave opens (see the set's status.rollout)", set)
}

// handleSetUpdate queues the variants of a set whose spec.rollout came or
// went: their upgrades are held from now on, or no longer.
func (c *Controller) handleSetUpdate(oldObj, newObj interface{}) {
	o, ok1 := oldObj.(*configv1alpha2.PackageVariantSet)
	n, ok2 := newObj.(*configv1alpha2.PackageVariantSet)
	if !ok1 || !ok2 || (o.Spec.Rollout == nil) == (n.Spec.Rollout == nil) {
		return
	}
	pvs, err := c.pvLister.PackageVariants(n.Namespace).List(labels.SelectorFromSet(labels.Set{configv1alpha2.SetLabel: string(n.UID)}))
	if err != nil {
		return
	}
	for _, pv := range pvs {
		c.queue.Add(cache.MetaObjectToName(pv))
	}
}
