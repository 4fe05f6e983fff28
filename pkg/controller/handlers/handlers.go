// Package handlers holds what the controllers' informer event handlers and
// index functions do alike: read an object, or the last state of a deleted
// one out of its tombstone; key objects of one type in an index; and turn
// index lookups into queue keys.
package handlers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
)

// Object is obj as a T: the informer's object itself or, when the informer
// missed its deletion, the last state its tombstone holds.
func Object[T any](obj interface{}) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(T)
	return o, ok
}

// Meta is the metadata of an informer's object, or of the last state of a
// deleted one; nil when it has none.
func Meta(obj interface{}) metav1.Object {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

// IndexFunc is an index function over the objects of type T: keys gives
// their index values; any other object has none.
func IndexFunc[T any](keys func(T) []string) cache.IndexFunc {
	return func(obj interface{}) ([]string, error) {
		o, ok := obj.(T)
		if !ok {
			return nil, nil
		}
		return keys(o), nil
	}
}

// UpstreamKeys is the index value of an upstream package,
// "<namespace>/<repo>/<package>" as helper.PackageKey writes it; none
// without an upstream.
func UpstreamKeys(namespace string, upstream *configv1alpha1.Upstream) []string {
	if upstream == nil {
		return nil
	}
	return []string{helper.PackageKey(namespace, upstream.Repo, upstream.Package)}
}

// ByIndex is the queue keys of the objects the indexer holds under each of
// values in index, in index order (a key may repeat across values). A
// failed lookup is logged and skipped: the other values still count.
func ByIndex(logger klog.Logger, indexer cache.Indexer, index string, values ...string) []cache.ObjectName {
	var keys []cache.ObjectName
	for _, v := range values {
		objs, err := indexer.ByIndex(index, v)
		if err != nil {
			logger.Error(err, "Looking up objects by index", "index", index)
			continue
		}
		for _, o := range objs {
			if m, err := meta.Accessor(o); err == nil {
				keys = append(keys, cache.MetaObjectToName(m))
			}
		}
	}
	return keys
}

// Both is the event handler that calls handle for the object of every
// event, and for both the old and the new object of an update.
func Both(handle func(obj interface{})) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: handle,
		UpdateFunc: func(oldObj, newObj interface{}) {
			handle(oldObj)
			handle(newObj)
		},
		DeleteFunc: handle,
	}
}
