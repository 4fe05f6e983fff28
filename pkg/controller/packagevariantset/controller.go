// Package packagevariantset is the PackageVariantSet controller: it fans one
// upstream package out to many downstream packages by generating one
// PackageVariant per target.
package packagevariantset

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/controller/handlers"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/ownwrites"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
	versioned "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	configv1alpha1informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha1"
	configv1alpha2informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha2"
	porchinformers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/porch/v1alpha1"
	configv1alpha1listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha1"
	configv1alpha2listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/metrics"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// ControllerName names the controller in logs, metrics, events and the
// --reconcilers flag.
const ControllerName = "packagevariantsets"

// Index names on the PackageVariantSet informer.
const (
	// ByUpstreamIndex keys a set by "<namespace>/<upstream repo>/<upstream package>".
	ByUpstreamIndex = "byUpstream"
	// ByRepositoryIndex keys a set by "<namespace>/<repository name>" for
	// every repository it lists by name, and by "<namespace>/*" when any
	// Repository may matter to it (a repositorySelector or a repoExpr).
	ByRepositoryIndex = "byRepository"
)

const anyRepository = "*"

// ByObjectKindIndex keys a set by "<namespace>/<group>/<kind>" of each
// objectSelector it has, and of its rollout's health objects.
const ByObjectKindIndex = "byObjectKind"

// BySetIndex, on the PackageVariant informer, keys a variant by
// "<namespace>/<set UID>" from its set label.
const BySetIndex = "bySet"

// DefaultReadinessDelay batches the wake-ups of a set by its variants'
// readiness changes: a fan-out of N variants costs a few syncs of the set,
// not N.
const DefaultReadinessDelay = time.Second

// syncShare bounds the time a set's batched wake-ups keep it busy: they
// come no closer together than syncShare times its last sync took. Every
// sync reads the whole fleet, so a bigger fleet waits longer between them
// (on two busy cores, 10,000 variants: 3 to 8 s; up to about 2,000 the
// readiness delay is longer) and costs little more CPU per variant than a
// small one, as kube-proxy's minimum sync period bounds its full syncs. A
// sync's writes count too: a slow server is synced against less often.
const syncShare = 80

// maxBatchedWait bounds that spacing: however long the last sync took (the
// one that creates a 10,000-variant fleet takes about a second, one behind
// a slow or rate-limited server far longer), a variant's readiness change
// reaches its set's status and rollout within this and one sync. A
// readiness delay set longer wins.
const maxBatchedWait = 10 * time.Second

// Controller is the PackageVariantSet controller.
type Controller struct {
	client versioned.Interface

	pvsLister  configv1alpha2listers.PackageVariantSetLister
	pvsIndexer cache.Indexer
	pvLister   configv1alpha1listers.PackageVariantLister
	pvIndexer  cache.Indexer
	repoLister configv1alpha1listers.RepositoryLister
	prIndexer  cache.Indexer
	// loop runs the syncs: the queue, the workers, the caches to wait for.
	loop *workloop.Loop

	// objects serves the kinds objectSelectors name.
	objects *ondemand.Informers
	// access bounds what each target may select (nil: no bound).
	access *access.Checker
	// celBudget is Options.CELBudget.
	celBudget uint64
	cel       *celtemplate.Cache
	// states are what each set's syncs keep for the next (the renders,
	// rendered.go), and fleets the maps each set's syncs fill again
	// (wanted.go).
	states states
	fleets fleets
	// readinessDelay batches wake-ups by variants' readiness changes.
	readinessDelay time.Duration
	// syncTook holds, by set key, how long its last sync took
	// (time.Duration): the batched wake-ups wait syncShare times that,
	// up to maxBatchedWait (batchedWait).
	syncTook sync.Map
	// expectations are the variants created that the cache does not show
	// yet.
	expectations *expectations.Expectations
	// statusWrites holds, by set UID, the statuses of the set's last
	// status writes (*lastWrites), so that their echoes do not wake the set
	// again.
	statusWrites sync.Map
	// written holds the controller's own status writes of sets that the
	// cache may not show yet.
	written ownwrites.Objects[*configv1alpha2.PackageVariantSet]
	// variantWrites holds the set's own updates and deletes of its
	// variants that the cache may not show yet: every sync reads every
	// variant, and one that planned from the cached copy would write the
	// same change again.
	variantWrites ownwrites.Objects[*configv1alpha1.PackageVariant]

	queue workloop.Queue
	// delayed holds the wake-ups waiting for the readiness delay.
	delayed *workloop.Delayed
	// progressWrites holds the sets whose status write waits for the
	// progress pace (progressWait): work in hand, as the write is the
	// controller's own and not done yet.
	progressWrites *workloop.Delayed
	recorder       record.EventRecorder
	metrics        *metrics.Metrics

	// clock, when set, is the time rollouts decide by (tests set it).
	clock func() time.Time
}

