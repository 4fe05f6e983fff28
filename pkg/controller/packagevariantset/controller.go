// Package packagevariantset is the PackageVariantSet controller: it fans one
// upstream package out to many downstream packages by generating one
// PackageVariant per target.
package packagevariantset

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
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
// small one, as kube-proxy's minimum sync period bounds its full syncs.
const syncShare = 80

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
	// states are what each set's syncs keep for the next (state.go), and
	// fleets the maps each set's syncs fill again.
	states states
	fleets fleets
	// readinessDelay batches wake-ups by variants' readiness changes.
	readinessDelay time.Duration
	// syncTook holds, by set key, how long its last sync took
	// (time.Duration): the batched wake-ups wait syncShare times that.
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
	delayed  *workloop.Delayed
	recorder record.EventRecorder
	metrics  *metrics.Metrics

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
	if opts.ReadinessDelay != nil {
		c.readinessDelay = *opts.ReadinessDelay
	}
	if opts.Tracker != nil {
		opts.Tracker.Watch(c.delayed.Pending)
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

func (c *Controller) enqueueSet(obj interface{}) { c.loop.Enqueue(obj, "PackageVariantSet") }

// handleVariantUpdate wakes the set when what it manages changed (the
// spec, labels, owner, deletion): at once; when only the variant's
// readiness or where it stands with its change (published, failed: what a
// rollout waits on) changed: after the readiness delay, batched with the
// others.
// Other status writes wake nothing; the set's next sync reads the variant
// again all the same.
func (c *Controller) handleVariantUpdate(logger klog.Logger, oldObj, newObj interface{}) {
	o, ok1 := oldObj.(*configv1alpha1.PackageVariant)
	n, ok2 := newObj.(*configv1alpha1.PackageVariant)
	if !ok1 || !ok2 {
		return
	}
	if c.variantWrites.Own(n) {
		// The echo of the set's own update: nothing the set does not know.
		c.noteVariant(newObj)
		return
	}
	managedChanged := o.Generation != n.Generation ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		o.Labels[configv1alpha2.SetLabel] != n.Labels[configv1alpha2.SetLabel] ||
		!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
	if managedChanged {
		c.handleVariant(logger, oldObj, 0)
		c.handleVariant(logger, newObj, 0)
		return
	}
	if meta.IsStatusConditionTrue(o.Status.Conditions, "Ready") != meta.IsStatusConditionTrue(n.Status.Conditions, "Ready") || progressChanged(o, n) {
		c.handleVariant(logger, newObj, c.readinessDelay)
		return
	}
	c.noteVariant(newObj)
}

// handleVariant enqueues the set that controls a PackageVariant, after
// delay (batched) or at once.
func (c *Controller) handleVariant(logger klog.Logger, obj interface{}, delay time.Duration) {
	key, ok := c.noteVariant(obj)
	if !ok {
		return
	}
	logger.V(4).Info("PackageVariant event", "packageVariant", klog.KObj(handlers.Meta(obj)), "packageVariantSet", key)
	c.wakeBatched(key, delay)
}

// wakeBatched queues the set key after delay, batched with its other
// wake-ups and spaced by what its syncs cost (syncShare); at once when
// delay is 0.
func (c *Controller) wakeBatched(key cache.ObjectName, delay time.Duration) {
	if delay <= 0 {
		c.queue.Add(key)
		return
	}
	if took, ok := c.syncTook.Load(key); ok {
		delay = max(delay, syncShare*took.(time.Duration))
	}
	c.delayed.AddAfter(key, delay)
}

// noteVariant notes an event of a PackageVariant (the cache shows the
// variant: the set that created it expects it no more) and returns the set
// that controls it, checked by UID so a variant of a deleted and
// re-created set of the same name does not concern the new one.
func (c *Controller) noteVariant(obj interface{}) (cache.ObjectName, bool) {
	m := handlers.Meta(obj)
	if m == nil {
		return cache.ObjectName{}, false
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil || ref.Kind != "PackageVariantSet" || ref.APIVersion != configv1alpha2.SchemeGroupVersion.String() {
		return cache.ObjectName{}, false
	}
	// Any event of the variant means the cache has caught up with its
	// creation.
	c.expectations.Observed(ref.UID, m.GetName())
	pvs, err := c.pvsLister.PackageVariantSets(m.GetNamespace()).Get(ref.Name)
	if err != nil || pvs.UID != ref.UID {
		return cache.ObjectName{}, false
	}
	return cache.MetaObjectToName(pvs), true
}

// handleVariantDeleted enqueues the set that controlled a deleted
// PackageVariant and every Stalled set of its namespace: a set Stalled
// because a variant of its name "does not belong to this set" (one of a
// deleted set of the same name still cleaning up, or a hand-written one)
// can go on once that variant is gone, and no other event tells it.
func (c *Controller) handleVariantDeleted(logger klog.Logger, obj interface{}) {
	c.handleVariant(logger, obj, 0)
	m := handlers.Meta(obj)
	if m == nil {
		return
	}
	sets, err := c.pvsLister.PackageVariantSets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pvs := range sets {
		switch {
		case meta.IsStatusConditionTrue(pvs.Status.Conditions, ConditionStalled):
			logger.V(4).Info("PackageVariant deleted; waking a Stalled set", "packageVariant", klog.KObj(m), "packageVariantSet", klog.KObj(pvs))
			c.queue.Add(cache.MetaObjectToName(pvs))
		case pvs.UID != ownerUID(m) && c.expectations.Pending(pvs.UID, m.GetName()):
			// The set's create of a variant of this name was answered
			// AlreadyExists by this one (of another set, still being
			// deleted): the set waits for a variant that is not coming.
			// It creates its own now.
			logger.V(4).Info("PackageVariant deleted; waking the set that expected one of its name", "packageVariant", klog.KObj(m), "packageVariantSet", klog.KObj(pvs))
			c.expectations.Observed(pvs.UID, m.GetName())
			c.queue.Add(cache.MetaObjectToName(pvs))
		}
	}
}

// ownerUID is the UID of the controller of an object ("" if none).
func ownerUID(m metav1.Object) types.UID {
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return ref.UID
	}
	return ""
}

// handleRepository enqueues the sets that name the Repository, and those
// that select Repositories by label or compute their names.
func (c *Controller) handleRepository(logger klog.Logger, obj interface{}) {
	m := handlers.Meta(obj)
	if m == nil {
		return
	}
	c.enqueueByIndex(logger, ByRepositoryIndex, m.GetNamespace()+"/"+m.GetName(), m.GetNamespace()+"/"+anyRepository)
}

// handlePackageRevision enqueues the sets whose upstream is the revision's package.
func (c *Controller) handlePackageRevision(logger klog.Logger, obj interface{}) {
	pr, ok := handlers.Object[*porchv1alpha1.PackageRevision](obj)
	if !ok {
		return
	}
	c.enqueueByIndex(logger, ByUpstreamIndex, helper.PackageKeyOf(pr))
}

func (c *Controller) enqueueByIndex(logger klog.Logger, index string, values ...string) {
	for _, key := range handlers.ByIndex(logger, c.pvsIndexer, index, values...) {
		c.queue.Add(key)
	}
}

var upstreamIndexFunc = handlers.IndexFunc(func(pvs *configv1alpha2.PackageVariantSet) []string {
	return handlers.UpstreamKeys(pvs.Namespace, pvs.Spec.Upstream)
})

var repositoryIndexFunc = handlers.IndexFunc(func(pvs *configv1alpha2.PackageVariantSet) []string {
	seen := map[string]bool{}
	var keys []string
	add := func(name string) {
		if k := pvs.Namespace + "/" + name; !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for i, t := range pvs.Spec.Targets {
		for _, r := range t.Repositories {
			add(r.Name)
		}
		if t.RepositorySelector != nil || t.ObjectSelector != nil {
			add(anyRepository)
		}
		if tpl := confighelper.WalkTemplate(t.Template, confighelper.TemplatePath(i)); tpl != nil {
			if tpl.DownstreamRepo.Expr != nil {
				add(anyRepository)
			}
			if v := tpl.DownstreamRepo.Value; v != nil {
				add(*v)
			}
		}
	}
	return keys
})

var objectKindIndexFunc = handlers.IndexFunc(func(pvs *configv1alpha2.PackageVariantSet) []string {
	var keys []string
	for _, t := range pvs.Spec.Targets {
		if s := t.ObjectSelector; s != nil {
			gv, err := schema.ParseGroupVersion(s.APIVersion)
			if err != nil {
				continue
			}
			keys = append(keys, pvs.Namespace+"/"+gv.Group+"/"+s.Kind)
		}
	}
	if r := pvs.Spec.Rollout; r != nil && r.Health != nil {
		// Its health objects: a change of one may finish a variant.
		ns := r.Health.Namespace
		if ns == "" {
			ns = pvs.Namespace
		}
		if gv, err := schema.ParseGroupVersion(r.Health.APIVersion); err == nil {
			keys = append(keys, ns+"/"+gv.Group+"/"+r.Health.Kind)
		}
	}
	return keys
})

var setIndexFunc = handlers.IndexFunc(func(pv *configv1alpha1.PackageVariant) []string {
	uid, ok := pv.Labels[configv1alpha2.SetLabel]
	if !ok {
		return nil
	}
	return []string{pv.Namespace + "/" + uid}
})
