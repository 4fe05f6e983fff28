// Package packagevariant is the PackageVariant controller: it keeps each
// variant's downstream package a customised copy of its upstream package by
// creating and updating Draft PackageRevisions through Porch.
package packagevariant

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/controller/handlers"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/ownwrites"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
	"github.com/porch-variants/variant-controller/pkg/controller/repolock"
	versioned "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	configinformers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha1"
	configv1alpha2informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha2"
	porchinformers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/porch/v1alpha1"
	configlisters "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha1"
	configv1alpha2listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha2"
	porchlisters "github.com/porch-variants/variant-controller/pkg/generated/listers/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/metrics"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// ControllerName names the controller in logs, metrics, events and the
// --reconcilers flag.
const ControllerName = "packagevariants"

// Index names on the PackageVariant informer.
const (
	// ByUpstreamIndex keys a variant by "<namespace>/<upstream repo>/<upstream package>".
	ByUpstreamIndex = "byUpstream"
	// ByDownstreamIndex keys a variant by "<namespace>/<downstream repo>/<downstream package>".
	ByDownstreamIndex = "byDownstream"
)

// Index names on the PackageRevision informer.
const (
	// ByOwnerIndex keys a revision by the UID of every PackageVariant owner
	// reference it carries.
	ByOwnerIndex = "pvByOwner"
)

// Controller is the PackageVariant controller.
type Controller struct {
	client versioned.Interface
	// porch makes every write to Porch, one at a time per repository.
	porch *porchWriter

	pvLister  configlisters.PackageVariantLister
	pvIndexer cache.Indexer
	prLister  porchlisters.PackageRevisionLister
	prIndexer cache.Indexer

	injection *ondemand.Informers
	// access bounds what each variant may inject (nil: no bound).
	access       *access.Checker
	expectations *expectations.Expectations
	// setLister reads the variants' sets (nil: no set is read; hold.go).
	setLister configv1alpha2listers.PackageVariantSetLister
	// noRollout is what the API server said of sets the cache showed
	// without spec.rollout (hold.go).
	noRollout setsWithoutRollout
	// created is the last draft each variant created (lastCreated).
	created sync.Map
	// written holds the controller's own writes of variants that the
	// cache may not show yet.
	written ownwrites.Objects[*configv1alpha1.PackageVariant]
	// unsaved holds what syncs wrote into drafts and could not record in
	// the variant's status.
	unsaved unsavedApplied
	// renderRetries paces the retries of drafts that failed to render.
	renderRetries *renderRetries
	// conflicts remembers, by variant UID, the winner each losing variant
	// last reported, so a Conflict event is sent once per conflict.
	conflicts sync.Map

	// loop runs the syncs: the queue, the workers, the caches to wait for.
	loop *workloop.Loop

	queue    workloop.Queue
	recorder record.EventRecorder
	metrics  *metrics.Metrics
}

// Options are what callers other than the binary give a Controller at
// construction.
type Options struct {
	// Tracker, when set, follows every sync and the queue (pkg/offline
	// tells from it when the controllers are idle).
	Tracker *workloop.Tracker
	// Resync, when set, queues every PackageVariant when its Now is
	// called (the benchmark's full resync).
	Resync *workloop.Resync
	// Access, when set, lets a variant inject only what its ServiceAccount
	// may get.
	Access *access.Checker
	// Sets, when set, tells which variants' sets roll changes out in
	// waves: their upgrades wait for the set (hold.go).
	Sets configv1alpha2informers.PackageVariantSetInformer
}

