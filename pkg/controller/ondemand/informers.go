// Package ondemand serves in-cluster objects of any kind from informers that
// are started the first time a kind is asked for: the kinds that config
// injection points and PackageVariantSet objectSelectors name are known only
// at run time. One informer per kind is shared by every controller of the
// process, so checking an object costs no API call after the first list.
//
// A read never waits out a list that has failed: a kind the controller may
// not list fails at once with an AccessError, remembered for a while so the
// API server is not asked at every sync; a kind whose list fails otherwise
// fails at once with the latest error while its informer retries.
package ondemand

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	"github.com/porch-variants/variant-controller/pkg/controller/handlers"
)

// DefaultSyncTimeout bounds how long a read waits for the first list of a
// newly watched kind when Options.SyncTimeout is zero. Only a list that
// neither succeeds nor fails (a slow or hung API server) is waited for that
// long: a failed list ends the wait at once.
const DefaultSyncTimeout = 15 * time.Second

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
	// SyncTimeout bounds the wait for a first list; zero means
	// DefaultSyncTimeout.
	SyncTimeout time.Duration
	// AccessRetryPeriod is how long a kind the controller may not list is
	// remembered as such before the list is tried again; zero means
	// DefaultAccessRetryPeriod.
	AccessRetryPeriod time.Duration
	// Clock times the waits and the refusals; nil means the real clock.
	Clock clock.WithDelayedExecution
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
	opts              Options
	ctx               context.Context
	clock             clock.WithDelayedExecution
	syncTimeout       time.Duration
	accessRetryPeriod time.Duration

	mu        sync.Mutex
	handlers  []Handler
	informers map[schema.GroupVersionKind]*kindInformer
	// refused holds the kinds the API server would not let the controller
	// list, until they are tried again; such a kind is never in informers.
	refused map[schema.GroupVersionKind]*refusal
	// running counts the informers whose goroutines have not returned: a
	// refused informer must really stop.
	running int

	// contents decides what the caches keep whole.
	contents *contents
}

// kindInformer is the informer of one kind and what its first list said.
type kindInformer struct {
	gvk      schema.GroupVersionKind
	resource schema.GroupVersionResource
	inf      cache.SharedIndexInformer
	stop     context.CancelFunc
	// afterRefusal is true when the kind was refused before: its recovery,
	// and a new refusal, are logged differently.
	afterRefusal bool

	// failed is closed when a list fails before the first sync, with err
	// the latest failure; both are guarded by Informers.mu.
	failed chan struct{}
	err    error
	// handled is the registration of the informer's one event handler,
	// which calls every Handler.
	handled cache.ResourceEventHandlerRegistration
}

// fail records a failed first list; i.mu must be held.
func (k *kindInformer) fail(err error) {
	if k.err == nil {
		close(k.failed)
	}
	k.err = err
}

// New returns Informers that run until ctx is done.
func New(ctx context.Context, opts Options) *Informers {
	i := &Informers{
		opts:              opts,
		ctx:               ctx,
		clock:             opts.Clock,
		syncTimeout:       opts.SyncTimeout,
		accessRetryPeriod: opts.AccessRetryPeriod,
		informers:         map[schema.GroupVersionKind]*kindInformer{},
		refused:           map[schema.GroupVersionKind]*refusal{},
		contents:          newContents(),
	}
	if i.clock == nil {
		i.clock = clock.RealClock{}
	}
	if i.syncTimeout <= 0 {
		i.syncTimeout = DefaultSyncTimeout
	}
	if i.accessRetryPeriod <= 0 {
		i.accessRetryPeriod = DefaultAccessRetryPeriod
	}
	return i
}

// HandlersSynced reports whether the informer of a kind runs and its
// Handlers have been called for every object of its first list (events
// after that come in the order the watch sent them).
func (i *Informers) HandlersSynced(gvk schema.GroupVersionKind) bool {
	i.mu.Lock()
	k, ok := i.informers[gvk]
	i.mu.Unlock()
	return ok && k.handled != nil && k.handled.HasSynced()
}

// AddHandler registers h for the events of every kind, including kinds
// started later.
func (i *Informers) AddHandler(h Handler) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
}

func (i *Informers) notify(gk schema.GroupKind, obj interface{}) {
	m := handlers.Meta(obj)
	if m == nil {
		return
	}
	i.mu.Lock()
	handlers := append([]Handler(nil), i.handlers...)
	i.mu.Unlock()
	for _, h := range handlers {
		h(gk, m.GetNamespace(), m.GetName())
	}
}

// informerFor returns the synced informer of a kind, starting it on first
// use. It waits for the first list only until it succeeds or fails: a worker
// is never held for a kind that cannot be listed.
func (i *Informers) informerFor(gvk schema.GroupVersionKind) (*kindInformer, error) {
	k, err := i.start(gvk)
	if err != nil {
		return nil, err
	}
	synced := k.inf.HasSyncedChecker().Done()
	select {
	case <-synced:
		return k, nil
	default:
	}
	timer := i.clock.NewTimer(i.syncTimeout)
	defer timer.Stop()
	select {
	case <-synced:
		return k, nil
	case <-k.failed:
		select {
		case <-synced:
			// A retry of a failed list has succeeded since.
			return k, nil
		default:
		}
		i.mu.Lock()
		defer i.mu.Unlock()
		return nil, k.err
	case <-timer.C():
		return nil, fmt.Errorf("list %s: not done within %s; it goes on in the background", k.resource.GroupResource(), i.syncTimeout)
	case <-i.ctx.Done():
		return nil, fmt.Errorf("list %s: %w", k.resource.GroupResource(), i.ctx.Err())
	}
}

