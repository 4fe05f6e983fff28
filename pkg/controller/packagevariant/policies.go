package packagevariant

import (
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// adoptionPolicy is the effective adoption policy (default adoptNone).
func adoptionPolicy(pv *configv1alpha1.PackageVariant) configv1alpha1.AdoptionPolicy {
	if pv.Spec.AdoptionPolicy == "" {
		return configv1alpha1.AdoptionPolicyAdoptNone
	}
	return pv.Spec.AdoptionPolicy
}

// deletionPolicy is the effective deletion policy (default delete).
func deletionPolicy(pv *configv1alpha1.PackageVariant) configv1alpha1.DeletionPolicy {
	if pv.Spec.DeletionPolicy == "" {
		return configv1alpha1.DeletionPolicyDelete
	}
	return pv.Spec.DeletionPolicy
}
