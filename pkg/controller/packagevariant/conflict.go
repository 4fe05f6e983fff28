package packagevariant

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
)

// downstreamWinner decides which of the variants targeting the same
// downstream package manages it: the one that already controls a revision
// of the package, else the oldest (then by name). The others report a
// conflict and write nothing, so two variants never fight over a package.
func (c *Controller) downstreamWinner(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	ds := pv.Spec.Downstream
	objs, err := c.pvIndexer.ByIndex(ByDownstreamIndex, helper.PackageKey(pv.Namespace, ds.Repo, ds.Package))
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

// resolveConflict returns the variant that manages pv's downstream
// instead of pv, or nil when pv does. A Warning event is recorded when the
// conflict starts: neither the status (which survives a restart) nor this
// process (whose status write may not be in the cache yet) has recorded
// it.
func (c *Controller) resolveConflict(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	winner := c.downstreamWinner(pv)
	if winner == nil || winner.UID == pv.UID {
		c.conflicts.Delete(pv.UID)
		return nil
	}
	cond := meta.FindStatusCondition(pv.Status.Conditions, ConditionConflict)
	if prev, seen := c.conflicts.Swap(pv.UID, winner.UID); (!seen || prev != winner.UID) && (cond == nil || cond.Status != metav1.ConditionTrue) {
		c.recorder.Eventf(pv, corev1.EventTypeWarning, "Conflict", "%s", conflictMessage(pv, winner))
	}
	return winner
}