// Options are what callers other than the binary give a Controller at
// construction.
type Options struct {
	// Tracker, when set, follows every sync, the queue and the wake-ups
	// held for the readiness delay (pkg/offline tells from it when the
	// controllers are idle).
	Tracker *workloop.Tracker
	// ReadinessDelay is how long a readiness change of a variant waits
	// before it wakes its set, batched with others; nil means
	// DefaultReadinessDelay (variantctl uses 0).
	ReadinessDelay *time.Duration
	// Access, when set, lets an objectSelector use only the objects its
	// target's ServiceAccount may get.
	Access *access.Checker
	// CELBudget is the CEL cost one sync of a set may spend on all its
	// expressions; 0 means celtemplate.DefaultSyncBudget.
	CELBudget uint64
}

// New wires a Controller to its informers. objects serves the kinds that
// objectSelectors name (nil: such targets report that they cannot be read).
func New(ctx context.Context, client versioned.Interface,
	pvsInformer configv1alpha2informers.PackageVariantSetInformer,
	pvInformer configv1alpha1informers.PackageVariantInformer,
	repoInformer configv1alpha1informers.RepositoryInformer,
	prInformer porchinformers.PackageRevisionInformer,
	objects *ondemand.Informers,
	recorder record.EventRecorder, m *metrics.Metrics, opts Options) (*Controller, error) {
	logger := klog.FromContext(ctx)
	c := &Controller{
		client:         client,
		access:         opts.Access,
		celBudget:      opts.CELBudget,
		pvsLister:      pvsInformer.Lister(),
		pvsIndexer:     pvsInformer.Informer().GetIndexer(),
		pvLister:       pvInformer.Lister(),
		pvIndexer:      pvInformer.Informer().GetIndexer(),
		repoLister:     repoInformer.Lister(),
		prIndexer:      prInformer.Informer().GetIndexer(),
		cel:            celtemplate.NewCache(celtemplate.Options{}),
		readinessDelay: DefaultReadinessDelay,
		expectations:   expectations.New(expectationTimeout),
		recorder:       recorder,
		metrics:        m,
	}
	c.loop = workloop.NewLoop(ControllerName, m, opts.Tracker, c.sync)
	c.queue = c.loop.Queue
	c.delayed = workloop.NewDelayed(c.queue)
	c.progressWrites = workloop.NewDelayed(c.queue)
	if opts.ReadinessDelay != nil {
		c.readinessDelay = *opts.ReadinessDelay
	}
	if opts.Tracker != nil {
		opts.Tracker.Watch(c.delayed.Pending)
		opts.Tracker.Watch(c.progressWrites.Pending)
	}

	if objects == nil {
		objects = ondemand.New(ctx, ondemand.Options{})
	}
	c.objects = objects
	objects.AddHandler(func(gk schema.GroupKind, namespace, _ string) {
		// Batched as readiness changes are: a rollout's health objects
		// change once per variant, and every sync reads the whole fleet.
		for _, key := range handlers.ByIndex(logger, c.pvsIndexer, ByObjectKindIndex, namespace+"/"+gk.Group+"/"+gk.Kind) {
			c.wakeBatched(key, c.readinessDelay)
		}
	})

	if err := addIndexers(pvsInformer.Informer(), pvInformer.Informer(), prInformer.Informer()); err != nil {
		return nil, err
	}
	if err := c.watch(logger, pvsInformer.Informer(), pvInformer.Informer(), repoInformer.Informer(), prInformer.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// addIndexers adds the indexes the handlers and the sync look sets,
// variants and revisions up by.
func addIndexers(sets, variants, revisions cache.SharedIndexInformer) error {
	if err := sets.AddIndexers(cache.Indexers{
		ByUpstreamIndex:   upstreamIndexFunc,
		ByRepositoryIndex: repositoryIndexFunc,
		ByObjectKindIndex: objectKindIndexFunc,
	}); err != nil {
		return fmt.Errorf("add PackageVariantSet indexers: %w", err)
	}
	if err := variants.AddIndexers(cache.Indexers{BySetIndex: setIndexFunc}); err != nil {
		return fmt.Errorf("add PackageVariant indexers: %w", err)
	}
	if err := prindex.Register(revisions); err != nil {
		return fmt.Errorf("add PackageRevision indexers: %w", err)
	}
	return nil
}

// watch adds the event handlers that queue the sets each event concerns.
func (c *Controller) watch(logger klog.Logger, sets, variants, repositories, revisions cache.SharedIndexInformer) error {
	watches := []struct {
		informer cache.SharedIndexInformer
		what     string
		funcs    cache.ResourceEventHandlerFuncs
	}{
		{sets, "PackageVariantSets", cache.ResourceEventHandlerFuncs{
			AddFunc: c.enqueueSet,
			UpdateFunc: func(oldObj, newObj interface{}) {
				if !c.ownStatusWrite(oldObj, newObj) {
					c.enqueueSet(newObj)
				}
			},
			DeleteFunc: c.forgetSet,
		}},
		{variants, "PackageVariants", cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.handleVariant(logger, obj, 0) },
			UpdateFunc: func(oldObj, newObj interface{}) { c.handleVariantUpdate(logger, oldObj, newObj) },
			DeleteFunc: func(obj interface{}) {
				if m := handlers.Meta(obj); m != nil {
					c.variantWrites.Forget(m.GetUID())
				}
				c.handleVariantDeleted(logger, obj)
			},
		}},
		{repositories, "Repositories", handlers.Both(func(obj interface{}) { c.handleRepository(logger, obj) })},
		{revisions, "PackageRevisions", handlers.Both(func(obj interface{}) { c.handlePackageRevision(logger, obj) })},
	}
	for _, h := range watches {
		if err := c.loop.Watch(h.informer, h.what, h.funcs); err != nil {
			return err
		}
	}
	return nil
}

// forgetSet drops what the controller keeps of a deleted set.
func (c *Controller) forgetSet(obj interface{}) {
	m := handlers.Meta(obj)
	if m == nil {
		return
	}
	c.cel.Forget(m.GetUID())
	c.states.forget(m.GetUID())
	c.fleets.forget(m.GetUID())
	c.syncTook.Delete(cache.ObjectName{Namespace: m.GetNamespace(), Name: m.GetName()})
	c.expectations.Forget(m.GetUID())
	c.statusWrites.Delete(m.GetUID())
	c.written.Forget(m.GetUID())
	c.metrics.SetRollout(m.GetNamespace(), m.GetName(), nil)
}

// HasSynced reports whether the informers feeding this controller have
// delivered their initial lists.
func (c *Controller) HasSynced() bool { return c.loop.HasSynced() }

// Run waits for the caches, then syncs on the given number of workers
// until ctx is cancelled; syncs in progress are allowed to finish.
func (c *Controller) Run(ctx context.Context, workers int) error {
	return c.loop.WaitAndRun(ctx, workers)
}
