package helper

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// Paused reports whether a person paused the PackageVariant or
// PackageVariantSet obj with configv1alpha1.PausedAnnotation: its
// controller then writes nothing for it but its status.
func Paused(obj metav1.Object) bool {
	return obj.GetAnnotations()[configv1alpha1.PausedAnnotation] == "true"
}

// PausedMessage is the message of the Paused condition of a paused object
// of kind ("PackageVariant" or "PackageVariantSet").
func PausedMessage(kind string, obj metav1.Object) string {
	return fmt.Sprintf("the annotation %s=true holds this %s: the controller writes nothing for it until it is removed (kubectl annotate -n %s %s %s %s-)",
		configv1alpha1.PausedAnnotation, kind, obj.GetNamespace(), kind, obj.GetName(), configv1alpha1.PausedAnnotation)
}