// New wires a Controller to its informers. injection serves the in-cluster
// objects config injection reads (nil turns config injection off). Event handlers are registered
// here, so events queue up from the moment the informers start, whether or
// not Run has been called (a standby replica keeps a warm queue).
func New(ctx context.Context, client versioned.Interface,
	pvInformer configinformers.PackageVariantInformer,
	prInformer porchinformers.PackageRevisionInformer,
	injection *ondemand.Informers,
	recorder record.EventRecorder, m *metrics.Metrics, opts Options) (*Controller, error) {
	logger := klog.FromContext(ctx)
	c := &Controller{
		client:        client,
		porch:         &porchWriter{client: client.PorchV1alpha1(), locks: repolock.New()},
		pvLister:      pvInformer.Lister(),
		pvIndexer:     pvInformer.Informer().GetIndexer(),
		prLister:      prInformer.Lister(),
		prIndexer:     prInformer.Informer().GetIndexer(),
		access:        opts.Access,
		expectations:  expectations.New(expectationTimeout),
		renderRetries: newRenderRetries(clock.RealClock{}),
		recorder:      recorder,
		metrics:       m,
	}
	c.loop = workloop.NewLoop(ControllerName, m, opts.Tracker, c.sync)
	c.queue = c.loop.Queue
	if opts.Resync != nil {
		opts.Resync.Add(c.enqueueAll)
	}
	if injection == nil {
		// Config injection off: every injection point reports it.
		injection = ondemand.New(ctx, ondemand.Options{})
	}
	injection.AddHandler(func(gk schema.GroupKind, namespace, name string) {
		c.handleInjectedObject(logger, gk, namespace, name)
	})
	c.injection = injection

	if err := pvInformer.Informer().AddIndexers(cache.Indexers{
		ByUpstreamIndex:   upstreamIndexFunc,
		ByDownstreamIndex: downstreamIndexFunc,
		ByInjectedIndex:   injectedIndexFunc,
	}); err != nil {
		return nil, fmt.Errorf("add PackageVariant indexers: %w", err)
	}
	if err := prindex.Register(prInformer.Informer()); err != nil {
		return nil, err
	}
	if err := prInformer.Informer().AddIndexers(cache.Indexers{ByOwnerIndex: packageRevisionOwnerIndexFunc}); err != nil {
		return nil, fmt.Errorf("add PackageRevision indexers: %w", err)
	}

	if err := c.loop.Watch(pvInformer.Informer(), "PackageVariants", c.variantHandlers()); err != nil {
		return nil, err
	}
	if opts.Sets != nil {
		c.setLister = opts.Sets.Lister()
		if err := c.loop.Watch(opts.Sets.Informer(), "PackageVariantSets", cache.ResourceEventHandlerFuncs{
			UpdateFunc: c.handleSetUpdate, DeleteFunc: c.handleSetDelete,
		}); err != nil {
			return nil, err
		}
	}
	if err := c.loop.Watch(prInformer.Informer(), "PackageRevisions",
		handlers.Both(func(obj interface{}) { c.handlePackageRevision(logger, obj) })); err != nil {
		return nil, err
	}
	return c, nil
}

// variantHandlers queue a variant on its own events, and the variants of
// the same downstream (its peers) when a change may matter to them.
func (c *Controller) variantHandlers() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			c.enqueueVariant(obj)
			c.enqueuePeers(obj)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			c.enqueueVariant(newObj)
			if peersMayCare(oldObj, newObj) {
				c.enqueuePeers(oldObj)
				c.enqueuePeers(newObj)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if pv, ok := handlers.Object[*configv1alpha1.PackageVariant](obj); ok {
				c.written.Forget(pv.UID)
			}
			c.enqueueVariant(obj)
			c.enqueuePeers(obj)
		},
	}
}

// HasSynced reports whether the informers feeding this controller have
// delivered their initial lists.
func (c *Controller) HasSynced() bool { return c.loop.HasSynced() }

// Run waits for the caches, then syncs on the given number of workers
// until ctx is cancelled; syncs in progress are allowed to finish.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.loop.WaitAndRun(ctx, workers)
}

func (c *Controller) enqueueVariant(obj interface{}) { c.loop.Enqueue(obj, "PackageVariant") }

