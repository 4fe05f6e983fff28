package packagevariant

import (
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// Validate returns every problem of a PackageVariant's spec, as its
// Stalled condition would list them.
func Validate(pv *configv1alpha1.PackageVariant) []string {
	return validate(pv)
}
