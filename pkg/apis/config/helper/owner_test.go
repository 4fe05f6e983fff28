package helper

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestControllingVariant: the variant that controls an object is its
// controller reference when that names a PackageVariant of our API; a
// reference that does not control, or names another kind or version, is
// not.
func TestControllingVariant(t *testing.T) {
	yes, no := true, false
	variant := metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha1", Kind: "PackageVariant", Name: "v", UID: "uid-v", Controller: &yes}
	notControlling := variant
	notControlling.Controller = &no
	otherVersion := variant
	otherVersion.APIVersion = "config.porch.kpt.dev/v9"
	set := metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "s", UID: "uid-s", Controller: &yes}
	setOwner := set
	setOwner.Controller = &no
	for name, tc := range map[string]struct {
		refs []metav1.OwnerReference
		want string
	}{
		"controlled by a variant":            {refs: []metav1.OwnerReference{setOwner, variant}, want: "uid-v"},
		"a variant that does not control it": {refs: []metav1.OwnerReference{notControlling}},
		"another version of the kind":        {refs: []metav1.OwnerReference{otherVersion}},
		"controlled by something else":       {refs: []metav1.OwnerReference{set}},
		"no owner":                           {},
	} {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{OwnerReferences: tc.refs}
			got := ControllingVariant(obj)
			if (got == nil) != (tc.want == "") || (got != nil && string(got.UID) != tc.want) {
				t.Errorf("ControllingVariant = %+v, want UID %q", got, tc.want)
			}
		})
	}
}