// enqueuePeers enqueues the other variants that target the same downstream
// package: when one appears, goes, starts deleting or moves away, the
// conflict between them is decided anew.
func (c *Controller) enqueuePeers(obj interface{}) {
	pv, ok := handlers.Object[*configv1alpha1.PackageVariant](obj)
	if !ok {
		return
	}
	keys, _ := downstreamIndexFunc(pv)
	for _, key := range keys {
		peers, err := c.pvIndexer.ByIndex(ByDownstreamIndex, key)
		if err != nil {
			continue
		}
		for _, o := range peers {
			if peer, ok := o.(*configv1alpha1.PackageVariant); ok && peer.UID != pv.UID {
				c.queue.Add(cache.MetaObjectToName(peer))
			}
		}
	}
}

// peersMayCare reports whether an update can change which variant wins a
// shared downstream: its downstream changed or its deletion started.
func peersMayCare(oldObj, newObj interface{}) bool {
	o, ok1 := oldObj.(*configv1alpha1.PackageVariant)
	n, ok2 := newObj.(*configv1alpha1.PackageVariant)
	if !ok1 || !ok2 {
		return false
	}
	if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
		return true
	}
	ok, _ := downstreamIndexFunc(o)
	nk, _ := downstreamIndexFunc(n)
	return strings.Join(ok, ",") != strings.Join(nk, ",")
}

// handlePackageRevision enqueues only the variants a PackageRevision event
// can concern: the variant controlling it, the variants whose upstream is its
// package, and the variants whose downstream is its package (adoption and
// conflicts). Never every variant of the namespace.
func (c *Controller) handlePackageRevision(logger klog.Logger, obj interface{}) {
	pr, ok := handlers.Object[*porchv1alpha1.PackageRevision](obj)
	if !ok {
		return
	}
	keys := map[cache.ObjectName]struct{}{}
	if ref := confighelper.ControllingVariant(pr); ref != nil {
		c.expectations.Observed(ref.UID, pr.Name)
		if pv, err := c.pvLister.PackageVariants(pr.Namespace).Get(ref.Name); err == nil && pv.UID == ref.UID {
			keys[cache.MetaObjectToName(pv)] = struct{}{}
		}
	}
	pkgKey := helper.PackageKeyOf(pr)
	for _, index := range []string{ByUpstreamIndex, ByDownstreamIndex} {
		for _, key := range handlers.ByIndex(logger, c.pvIndexer, index, pkgKey) {
			keys[key] = struct{}{}
		}
	}
	for key := range keys {
		logger.V(4).Info("PackageRevision event", "packageRevision", klog.KObj(pr), "packageVariant", key.String())
		c.queue.Add(key)
	}
}

var upstreamIndexFunc = handlers.IndexFunc(func(pv *configv1alpha1.PackageVariant) []string {
	return handlers.UpstreamKeys(pv.Namespace, pv.Spec.Upstream)
})

var downstreamIndexFunc = handlers.IndexFunc(func(pv *configv1alpha1.PackageVariant) []string {
	if pv.Spec.Downstream == nil {
		return nil
	}
	return []string{helper.PackageKey(pv.Namespace, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)}
})

// handleInjectedObject enqueues the variants whose downstream package was
// matched against the in-cluster object that changed.
func (c *Controller) handleInjectedObject(logger klog.Logger, gk schema.GroupKind, namespace, name string) {
	for _, key := range handlers.ByIndex(logger, c.pvIndexer, ByInjectedIndex, injectedIndexKey(namespace, gk.Group, gk.Kind, name)) {
		c.queue.Add(key)
	}
}

var packageRevisionOwnerIndexFunc = handlers.IndexFunc(func(pr *porchv1alpha1.PackageRevision) []string {
	var uids []string
	for i := range pr.OwnerReferences {
		if confighelper.IsVariantRef(pr.OwnerReferences[i]) {
			uids = append(uids, string(pr.OwnerReferences[i].UID))
		}
	}
	return uids
})

// enqueueAll queues every PackageVariant in the informer cache, as a full
// resync would.
func (c *Controller) enqueueAll() {
	pvs, err := c.pvLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pv := range pvs {
		c.queue.Add(cache.MetaObjectToName(pv))
	}
}
