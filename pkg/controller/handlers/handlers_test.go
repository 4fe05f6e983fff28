package handlers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

func variant(name string, upstream *configv1alpha1.Upstream) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       configv1alpha1.PackageVariantSpec{Upstream: upstream},
	}
}

func TestObjectAndMetaReadTombstones(t *testing.T) {
	pv := variant("pv", nil)
	for name, obj := range map[string]interface{}{
		"object":    pv,
		"tombstone": cache.DeletedFinalStateUnknown{Key: "ns/pv", Obj: pv},
	} {
		if got, ok := Object[*configv1alpha1.PackageVariant](obj); !ok || got != pv {
			t.Errorf("%s: Object = %v, %v; want the variant", name, got, ok)
		}
		if m := Meta(obj); m == nil || m.GetName() != "pv" {
			t.Errorf("%s: Meta = %v, want the variant's metadata", name, m)
		}
	}
	if _, ok := Object[*configv1alpha1.Repository](pv); ok {
		t.Error("Object read a variant as a Repository")
	}
	if m := Meta("not an object"); m != nil {
		t.Errorf("Meta of a string = %v, want nil", m)
	}
}

func TestIndexFuncAndByIndex(t *testing.T) {
	upstreamIndex := IndexFunc(func(pv *configv1alpha1.PackageVariant) []string {
		return UpstreamKeys(pv.Namespace, pv.Spec.Upstream)
	})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"up": upstreamIndex})
	for _, pv := range []*configv1alpha1.PackageVariant{
		variant("a", &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"}),
		variant("b", &configv1alpha1.Upstream{Repo: "blueprints", Package: "db"}),
		variant("no-upstream", nil),
	} {
		if err := indexer.Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	if keys, err := upstreamIndex(&configv1alpha1.Repository{}); err != nil || keys != nil {
		t.Errorf("keys of another type = %v, %v; want none", keys, err)
	}
	logger, _ := ktesting.NewTestContext(t)
	got := ByIndex(logger, indexer, "up", "ns/blueprints/app", "ns/blueprints/web", "ns/blueprints/db")
	want := []cache.ObjectName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys by index (-want +got):\n%s", diff)
	}
	if got := ByIndex(logger, indexer, "no-such-index", "x"); got != nil {
		t.Errorf("keys of a missing index = %v, want none", got)
	}
}

func TestBoth(t *testing.T) {
	var got []string
	h := Both(func(obj interface{}) { got = append(got, obj.(string)) })
	h.OnAdd("added", false)
	h.OnUpdate("old", "new")
	h.OnDelete("deleted")
	if diff := cmp.Diff([]string{"added", "old", "new", "deleted"}, got); diff != "" {
		t.Errorf("objects handled (-want +got):\n%s", diff)
	}
}
