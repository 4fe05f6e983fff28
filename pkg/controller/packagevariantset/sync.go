package packagevariantset

import (
	"context"
	"errors"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// sync reconciles one PackageVariantSet: it renders a PackageVariant spec
// per target and makes the set's variants exactly those, creating missing
// ones, updating changed ones and deleting stale ones. Everything it reads
// comes from informer caches; it writes only what differs.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	ctx, pvs, err := c.written.Get(ctx, "PackageVariantSet", key, c.pvsLister.PackageVariantSets(key.Namespace).Get)
	// Nothing to do for a set that is gone or going: its variants go by
	// garbage collection (owner references), each through its own deletion
	// policy.
	if err != nil || pvs == nil || pvs.DeletionTimestamp != nil {
		return err
	}
	desired := pvs.DeepCopy()
	syncErr := c.reconcile(ctx, desired)
	logger := klog.FromContext(ctx)
	if errors.Is(syncErr, errSetGoing) {
		// Nothing to record on a set that is going; its events queue the
		// next sync.
		logger.V(2).Info("PackageVariantSet is being deleted or was replaced; creating no variants", "reason", syncErr)
		return nil
	}
	if err := c.writeStatus(ctx, pvs, desired); err != nil {
		if syncErr == nil {
			return err
		}
		logger.V(2).Info("Could not write status", "err", err)
	}
	return syncErr
}

// reconcile does the work and records the outcome in pvs.Status (pvs is
// the caller's copy), in the phases of the ReplicaSet controller: what the
// set wants, read from the caches (wanted.go); the writes that get there
// (manage.go); the status, computed from both without a client
// (status.go).
func (c *Controller) reconcile(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	if confighelper.Paused(pvs) {
		// Everything else stays as the last sync left it.
		conditions.Set(&pvs.Status.Conditions, pvs.Generation, ConditionPaused, metav1.ConditionTrue, configv1alpha1.ReasonPaused,
			confighelper.PausedMessage("PackageVariantSet", pvs))
		return nil
	}
	meta.RemoveStatusCondition(&pvs.Status.Conditions, ConditionPaused)
	existing, byName := c.variantsOf(pvs)
	w := c.wantedVariants(ctx, pvs, existing)
	var managed manageResult
	var manageErr error
	if w.writable() {
		managed, manageErr = c.manageVariants(ctx, pvs, w)
		if errors.Is(manageErr, errSetGoing) {
			return manageErr
		}
	}
	pvs.Status = calculateStatus(pvs, byName, w, managed, manageErr)
	if manageErr == nil {
		c.recordRollout(pvs, &pvs.Status, w.rollout)
	}
	switch {
	case manageErr != nil:
		return manageErr
	case w.targetsErr != nil:
		return w.targetsErr
	}
	if err := errors.Join(managed.writeErrs...); err != nil {
		return err
	}
	if r := w.rollout; r != nil && r.RequeueAfter > 0 {
		// A soak ends, or a progress deadline passes: a wake-up at that
		// time, not work in hand (variantctl, where no time passes, shows
		// the rollout soaking rather than waiting for it).
		c.queue.AddAfter(cache.MetaObjectToName(pvs), r.RequeueAfter)
	}
	if managed.recheck > 0 {
		return workloop.RecheckAfter(managed.recheck)
	}
	return nil
}

// variantsOf returns the set's variants from the cache (label index), by
// identifier and by name.
func (c *Controller) variantsOf(pvs *configv1alpha2.PackageVariantSet) (map[string]*configv1alpha1.PackageVariant, map[string]*configv1alpha1.PackageVariant) {
	objs, _ := c.pvIndexer.ByIndex(BySetIndex, pvs.Namespace+"/"+string(pvs.UID))
	byID := make(map[string]*configv1alpha1.PackageVariant, len(objs))
	byName := make(map[string]*configv1alpha1.PackageVariant, len(objs))
	for _, o := range objs {
		pv, ok := o.(*configv1alpha1.PackageVariant)
		if !ok {
			continue
		}
		byName[pv.Name] = pv
		if pv.Spec.Downstream == nil {
			continue
		}
		id := variantIdentifier(pvs.Name, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
		// Two variants with one identifier (made by hand): keep the one
		// with the expected name.
		if prev, dup := byID[id]; dup && prev.Name == variantName(id) {
			continue
		}
		byID[id] = pv
	}
	return byID, byName
}

// packageRevisions lists the revisions of one package from the cache.
func (c *Controller) packageRevisions(namespace, repo, pkg string) []*porchv1alpha1.PackageRevision {
	return prindex.Revisions(c.prIndexer, namespace, repo, pkg)
}

func sortByName[T any](items []T, name func(T) string) {
	sort.Slice(items, func(i, j int) bool { return name(items[i]) < name(items[j]) })
}
