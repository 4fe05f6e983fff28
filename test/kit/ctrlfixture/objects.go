package ctrlfixture

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ConfigMap is an in-cluster ConfigMap, as injectors read them.
func ConfigMap(namespace, name string, data map[string]string) *unstructured.Unstructured {
	d := map[string]interface{}{}
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"name": name, "namespace": namespace},
		"data":       d,
	}}
}

// MustContain fails the test for each of want that text lacks.
func MustContain(t testing.TB, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}
