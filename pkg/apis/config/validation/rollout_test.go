package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

func TestValidateRollout(t *testing.T) {
	mc := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	cases := map[string]struct {
		rollout *configv1alpha2.Rollout
		want    []string
	}{
		"no rollout": {},
		"a valid rollout": {rollout: &configv1alpha2.Rollout{
			Waves: []configv1alpha2.Wave{
				{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, MaxConcurrent: mc(intstr.FromInt32(1))},
				{Name: "prod", MaxConcurrent: mc(intstr.FromString("25%")), Approval: configv1alpha2.WaveApprovalManual},
			},
			SoakSeconds: ptr.To(int32(600)), MaxFailures: ptr.To(int32(0)), ProgressDeadlineSeconds: ptr.To(int32(86400)),
		}},
		"no waves": {
			rollout: &configv1alpha2.Rollout{},
			want:    []string{"spec.rollout.waves: Required value: a rollout needs at least one wave"},
		},
		"names: missing, not a DNS label, repeated": {
			rollout: &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{}, {Name: "Canary_1"}, {Name: "a"}, {Name: "a"}}},
			want: []string{
				"spec.rollout.waves[0].name: Required value: every wave needs a name",
				`spec.rollout.waves[1].name: Invalid value: "Canary_1": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`spec.rollout.waves[3].name: Duplicate value: "a"`,
			},
		},
		"maxConcurrent: zero, a bad percentage, a word": {
			rollout: &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
				{Name: "a", MaxConcurrent: mc(intstr.FromInt32(0))},
				{Name: "b", MaxConcurrent: mc(intstr.FromString("150%"))},
				{Name: "c", MaxConcurrent: mc(intstr.FromString("half"))},
			}},
			want: []string{
				`spec.rollout.waves[0].maxConcurrent: Invalid value: "0": must be a number of variants (1 or more) or a percentage of the wave such as "25%", not "0"`,
				`spec.rollout.waves[1].maxConcurrent: Invalid value: "150%": a percentage must be a whole number from 1% to 100%, not "150%"`,
				`spec.rollout.waves[2].maxConcurrent: Invalid value: "half": must be a number of variants (1 or more) or a percentage of the wave such as "25%", not "half"`,
			},
		},
		"maxConcurrent: a quoted number, a signed or zero-led percentage (the CRD's rule refuses them too)": {
			rollout: &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
				{Name: "a", MaxConcurrent: mc(intstr.FromString("5"))},
				{Name: "b", MaxConcurrent: mc(intstr.FromString("+5%"))},
				{Name: "c", MaxConcurrent: mc(intstr.FromString("05%"))},
				{Name: "d", MaxConcurrent: mc(intstr.FromString("100%"))},
				{Name: "e", MaxConcurrent: mc(intstr.FromString("1%"))},
			}},
			want: []string{
				`spec.rollout.waves[0].maxConcurrent: Invalid value: "5": a number of variants is written without quotes (maxConcurrent: 5), a percentage with % ("25%"), not "5"`,
				`spec.rollout.waves[1].maxConcurrent: Invalid value: "+5%": a percentage must be a whole number from 1% to 100%, not "+5%"`,
				`spec.rollout.waves[2].maxConcurrent: Invalid value: "05%": a percentage must be a whole number from 1% to 100%, not "05%"`,
			},
		},
		"an unknown approval, a bad selector, negative times": {
			rollout: &configv1alpha2.Rollout{
				Waves: []configv1alpha2.Wave{{Name: "a", Approval: "Sometimes", Selector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}},
					RepositorySelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Far"}}}}},
				SoakSeconds: ptr.To(int32(-1)), MaxFailures: ptr.To(int32(-2)), ProgressDeadlineSeconds: ptr.To(int32(0)), Creates: "Later",
			},
			want: []string{
				`spec.rollout.waves[0].selector is not a valid label selector: "Near" is not a valid label selector operator`,
				`spec.rollout.waves[0].repositorySelector is not a valid label selector: "Far" is not a valid label selector operator`,
				`spec.rollout.waves[0].approval: Unsupported value: "Sometimes": supported values: "Automatic", "Manual"`,
				`spec.rollout.creates: Unsupported value: "Later": supported values: "Immediate", "InWaves"`,
				"spec.rollout.soakSeconds: Invalid value: -1: must be 0 or more",
				"spec.rollout.maxFailures: Invalid value: -2: must be 0 or more",
				"spec.rollout.progressDeadlineSeconds: Invalid value: 0: must be 1 or more (leave it out for no deadline)",
			},
		},
	}
	cases["a health check without a kind, with a bad namespace and expressions that do not compile"] = struct {
		rollout *configv1alpha2.Rollout
		want    []string
	}{
		rollout: &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{Name: "a"}}, Health: &configv1alpha2.RolloutHealth{
			APIVersion: "a/b/c", Namespace: "Flux", NameExpr: "1", Failed: "object.status.failed",
		}},
		want: []string{
			`spec.rollout.health.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c`,
			`spec.rollout.health.namespace: Invalid value: "Flux": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			"spec.rollout.health.kind: Required value: the kind of the objects that say what each variant's cluster runs",
			`spec.rollout.health.nameExpr: Invalid value: "1": must evaluate to a string, got int`,
			"spec.rollout.health.current: Required value: a check with expressions needs current: the one that says the revision runs healthy",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Messages(validateRollout(tc.rollout, field.NewPath("spec", "rollout")))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}
