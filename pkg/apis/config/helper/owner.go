package helper

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// IsVariantRef reports whether an owner reference names a PackageVariant.
func IsVariantRef(ref metav1.OwnerReference) bool {
	return ref.Kind == "PackageVariant" && ref.APIVersion == configv1alpha1.SchemeGroupVersion.String()
}

// ControllingVariant is the reference to the PackageVariant that controls
// obj (a PackageRevision): its controller reference, when that names a
// PackageVariant; nil otherwise. The controllers, variantctl and the soak
// all ask it this way.
func ControllingVariant(obj metav1.Object) *metav1.OwnerReference {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil && IsVariantRef(*ref) {
		return ref
	}
	return nil
}
