package validation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
)

// crdValidator validates objects as the API server does with the CRD of
// deploy/crd: the OpenAPI schema, list types and the CEL rules
// (x-kubernetes-validations).
type crdValidator struct {
	schema     schemavalidation.SchemaCreateValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

func loadCRD(t *testing.T, file, version string) *crdValidator {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "deploy", "crd", file))
	if err != nil {
		t.Fatal(err)
	}
	var v1crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1crd, &crd, nil); err != nil {
		t.Fatal(err)
	}
	// The API server records the stored version when it first serves one.
	crd.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
	// What the API server checks before it serves the CRD at all: a
	// structural schema, rules that compile and stay within the cost limit.
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &crd); len(errs) > 0 {
		t.Fatalf("the API server would refuse %s: %v", file, errs.ToAggregate())
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		// The internal form keeps a schema all versions share at the top.
		props := crd.Spec.Validation
		if v.Schema != nil {
			props = v.Schema
		}
		s, _, err := schemavalidation.NewSchemaValidator(props.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		structural, err := structuralschema.NewStructural(props.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		return &crdValidator{schema: s, structural: structural, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}
	}
	t.Fatalf("%s has no version %s", file, version)
	return nil
}

// validate returns the field paths the API server refuses in obj, sorted.
func (v *crdValidator) validate(t *testing.T, obj runtime.Object) []string {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	errs := schemavalidation.ValidateCustomResource(nil, u, v.schema)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, u)...)
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	return fieldPaths(errs)
}

func fieldPaths(errs field.ErrorList) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range errs {
		if !seen[e.Field] {
			seen[e.Field] = true
			out = append(out, e.Field)
		}
	}
	sort.Strings(out)
	return out
}

// TestCRDRefusesWhatValidationRefusesInRollouts holds the CRD's rules on
// spec.rollout against the controller's validation: every rollout problem
// a rule can express is refused by the API server at the same field, and
// a good rollout passes both.
func TestCRDRefusesWhatValidationRefusesInRollouts(t *testing.T) {
	crd := loadCRD(t, "config.porch.kpt.dev_packagevariantsets.yaml", "v1alpha2")
	mc := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	cases := map[string]struct {
		rollout *configv1alpha2.Rollout
		want    []string
	}{
		"a good rollout": {
			rollout: &configv1alpha2.Rollout{
				Waves: []configv1alpha2.Wave{
					{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, MaxConcurrent: mc(intstr.FromInt32(1))},
					{Name: "early", MaxConcurrent: mc(intstr.FromString("100%"))},
					{Name: "rest", MaxConcurrent: mc(intstr.FromString("5%")), Approval: configv1alpha2.WaveApprovalManual},
				},
				SoakSeconds: ptr.To[int32](0), MaxFailures: ptr.To[int32](0), ProgressDeadlineSeconds: ptr.To[int32](1),
			},
		},
		"no waves": {
			rollout: &configv1alpha2.Rollout{},
			want:    []string{"spec.rollout.waves"},
		},
		"maxConcurrent: a word": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", MaxConcurrent: mc(intstr.FromString("abc"))}),
			want:    []string{"spec.rollout.waves[0].maxConcurrent"},
		},
		"maxConcurrent: zero": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", MaxConcurrent: mc(intstr.FromInt32(0))}),
			want:    []string{"spec.rollout.waves[0].maxConcurrent"},
		},
		"maxConcurrent: a negative number": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", MaxConcurrent: mc(intstr.FromInt32(-3))}),
			want:    []string{"spec.rollout.waves[0].maxConcurrent"},
		},
		"maxConcurrent: over 100%": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", MaxConcurrent: mc(intstr.FromString("101%"))}),
			want:    []string{"spec.rollout.waves[0].maxConcurrent"},
		},
		"maxConcurrent: 0%": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", MaxConcurrent: mc(intstr.FromString("0%"))}),
			want:    []string{"spec.rollout.waves[0].maxConcurrent"},
		},
		"maxConcurrent: a quoted number": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", MaxConcurrent: mc(intstr.FromString("5"))}),
			want:    []string{"spec.rollout.waves[0].maxConcurrent"},
		},
		"approval: unknown": {
			rollout: oneWave(configv1alpha2.Wave{Name: "a", Approval: "Sometimes"}),
			want:    []string{"spec.rollout.waves[0].approval"},
		},
		"a wave without a name": {
			rollout: oneWave(configv1alpha2.Wave{}),
			want:    []string{"spec.rollout.waves[0].name"},
		},
		"a wave name that is not a DNS label": {
			rollout: oneWave(configv1alpha2.Wave{Name: "Canary_1"}),
			want:    []string{"spec.rollout.waves[0].name"},
		},
		"two waves of one name": {
			rollout: &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{Name: "a"}, {Name: "b"}, {Name: "a"}}},
			want:    []string{"spec.rollout.waves[2]"},
		},
		"more waves than the most": {
			rollout: manyWaves(validation.MaxWaves + 1),
			want:    []string{"spec.rollout.waves"},
		},
		"negative soak and failures, a zero deadline": {
			rollout: &configv1alpha2.Rollout{
				Waves:       []configv1alpha2.Wave{{Name: "a"}},
				SoakSeconds: ptr.To[int32](-1), MaxFailures: ptr.To[int32](-1), ProgressDeadlineSeconds: ptr.To[int32](0),
			},
			want: []string{"spec.rollout.maxFailures", "spec.rollout.progressDeadlineSeconds", "spec.rollout.soakSeconds"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pvs := &configv1alpha2.PackageVariantSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "default"},
				Spec:       configv1alpha2.PackageVariantSetSpec{Rollout: tc.rollout},
			}
			if diff := cmp.Diff(tc.want, crd.validate(t, pvs)); diff != "" {
				t.Errorf("fields the API server refuses (-want +got):\n%s", diff)
			}
			// The controller's validation refuses the same fields (its
			// duplicate names at the name, the list type's at the item).
			var fromValidation []string
			for _, e := range validation.ValidatePackageVariantSet(pvs, func(*field.Path, string, bool) error { return nil }) {
				if strings.HasPrefix(e.Field, "spec.rollout") {
					fromValidation = append(fromValidation, strings.TrimSuffix(e.Field, ".name"))
				}
			}
			var want []string
			for _, f := range tc.want {
				want = append(want, strings.TrimSuffix(f, ".name"))
			}
			sort.Strings(fromValidation)
			if diff := cmp.Diff(want, fromValidation); diff != "" {
				t.Errorf("fields validation refuses (-want +got):\n%s", diff)
			}
		})
	}
}

func oneWave(w configv1alpha2.Wave) *configv1alpha2.Rollout {
	return &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{w}}
}

func manyWaves(n int) *configv1alpha2.Rollout {
	r := &configv1alpha2.Rollout{}
	for i := range n {
		r.Waves = append(r.Waves, configv1alpha2.Wave{Name: fmt.Sprintf("w%d", i)})
	}
	return r
}
