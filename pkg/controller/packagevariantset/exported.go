package packagevariantset

import (
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
)

// Validate returns every problem of a PackageVariantSet's spec, CEL
// expressions compiled, as its Stalled condition would list them.
func Validate(pvs *configv1alpha2.PackageVariantSet) []string {
	cache := celtemplate.NewCache(celtemplate.Options{})
	set := celtemplate.SetKey{UID: pvs.UID, Generation: pvs.Generation}
	return validate(pvs, func(field, expr string, withRepository bool) error {
		return cache.Check(set, field, expr, withRepository)
	})
}
