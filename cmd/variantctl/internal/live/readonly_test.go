package live

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

// TestReadOnlyConfigRefusesEveryWrite sends every kind of write through
// typed and dynamic clients built on a read-only config and checks that
// none reached the server, while reads did.
func TestReadOnlyConfigRefusesEveryWrite(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
			"metadata": map[string]any{"name": "app", "namespace": "ns"},
		})
	}))
	defer srv.Close()

	var requests Requests
	cfg := ReadOnlyConfig(&rest.Config{Host: srv.URL}, &requests)
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pvs := client.ConfigV1alpha1().PackageVariants("ns")
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "ns"}}}

	writes := map[string]func() error{
		"create":            func() error { _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); return err },
		"update":            func() error { _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); return err },
		"update status":     func() error { _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); return err },
		"delete":            func() error { return pvs.Delete(ctx, "app", metav1.DeleteOptions{}) },
		"delete collection": func() error { return pvs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}) },
		"patch": func() error {
			_, err := pvs.Patch(ctx, "app", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		},
		"dynamic create": func() error {
			_, err := dyn.Resource(gvr).Namespace("ns").Create(ctx, cm, metav1.CreateOptions{})
			return err
		},
		"dynamic apply": func() error {
			_, err := dyn.Resource(gvr).Namespace("ns").Apply(ctx, "x", cm, metav1.ApplyOptions{FieldManager: "t"})
			return err
		},
	}
	for name, write := range writes {
		err := write()
		var refused *WriteRefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s: got %v, want a WriteRefusedError", name, err)
		}
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Errorf("writes reached the server: %v", seen)
	}
	mu.Unlock()
	if requests.Sent() != 0 {
		t.Errorf("Sent() = %d after refused writes only, want 0", requests.Sent())
	}

	if _, err := pvs.Get(ctx, "app", metav1.GetOptions{}); err != nil {
		t.Fatalf("a read through the read-only config failed: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET /apis/config.porch.kpt.dev/v1alpha1/namespaces/ns/packagevariants/app" {
		t.Errorf("server saw %v, want the one GET", seen)
	}
	if requests.Sent() != 1 {
		t.Errorf("Sent() = %d, want 1", requests.Sent())
	}
}
