package ondemand

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

var (
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	serviceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	serviceGVK   = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
)

func configMap(ns, name string, lbls map[string]string, data map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": ns},
		"data":     data,
	}}
	u.SetLabels(lbls)
	return u
}

type fixture struct {
	informers *Informers
	dyn       *dynamicfake.FakeDynamicClient
	watching  chan struct{}
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWithOptions(t, Options{}, objs...)
}

// newFixtureWithOptions is newFixture with the timing options (and clock)
// of opts; the fixture sets the client and the mapper.
func newFixtureWithOptions(t testing.TB, opts Options, objs ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapGVR: "ConfigMapList", serviceGVR: "ServiceList"}, objs...)
	f := &fixture{dyn: dyn, watching: make(chan struct{})}
	var once sync.Once
	dyn.PrependWatchReactor("configmaps", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(configMapGVR, action.GetNamespace())
		once.Do(func() { close(f.watching) })
		return true, w, err
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	mapper.Add(serviceGVK, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	opts.Dynamic, opts.Mapper = dyn, mapper
	f.informers = New(ctx, opts)
	return f
}

// waitWatching waits until the informer watches ConfigMaps: the fake's
// watch starts at "now", so a change made before is never delivered.
func (f *fixture) waitWatching(t testing.TB) {
	t.Helper()
	select {
	case <-f.watching:
	case <-time.After(waitFor):
		t.Fatalf("the informer did not watch ConfigMaps within %s", waitFor)
	}
}

// newBenchFixture is newFixture for a benchmark: its lists are decoded
// from JSON, as from an API server, so the cache shares no memory with the
// fake's own objects.
func newBenchFixture(b *testing.B, objs ...runtime.Object) *fixture {
	b.Helper()
	f := newFixtureWithOptions(b, Options{}, objs...)
	f.dyn.PrependReactor("list", "configmaps", func(action clienttesting.Action) (bool, runtime.Object, error) {
		list, err := f.dyn.Tracker().List(configMapGVR, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		js, err := json.Marshal(list)
		if err != nil {
			return true, nil, err
		}
		out := &unstructured.UnstructuredList{}
		return true, out, out.UnmarshalJSON(js)
	})
	return f
}

func TestGet(t *testing.T) {
	f := newFixture(t, configMap("ns", "eu-west", nil, map[string]interface{}{"region": "eu-west-1"}))
	obj, found, err := f.informers.Get(configMapGVK, "ns", "eu-west")
	if err != nil || !found {
		t.Fatalf("get eu-west: found=%v err=%v", found, err)
	}
	if data := obj["data"].(map[string]interface{}); data["region"] != "eu-west-1" {
		t.Errorf("data %v", data)
	}
	if _, found, err := f.informers.Get(configMapGVK, "ns", "missing"); found || err != nil {
		t.Errorf("missing object: found=%v err=%v, want not found and no error", found, err)
	}
	if _, found, err := f.informers.Get(configMapGVK, "other", "eu-west"); found || err != nil {
		t.Errorf("object of another namespace: found=%v err=%v", found, err)
	}
	lists := 0
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d lists for three reads of one kind, want 1", lists)
	}
}

// TestGetOutsideTheWatchedNamespace: a controller limited to one
// namespace says so when asked for an object of another, instead of
// reporting it missing.
func TestGetOutsideTheWatchedNamespace(t *testing.T) {
	f := newFixtureWithOptions(t, Options{Namespace: "platform"}, configMap("flux-system", "edge-1", nil, nil))
	_, found, err := f.informers.Get(configMapGVK, "flux-system", "edge-1")
	if found || err == nil || !strings.Contains(err.Error(), "ConfigMap flux-system/edge-1 is outside namespace platform, the only one the controller watches (--namespace)") {
		t.Errorf("get flux-system/edge-1 from a controller of namespace platform: found=%v err=%v", found, err)
	}
	if len(f.dyn.Actions()) != 0 {
		t.Errorf("it asked the server: %v", f.dyn.Actions())
	}
}

func TestUnreadableKinds(t *testing.T) {
	f := newFixture(t)
	for name, tc := range map[string]struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		"unknown kind":   {schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Region"}, "not served by the cluster (is its CRD installed?)"},
		"cluster-scoped": {schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "cluster-scoped"},
		"secrets":        {schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "Secret objects are never injected or selected"},
	} {
		t.Run(name, func(t *testing.T) {
			_, found, err := f.informers.Get(tc.gvk, "ns", "x")
			if found || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Get: found=%v err=%v, want an error containing %q", found, err, tc.want)
			}
			var unusable *UnusableKindError
			if !errors.As(err, &unusable) {
				t.Errorf("Get: %T is not an UnusableKindError", err)
			}
			if _, err := f.informers.List(tc.gvk, "ns", labels.Everything()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("List: err=%v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNotConfigured(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	i := New(ctx, Options{})
	if _, found, err := i.Get(configMapGVK, "ns", "x"); found || err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Errorf("Get: found=%v err=%v, want a 'not configured' error", found, err)
	}
	if _, err := i.List(configMapGVK, "ns", labels.Everything()); err == nil {
		t.Error("List without a client succeeded; an error must never look like an empty result")
	}
}

func TestList(t *testing.T) {
	f := newFixture(t,
		configMap("ns", "b", map[string]string{"env": "prod"}, nil),
		configMap("ns", "a", map[string]string{"env": "prod"}, nil),
		configMap("ns", "c", map[string]string{"env": "dev"}, nil),
		configMap("other", "d", map[string]string{"env": "prod"}, nil),
	)
	got, err := f.informers.List(configMapGVK, "ns", labels.SelectorFromSet(labels.Set{"env": "prod"}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range got {
		names = append(names, u.GetName())
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

// TestHandlersSeeEveryKind: handlers registered before and after a kind
// starts both hear about its objects.
func TestHandlersSeeEveryKind(t *testing.T) {
	f := newFixture(t, configMap("ns", "a", nil, nil))
	var mu sync.Mutex
	seen := map[string]int{}
	record := func(who string) Handler {
		return func(gk schema.GroupKind, ns, name string) {
			mu.Lock()
			defer mu.Unlock()
			seen[who+" "+gk.Kind+" "+ns+"/"+name]++
		}
	}
	f.informers.AddHandler(record("early"))
	if _, _, err := f.informers.Get(configMapGVK, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	f.informers.AddHandler(record("late"))
	f.waitWatching(t)
	if _, err := f.dyn.Resource(configMapGVR).Namespace("ns").Create(context.Background(), configMap("ns", "b", nil, nil), metav1CreateOptions()); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), pollEvery, waitFor, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return seen["early ConfigMap ns/b"] == 1 && seen["late ConfigMap ns/b"] == 1 && seen["early ConfigMap ns/a"] == 1, nil
	})
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("handlers saw %v", seen)
	}
}
