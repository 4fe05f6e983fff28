package packagevariant

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// ByInjectedIndex keys a variant by "<namespace>/<group>/<kind>/<name>" for
// every in-cluster object its downstream package was last matched against
// (status.applied.injected), so an event on such an object reaches exactly
// the variants that use it.
const ByInjectedIndex = "byInjected"

// injectionSyncTimeout bounds how long a sync waits for the first list of a
// newly watched kind. A kind the controller may not list (RBAC) never
// syncs; the injection point then reports the problem instead of blocking a
// worker for ever.
const injectionSyncTimeout = 15 * time.Second

// InjectionOptions connect the controller to the in-cluster objects used by
// config injection.
type InjectionOptions struct {
	// Dynamic reads any kind. Nil disables config injection: every
	// injection point then reports that no object could be read.
	Dynamic dynamic.Interface
	// Mapper maps an injection point's kind to its resource.
	Mapper meta.RESTMapper
	// Namespace limits the watches to one namespace; empty watches all.
	Namespace string
	// ResyncPeriod of the on-demand informers.
	ResyncPeriod time.Duration
}

// injectionWatcher serves in-cluster objects from informers started on
// demand, one per kind that some injection point uses. The first sync of a
// variant that injects a kind starts its informer; later reads come from
// the cache, so checking whether a variant is up to date costs no API call.
type injectionWatcher struct {
	opts     InjectionOptions
	ctx      context.Context
	onChange func(gk schema.GroupKind, namespace, name string)

	mu        sync.Mutex
	informers map[schema.GroupVersionKind]cache.SharedIndexInformer
}

func newInjectionWatcher(ctx context.Context, opts InjectionOptions, onChange func(schema.GroupKind, string, string)) *injectionWatcher {
	return &injectionWatcher{opts: opts, ctx: ctx, onChange: onChange, informers: map[schema.GroupVersionKind]cache.SharedIndexInformer{}}
}

// informerFor returns the informer of a kind, starting it on first use.
func (w *injectionWatcher) informerFor(gvk schema.GroupVersionKind) (cache.SharedIndexInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inf, ok := w.informers[gvk]; ok {
		return inf, nil
	}
	if w.opts.Dynamic == nil || w.opts.Mapper == nil {
		return nil, fmt.Errorf("config injection is not configured in this controller")
	}
	mapping, err := w.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		if resettable, ok := w.opts.Mapper.(meta.ResettableRESTMapper); ok {
			// A CRD installed after start: look again once.
			resettable.Reset()
			mapping, err = w.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return nil, fmt.Errorf("kind %s is not served by the cluster (is its CRD installed?): %w", gvk, err)
		}
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("kind %s is cluster-scoped; only namespaced objects in the variant's namespace can be injected", gvk)
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(w.opts.Dynamic, mapping.Resource, w.opts.Namespace,
		w.opts.ResyncPeriod, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	gk := gvk.GroupKind()
	notify := func(obj interface{}) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			w.onChange(gk, m.GetNamespace(), m.GetName())
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(oldObj, newObj interface{}) {
			// Resyncs and status-only writes do not change what is injected;
			// the variant's inputs digest tells, so a spurious sync is cheap.
			notify(newObj)
		},
		DeleteFunc: notify,
	}); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gvk, err)
	}
	go inf.Run(w.ctx.Done())
	w.informers[gvk] = inf
	klog.FromContext(w.ctx).Info("Watching kind used by config injection", "kind", gvk.String(), "resource", mapping.Resource.String())
	return inf, nil
}

// get returns an in-cluster object from the cache. found is false when it
// does not exist; err when the kind cannot be read.
func (w *injectionWatcher) get(gvk schema.GroupVersionKind, namespace, name string) (map[string]interface{}, bool, error) {
	inf, err := w.informerFor(gvk)
	if err != nil {
		return nil, false, err
	}
	if !inf.HasSynced() {
		ctx, cancel := context.WithTimeout(w.ctx, injectionSyncTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil, false, fmt.Errorf("could not list %s objects within %s; check that the controller may get, list and watch them (RBAC)", gvk.Kind, injectionSyncTimeout)
		}
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

func injectedIndexKey(namespace, group, kind, name string) string {
	return namespace + "/" + group + "/" + kind + "/" + name
}

func injectedIndexFunc(obj interface{}) ([]string, error) {
	pv, ok := obj.(*configv1alpha1.PackageVariant)
	if !ok || pv.Status.Applied == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(pv.Status.Applied.Injected))
	for _, ref := range pv.Status.Applied.Injected {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		keys = append(keys, injectedIndexKey(pv.Namespace, gv.Group, ref.Kind, ref.Name))
	}
	return keys, nil
}