// start returns the informer of a kind, starting it on first use and when
// a remembered refusal has expired.
func (i *Informers) start(gvk schema.GroupVersionKind) (*kindInformer, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if k, ok := i.informers[gvk]; ok {
		return k, nil
	}
	if ref, ok := i.refused[gvk]; ok {
		if i.clock.Now().Before(ref.until) {
			return nil, ref.err
		}
		// Expired: this read tries again before the timer does.
		ref.timer.Stop()
		delete(i.refused, gvk)
		return i.runLocked(gvk, ref.resource, true)
	}
	if why := helper.NeverRead(gvk.GroupKind()); why != "" {
		return nil, unusable("%s", why)
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
	return i.runLocked(gvk, mapping.Resource, false)
}

// runLocked starts the informer of a kind; i.mu must be held.
func (i *Informers) runLocked(gvk schema.GroupVersionKind, resource schema.GroupVersionResource, afterRefusal bool) (*kindInformer, error) {
	inf := dynamicinformer.NewFilteredDynamicInformer(i.opts.Dynamic, resource, i.opts.Namespace,
		i.opts.ResyncPeriod, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
	ctx, cancel := context.WithCancel(i.ctx)
	k := &kindInformer{gvk: gvk, resource: resource, inf: inf, stop: cancel, afterRefusal: afterRefusal, failed: make(chan struct{})}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		i.listFailed(ctx, k, r, err)
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s: %w", gvk, err)
	}
	if err := inf.SetTransform(i.contents.transform(gvk)); err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s: %w", gvk, err)
	}
	gk := gvk.GroupKind()
	handled, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { i.notify(gk, obj) },
		// Resyncs and status-only writes reach the handlers too; the
		// consumers' own digests make such a wake-up cheap.
		UpdateFunc: func(_, newObj interface{}) { i.notify(gk, newObj) },
		DeleteFunc: func(obj interface{}) {
			if m := handlers.Meta(obj); m != nil {
				i.contents.gone(objectKey{gvk, m.GetNamespace(), m.GetName()})
			}
			i.notify(gk, obj)
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s: %w", gvk, err)
	}
	k.handled = handled
	logger := klog.FromContext(i.ctx)
	i.running++
	go func() {
		defer func() {
			i.mu.Lock()
			defer i.mu.Unlock()
			i.running--
		}()
		inf.RunWithContext(ctx)
	}()
	if afterRefusal {
		go func() {
			select {
			case <-inf.HasSyncedChecker().Done():
				logger.Info("Allowed to list a kind named by a variant or a set again", "kind", gvk.String(), "resource", resource.String())
			case <-ctx.Done():
			}
		}()
	} else {
		logger.Info("Watching kind named by a variant or a set", "kind", gvk.String(), "resource", resource.String())
	}
	i.informers[gvk] = k
	return k, nil
}

// Get returns an object as the Object map of an unstructured.Unstructured:
// from the cache when it holds the object whole, otherwise read live once
// per resourceVersion (and kept whole in the cache from its next change
// on; see contents). found is false when it does not exist; err when the
// kind or the object cannot be read.
func (i *Informers) Get(gvk schema.GroupVersionKind, namespace, name string) (map[string]interface{}, bool, error) {
	if i.opts.Namespace != "" && namespace != i.opts.Namespace {
		return nil, false, fmt.Errorf("%s %s/%s is outside namespace %s, the only one the controller watches (--namespace): start it without --namespace, or keep the objects it reads in %s",
			gvk.Kind, namespace, name, i.opts.Namespace, i.opts.Namespace)
	}
	k, err := i.informerFor(gvk)
	if err != nil {
		return nil, false, err
	}
	key := objectKey{gvk, namespace, name}
	i.contents.want(key)
	item, exists, err := k.inf.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, false, fmt.Errorf("read %s %s/%s from cache: %w", gvk.Kind, namespace, name, err)
	}
	if !exists {
		i.contents.cached(key)
		return nil, false, nil
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("unexpected object %T in %s cache", item, gvk))
		return nil, false, nil
	}
	if !isMetadataOnly(u) {
		i.contents.cached(key)
		return u.Object, true, nil
	}
	if live, ok := i.contents.liveRead(key, u.GetResourceVersion()); ok {
		return live.Object, true, nil
	}
	readCtx, cancel := context.WithTimeout(i.ctx, i.syncTimeout)
	defer cancel()
	live, err := i.opts.Dynamic.Resource(k.resource).Namespace(namespace).Get(readCtx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Deleted since; the cache follows.
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read %s %s/%s: %w", gvk.Kind, namespace, name, err)
	}
	i.contents.keepLive(key, live)
	return live.Object, true, nil
}

// List returns the objects of a kind in a namespace that match a label
// selector, from the cache, sorted by name. An error means the kind cannot
// be read: it is never an empty result.
func (i *Informers) List(gvk schema.GroupVersionKind, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	k, err := i.informerFor(gvk)
	if err != nil {
		return nil, err
	}
	items, err := k.inf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
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
