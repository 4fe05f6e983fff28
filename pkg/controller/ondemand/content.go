package ondemand

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
)

// metadataOnlyKey marks an object the cache holds without its content. It
// cannot be a field of a Kubernetes object, and the cache's objects are
// never written anywhere.
const metadataOnlyKey = "\x00metadata-only"

// objectKey names one object of one kind.
type objectKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// contents bounds what the caches of injected kinds hold: every object of
// a watched kind is kept as metadata only (what an objectSelector and the
// event handlers need), except the objects a read has asked for whole
// (Get: injection copies their data or spec). Those are kept whole from
// their next change on, and read live, once per resourceVersion, until
// then. So memory grows with the objects injected, not with the cluster.
type contents struct {
	mu sync.Mutex
	// wanted are the objects some Get asked for.
	wanted map[objectKey]bool
	// live are the wanted objects read live because the cache held only
	// their metadata, valid while the cache shows the same resourceVersion.
	live map[objectKey]*unstructured.Unstructured
}

func newContents() *contents {
	return &contents{wanted: map[objectKey]bool{}, live: map[objectKey]*unstructured.Unstructured{}}
}

// transform is the transform of kind gvk's informer: what no Get asked for
// keeps its metadata only.
func (c *contents) transform(gvk schema.GroupVersionKind) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		c.mu.Lock()
		wanted := c.wanted[objectKey{gvk, u.GetNamespace(), u.GetName()}]
		c.mu.Unlock()
		if wanted {
			return u, nil
		}
		return metadataOnly(u), nil
	}
}

// metadataOnly is what the cache keeps of an object no read asked for
// whole: its identity, labels and annotations (but those serialising an
// object, helper.SerialisesObject, often the largest part of it).
func metadataOnly(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]interface{}{metadataOnlyKey: true}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetNamespace(u.GetNamespace())
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetGeneration(u.GetGeneration())
	out.SetLabels(u.GetLabels())
	out.SetAnnotations(helper.VisibleAnnotations(u.GetAnnotations()))
	out.SetDeletionTimestamp(u.GetDeletionTimestamp())
	return out
}

func isMetadataOnly(u *unstructured.Unstructured) bool {
	_, ok := u.Object[metadataOnlyKey]
	return ok
}

// want records that key is to be kept whole from now on.
func (c *contents) want(key objectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wanted[key] = true
}

// liveRead returns the object read live for key if it is still the
// version the cache shows.
func (c *contents) liveRead(key objectKey, resourceVersion string) (*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.live[key]
	return u, ok && u.GetResourceVersion() == resourceVersion
}

func (c *contents) keepLive(key objectKey, u *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live[key] = u
}

// cached says the cache holds key whole (or not at all): a live read is no
// longer needed.
func (c *contents) cached(key objectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, key)
}

// gone forgets a deleted object.
func (c *contents) gone(key objectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.live, key)
	delete(c.wanted, key)
}
