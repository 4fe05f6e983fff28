package kit

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// ConfigMap is an in-cluster ConfigMap, as injectors read them
// (ctrlfixture.ConfigMap, which the controllers' in-package tests use).
func ConfigMap(namespace, name string, data map[string]string) *unstructured.Unstructured {
	return ctrlfixture.ConfigMap(namespace, name, data)
}

// MustContain fails the test for each of want that text lacks.
func MustContain(t testing.TB, what, text string, want ...string) {
	t.Helper()
	ctrlfixture.MustContain(t, what, text, want...)
}
