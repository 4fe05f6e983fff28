package ondemand

import (
	"context"
	"runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// cachedObject is what the informer cache of ConfigMaps holds for name.
func cachedObject(t *testing.T, f *fixture, name string) *unstructured.Unstructured {
	t.Helper()
	k, err := f.informers.informerFor(configMapGVK)
	if err != nil {
		t.Fatal(err)
	}
	item, exists, err := k.inf.GetIndexer().GetByKey("ns/" + name)
	if err != nil || !exists {
		t.Fatalf("%s not in the cache: %v", name, err)
	}
	return item.(*unstructured.Unstructured)
}

func gets(f *fixture) int {
	n := 0
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() == "get" {
			n++
		}
	}
	return n
}

// TestCacheKeepsMetadataOnlyUntilInjected: the cache of an injected kind
// holds every object as metadata only (no data, no annotation that
// serialises an object), but those a read asked for whole; such an object
// is read live once per resourceVersion, and kept whole from its next
// change on.
func TestCacheKeepsMetadataOnlyUntilInjected(t *testing.T) {
	injected := configMap("ns", "injected", map[string]string{"site": "a"}, map[string]interface{}{"region": "eu-west-1"})
	other := configMap("ns", "other", map[string]string{"site": "b"}, map[string]interface{}{"big": strings.Repeat("x", 4096)})
	other.SetAnnotations(map[string]string{"note": "kept", "kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap"}`})
	f := newFixture(t, injected, other)

	list, err := f.informers.List(configMapGVK, "ns", labels.Everything())
	if err != nil || len(list) != 2 {
		t.Fatalf("List: %v, %v", list, err)
	}
	for _, u := range list {
		if _, ok := u.Object["data"]; ok {
			t.Errorf("%s: the cache holds the data of an object nothing injects", u.GetName())
		}
	}
	if got := list[1].GetAnnotations(); got["note"] != "kept" || len(got) != 1 {
		t.Errorf("annotations of the cached object %v, want note only", got)
	}

	obj, found, err := f.informers.Get(configMapGVK, "ns", "injected")
	if err != nil || !found || obj["data"].(map[string]interface{})["region"] != "eu-west-1" {
		t.Fatalf("Get: %v %v %v, want the whole object", obj, found, err)
	}
	if _, _, err := f.informers.Get(configMapGVK, "ns", "injected"); err != nil {
		t.Fatal(err)
	}
	if n := gets(f); n != 1 {
		t.Errorf("%d live reads for two Gets of an unchanged object, want 1", n)
	}

	changed := injected.DeepCopy()
	changed.Object["data"] = map[string]interface{}{"region": "eu-west-2"}
	f.waitWatching(t)
	if _, err := f.dyn.Resource(configMapGVR).Namespace("ns").Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the cache to hold the injected object whole", func() bool { return !isMetadataOnly(cachedObject(t, f, "injected")) })
	obj, _, _ = f.informers.Get(configMapGVK, "ns", "injected")
	if region := obj["data"].(map[string]interface{})["region"]; region != "eu-west-2" {
		t.Errorf("after the change Get returns region %v", region)
	}
	if n := gets(f); n != 1 {
		t.Errorf("%d live reads, want none once the cache holds the object whole", n)
	}
	if !isMetadataOnly(cachedObject(t, f, "other")) {
		t.Error("an object nothing injects is held whole")
	}
}

// BenchmarkCacheOfInjectedKind is the memory the cache of one injected
// kind holds for 50,000 ConfigMaps of 2 KiB of data each, five of them
// injected (cache-MiB; the fake API server's own copy is not counted).
func BenchmarkCacheOfInjectedKind(b *testing.B) {
	const n = 50000
	objs := make([]k8sruntime.Object, 0, n)
	for i := range n {
		cm := configMap("ns", "cm-"+strings.Repeat("0", 5-len(itoa(i)))+itoa(i), map[string]string{"app": "x", "site": itoa(i)},
			map[string]interface{}{"config": strings.Repeat("v", 2048)})
		objs = append(objs, cm)
	}
	for b.Loop() {
		f := newBenchFixture(b, objs...)
		before := heapInUse()
		if _, err := f.informers.List(configMapGVK, "ns", labels.Everything()); err != nil {
			b.Fatal(err)
		}
		for i := range 5 {
			if _, _, err := f.informers.Get(configMapGVK, "ns", "cm-0000"+itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(heapInUse()-before)/(1024*1024), "cache-MiB")
		runtime.KeepAlive(f)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
