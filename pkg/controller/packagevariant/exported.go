package packagevariant

import (
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// ResolveUpstream picks the upstream revision a spec.upstream selects among
// the revisions of its package, exactly as the PackageVariant controller
// does (the PackageVariantSet controller uses it for the CEL variable
// upstream). The error says, for a person, why none can be used.
func ResolveUpstream(up *configv1alpha1.Upstream, revs []*porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	return resolveUpstream(up, revs)
}

// Validate returns every problem of a PackageVariant's spec, as its
// Stalled condition would list them.
func Validate(pv *configv1alpha1.PackageVariant) []string {
	return validate(pv)
}
