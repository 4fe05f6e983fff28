package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

func TestInjectedIndexFunc(t *testing.T) {
	pv := customised("app", "app")
	pv.Namespace = "ns"
	if keys, _ := injectedIndexFunc(pv); len(keys) != 0 {
		t.Errorf("a variant that injected nothing is indexed: %v", keys)
	}
	pv.Status.Applied = &configv1alpha1.AppliedState{Injected: []configv1alpha1.InjectedObject{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "eu-west"},
		{APIVersion: "example.com/v1", Kind: "Region", Name: "eu"},
		{APIVersion: "a/b/c", Kind: "Broken", Name: "x"},
	}}
	keys, err := injectedIndexFunc(pv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ns//ConfigMap/eu-west", "ns/example.com/Region/eu"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if keys, _ := injectedIndexFunc("not a variant"); keys != nil {
		t.Errorf("keys %v for a foreign object", keys)
	}
}
