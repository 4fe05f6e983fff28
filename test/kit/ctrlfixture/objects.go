package ctrlfixture

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
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

// Blueprint is revision `revision` of package app, the upstream the bench's
// and the soak's fleets start from: a Kptfile described as description and
// a Deployment whose replicas and image tag are the revision, so that every
// revision changes it and an upgrade has something to merge; extra files
// are added as they are.
func Blueprint(revision int, description string, extra map[string]string) map[string]string {
	files := map[string]string{
		"Kptfile": fmt.Sprintf(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
info:
  description: %s
`, description),
		"deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: %d
  template:
    spec:
      containers:
      - name: app
        image: registry.example.com/app:v%d
`, revision, revision),
	}
	maps.Copy(files, extra)
	return files
}

// WriteFiles writes files (relative slash-separated paths to contents)
// below dir, making the directories they need.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// InjectionPoint is a package's ConfigMap name that a variant must fill from
// an in-cluster object (kpt.dev/config-injection: required); until then its
// key is "unset".
func InjectionPoint(name, key string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  annotations:
    kpt.dev/config-injection: required
data:
  %s: unset
`, name, key)
}

// ValidSet is the PackageVariantSet ns/set of blueprints/app with a single
// target, the repository deploy: valid, and what the validation and render
// tests change.
func ValidSet() *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "set"},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets: []configv1alpha2.Target{{
				Repositories: []configv1alpha2.RepositoryTarget{{Name: "deploy"}},
			}},
		},
	}
}
