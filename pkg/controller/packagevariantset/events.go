package packagevariantset

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/handlers"
)

// What each event of the informers queues: the set itself, the set of a
// variant (at once, or batched after the readiness delay), the sets that
// select a Repository or follow an upstream package.

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
// wake-ups and spaced by what its syncs cost (batchedWait); at once when
// delay is 0.
func (c *Controller) wakeBatched(key cache.ObjectName, delay time.Duration) {
	if delay <= 0 {
		c.queue.Add(key)
		return
	}
	if took, ok := c.syncTook.Load(key); ok {
		delay = batchedWait(delay, took.(time.Duration))
	}
	c.delayed.AddAfter(key, delay)
}

// batchedWait is how long a batched wake-up of a set waits: delay, or
// syncShare times its last sync (syncTook) when that is longer, but no
// longer than maxBatchedWait unless delay is.
func batchedWait(delay, took time.Duration) time.Duration {
	return max(delay, min(syncShare*took, maxBatchedWait))
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
