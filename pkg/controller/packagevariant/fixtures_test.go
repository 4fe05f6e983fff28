package packagevariant

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// Fixtures of the unit tests here and of the integration tests
// (package packagevariant_test, which reaches them through
// export_test.go): variants of the blueprint blueprints/app into the
// repository deploy, and the ConfigMaps they inject.

const testNS = "team-a"

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func configMap(name string, data map[string]string) *unstructured.Unstructured {
	return ctrlfixture.ConfigMap(testNS, name, data)
}

// newVariant is a variant of blueprints/app into deploy/<downstream>.
func newVariant(name, downstream string) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: downstream},
		},
	}
}

// customised is a variant that uses every mutation: package context,
// a prepended function and config injection.
func customised(name, downstream string) *configv1alpha1.PackageVariant {
	pv := newVariant(name, downstream)
	pv.Spec.Labels = map[string]string{"team": "a"}
	pv.Spec.Annotations = map[string]string{"owner": "platform"}
	pv.Spec.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"cluster": "eu-1"}}
	pv.Spec.Pipeline = &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{
		Name:      "set-ns",
		Image:     "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4",
		ConfigMap: map[string]string{"namespace": "app"},
	}}}
	pv.Spec.Injectors = []configv1alpha1.InjectionSelector{{Kind: ptr.To("ConfigMap"), Name: "eu-west"}}
	return pv
}

var mustContain = ctrlfixture.MustContain
