package packagevariant

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2/ktesting"

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

func TestInjectionWatcherGet(t *testing.T) {
	c := injectionController(t, configMap("eu-west", map[string]string{"region": "eu-west-1"}))
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	obj, found, err := c.injection.get(cm, testNS, "eu-west")
	if err != nil || !found {
		t.Fatalf("get eu-west: found=%v err=%v", found, err)
	}
	if data := obj["data"].(map[string]interface{}); data["region"] != "eu-west-1" {
		t.Errorf("data %v", data)
	}
	if _, found, err := c.injection.get(cm, testNS, "missing"); found || err != nil {
		t.Errorf("missing object: found=%v err=%v, want not found and no error", found, err)
	}
	if _, found, err := c.injection.get(cm, "other-namespace", "eu-west"); found || err != nil {
		t.Errorf("object of another namespace: found=%v err=%v", found, err)
	}

	for name, tc := range map[string]struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		"unknown kind":   {schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Region"}, "not served by the cluster (is its CRD installed?)"},
		"cluster-scoped": {schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "cluster-scoped"},
	} {
		t.Run(name, func(t *testing.T) {
			_, found, err := c.injection.get(tc.gvk, testNS, "x")
			if found || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("found=%v err=%v, want an error containing %q", found, err, tc.want)
			}
		})
	}
}

func TestInjectionNotConfigured(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newInjectionWatcher(ctx, InjectionOptions{}, nil)
	_, found, err := w.get(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "ns", "x")
	if found || err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Errorf("found=%v err=%v, want a 'not configured' error", found, err)
	}
}
