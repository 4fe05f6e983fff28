// Package ondemand serves in-cluster objects of any kind from informers that
// are started the first time a kind is asked for: the kinds that config
// injection points and PackageVariantSet objectSelectors name are known only
// at run time. One informer per kind is shared by every controller of the
// process, so checking an object costs no API call after the first list.
package ondemand

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SyncTimeout bounds how long a read waits for the first list of a newly
// watched kind. A kind the controller may not list (RBAC) never syncs; the
// caller then reports the problem instead of blocking a worker for ever.
const SyncTimeout = 15 * time.Second

// Options connect Informers to the cluster.
type Options struct {
	// Dynamic reads any kind. Nil disables reading in-cluster objects:
	// every read then fails with an error saying so.
	Dynamic dynamic.Interface
	// Mapper maps a kind to its resource.
	Mapper meta.RESTMapper
	// Namespace limits the watches to one namespace; empty watches all.
	Namespace string
	// ResyncPeriod of the informers.
	ResyncPeriod time.Duration
}

// UnusableKindError means a kind cannot be read at all: the cluster does
// not serve it, it is cluster-scoped, or reading in-cluster objects is off.
// Retrying does not help until the cluster or the spec changes.
type UnusableKindError struct{ msg string }

func (e *UnusableKindError) Error() string { return e.msg }

func unusable(format string, args ...any) error {
	return &UnusableKindError{msg: fmt.Sprintf(format, args...)}
}

// Handler is told about every add, update and delete of an object of any
// kind that is being watched.
type Handler func(gk schema.GroupKind, namespace, name string)

// Informers starts one informer per kind on first use. It is safe for
// concurrent use; informers stop when the context given to New is done.
type Informers struct {
	opts Options
	ctx  context.Context

	mu        sync.Mutex
	handlers  []Handler
	informers map[schema.GroupVersionKind]cache.SharedIndexInformer
}

// New returns Informers that run until ctx is done.
func New(ctx context.Context, opts Options) *Informers {
	return &Informers{opts: opts, ctx: ctx, informers: map[schema.GroupVersionKind]cache.SharedIndexInformer{}}
}

// AddHandler registers h for the events of every kind, including kinds
// started later.
func (i *Informers) AddHandler(h Handler) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
}

func (i *Informers) notify(gk schema.GroupKind, obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	i.mu.Lock()
	handlers := append([]Handler(nil), i.handlers...)
	i.mu.Unlock()
	for _, h := range handlers {
		h(gk, m.GetNamespace(), m.GetName())
	}
}

// informerFor returns the synced informer of a kind, starting it on first use.
func (i *Informers) informerFor(gvk schema.GroupVersionKind) (cache.SharedIndexInformer, error) {
	inf, err := i.start(gvk)
	if err != nil {
		return nil, err
	}
	if !inf.HasSynced() {
		ctx, cancel := context.WithTimeout(i.ctx, SyncTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil, fmt.Errorf("could not list %s objects within %s; check that the controller may get, list and watch them (RBAC)", gvk.Kind, SyncTimeout)
		}
	}
	return inf, nil
}

func (i *Informers) start(gvk schema.GroupVersionKind) (cache.SharedIndexInformer, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if inf, ok := i.informers[gvk]; ok {
		return inf, nil
	}
	if i.opts.Dynamic == nil || i.opts.Mapper == nil {
		return nil, unusable("reading in-cluster objects is not configured in this controller")
	}
	mapping, err := i.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if resettable, ok := i.opts.Mapper.(meta.ResettableRESTMapper); ok {
			// A CRD installed after start: look again once.
			resettable.Reset()
			mapping, err = i.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return nil, unusable("kind %s is not served by the cluster (is its CRD installed?): %v", gvk, err)
		}
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, unusable("kind %s is cluster-scoped; only namespaced objects, in the namespace of the PackageVariant or PackageVariantSet, can be used", gvk)
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(i.opts.Dynamic, mapping.Resource, i.opts.Namespace,
		i.opts.ResyncPeriod, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	gk := gvk.GroupKind()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { i.notify(gk, obj) },
		// Resyncs and status-only writes reach the handlers too; the
		// consumers' own digests make such a wake-up cheap.
		UpdateFunc: func(_, newObj interface{}) { i.notify(gk, newObj) },
		DeleteFunc: func(obj interface{}) { i.notify(gk, obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gvk, err)
	}
	go inf.Run(i.ctx.Done())
	i.informers[gvk] = inf
	klog.FromContext(i.ctx).Info("Watching kind named by a variant or a set", "kind", gvk.String(), "resource", mapping.Resource.String())
	return inf, nil
}

// Get returns an object from the cache as the Object map of an
// unstructured.Unstructured. found is false when it does not exist; err
// when the kind cannot be read.
func (i *Informers) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]interface{}, bool, error) {
	inf, err := i.informerFor(gvk)
	if err != nil {
		return nil, false, err
	}
	item, exists, err := inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, false, fmt.Errorf("read %s %s/%s from cache: %w", gvk.Kind, namespace, name, err)
	}
	if !exists {
		return nil, false, nil
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("unexpected object %T in %s cache", item, gvk))
		return nil, false, nil
	}
	return u.Object, true, nil
}

// List returns the objects of a kind in a namespace that match a label
// selector, from the cache, sorted by name. An error means the kind cannot
// be read: it is never an empty result.
func (i *Informers) List(gvk schema.GroupVersionKind, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	inf, err := i.informerFor(gvk)
	if err != nil {
		return nil, err
	}
	items, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("list %s in %s from cache: %w", gvk.Kind, namespace, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].GetName() < out[b].GetName() })
	return out, nil
}
