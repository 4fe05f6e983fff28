package packagevariant

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

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
