package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

func TestEffectivePolicies(t *testing.T) {
	type policies struct {
		Adoption configv1alpha1.AdoptionPolicy
		Deletion configv1alpha1.DeletionPolicy
		Manual   bool
	}
	cases := map[string]struct {
		reason string
		spec   configv1alpha1.PackageVariantSpec
		want   policies
	}{
		"Defaults": {
			reason: "empty policies are adoptNone, delete and Automatic",
			want:   policies{Adoption: configv1alpha1.AdoptionPolicyAdoptNone, Deletion: configv1alpha1.DeletionPolicyDelete},
		},
		"Explicit": {
			reason: "set policies are used as given",
			spec: configv1alpha1.PackageVariantSpec{
				AdoptionPolicy: configv1alpha1.AdoptionPolicyAdoptExisting,
				DeletionPolicy: configv1alpha1.DeletionPolicyOrphan,
				UpgradePolicy:  configv1alpha1.UpgradePolicyManual,
			},
			want: policies{Adoption: configv1alpha1.AdoptionPolicyAdoptExisting, Deletion: configv1alpha1.DeletionPolicyOrphan, Manual: true},
		},
		"ExplicitAutomatic": {
			reason: "Automatic is not manual",
			spec:   configv1alpha1.PackageVariantSpec{UpgradePolicy: configv1alpha1.UpgradePolicyAutomatic},
			want:   policies{Adoption: configv1alpha1.AdoptionPolicyAdoptNone, Deletion: configv1alpha1.DeletionPolicyDelete},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := &configv1alpha1.PackageVariant{Spec: tc.spec}
			got := policies{Adoption: adoptionPolicy(pv), Deletion: deletionPolicy(pv), Manual: manualUpgrades(pv)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: effective policies (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
