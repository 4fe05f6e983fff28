package offline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
)

// TestObjectWriteReturnsOnceTheControllersHeard: a write of an in-cluster
// object returns only after the controllers' handlers were called for it.
// The fake's watch delivers the write apart from the Sim's, which WaitIdle
// follows: a WaitIdle right after the write could find the controllers
// idle before they heard of it (the soak's seed 7 in CI: the rollout was
// judged stuck while the last site's health report was on its way).
func TestObjectWriteReturnsOnceTheControllersHeard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "health-site", "namespace": "ns"},
		"data":     map[string]interface{}{"current": "v1"},
	}}
	objs, err := objectClient([]*unstructured.Unstructured{cm}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	informers := ondemand.New(ctx, ondemand.Options{Dynamic: objs.dyn, Mapper: objs.mapper})
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	// The controllers' handler, then the runner's (as New registers them):
	// what the controllers' handler last read of the object.
	var heard atomic.Value
	informers.AddHandler(func(_ schema.GroupKind, ns, name string) {
		if obj, ok, err := informers.Get(gvk, ns, name); err == nil && ok {
			if data, ok := obj["data"].(map[string]interface{}); ok {
				heard.Store(data["current"])
			}
		}
	})
	informers.AddHandler(objs.heard)
	objs.handlersSynced = informers.HandlersSynced
	if _, err := informers.List(gvk, "ns", labels.Everything()); err != nil {
		t.Fatal(err)
	}
	for i, value := range []string{"v2", "v3", "v4"} {
		obj := cm.DeepCopy()
		obj.Object["data"] = map[string]interface{}{"current": value}
		err := objs.write(ctx, obj, func(res dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return res.Update(ctx, obj, metav1.UpdateOptions{})
		})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		if got := heard.Load(); got != value {
			t.Fatalf("update %d: the write returned before the controllers heard of it: their handler last read %v, want %s", i, got, value)
		}
	}
}
