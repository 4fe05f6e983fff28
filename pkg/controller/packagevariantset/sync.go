package packagevariantset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
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
	start := time.Now()
	syncErr := c.reconcile(ctx, desired)
	c.syncTook.Store(key, time.Since(start))
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
// set wants, read from the caches (wanted.go), and the writes that get
// there (changes.go); the writes made, and the rollout's events and
// metrics (manage.go); the status, computed from both without a client
// (status.go). Then what the work loop does next: retry what failed, wake
// the set when its rollout's soak ends or a deadline passes, look again
// when a create the cache does not show yet is due.
func (c *Controller) reconcile(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	// A paused set: everything but its status stays as the last sync left
	// it.
	o := outcome{paused: confighelper.Paused(pvs)}
	if !o.paused {
		o.fleet = c.variantsOf(pvs)
		o.wanted = c.wantedVariants(ctx, pvs, o.fleet)
		if o.wanted.writable() {
			o.managed, o.manageErr = c.manageVariants(ctx, pvs, o.wanted)
			if errors.Is(o.manageErr, errSetGoing) {
				return o.manageErr
			}
		}
		if o.manageErr == nil {
			c.reportRollout(pvs, o.wanted.rollout)
		}
	}
	pvs.Status = calculateStatus(pvs, o)
	w, managed := o.wanted, o.managed
	switch {
	case o.paused:
		return nil
	case o.manageErr != nil:
		return o.manageErr
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

// variantsOf reads the set's variants from the cache (label index), each in
// the newest state the set knows: its own updates and deletes the cache
// does not show yet included.
func (c *Controller) variantsOf(pvs *configv1alpha2.PackageVariantSet) *fleet {
	objs, _ := c.pvIndexer.ByIndex(BySetIndex, pvs.Namespace+"/"+string(pvs.UID))
	f := c.fleets.empty(pvs.UID, len(objs))
	for _, o := range objs {
		if pv, ok := o.(*configv1alpha1.PackageVariant); ok {
			f.add(pvs.Name, c.variantWrites.Latest(pv))
		}
	}
	return f
}

func sortByName[T any](items []T, name func(T) string) {
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(name(a), name(b)) })
}
