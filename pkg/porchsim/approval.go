package porchsim

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// approveLocked serves an update of the approval subresource, the only way
// Porch publishes: Proposed -> Published (the next revision number and the
// latest-revision label), or Published -> DeletionProposed. Only
// spec.lifecycle of the request is used; its resourceVersion must be
// current.
func (s *Sim) approveLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	e, err := s.lookupLocked(packageRevisionKind, ns, in.Name)
	if err != nil {
		return nil, err
	}
	cur := e.obj.(*porchv1alpha1.PackageRevision)
	switch in.ResourceVersion {
	case "":
		return nil, apierrors.NewBadRequest("resourceVersion must be specified for an update")
	case cur.ResourceVersion:
	default:
		return nil, apierrors.NewConflict(porchv1alpha1.Resource(resPackageRevisions), in.Name, errors.New(optimisticLockMsg))
	}
	from, to := cur.Spec.Lifecycle, in.Spec.Lifecycle
	switch {
	case to == porchv1alpha1.PackageRevisionLifecyclePublished && from == porchv1alpha1.PackageRevisionLifecycleProposed:
		s.publishLocked(e)
	case to == porchv1alpha1.PackageRevisionLifecycleDeletionProposed && from == porchv1alpha1.PackageRevisionLifecyclePublished:
		obj := cur.DeepCopy()
		obj.Spec.Lifecycle = to
		obj.Generation++
		s.replaceLocked(resPackageRevisions, e, obj)
	case to == porchv1alpha1.PackageRevisionLifecyclePublished:
		return nil, refuse("cannot approve package revision %q with lifecycle %s; propose it first (lifecycle %s)", cur.Name, from, porchv1alpha1.PackageRevisionLifecycleProposed)
	default:
		return nil, refuse("cannot change approval of package revision %q from %s to %s", cur.Name, from, to)
	}
	return e.obj.DeepCopyObject(), nil
}
