package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/metrics"
)

// manageResult is what manageVariants did.
type manageResult struct {
	created, updated, deleted int
	// writeErrs are the writes that failed; the others went ahead, and the
	// sync is retried.
	writeErrs []error
	// recheck, when not zero, is when to look again for a variant an
	// earlier sync created that the cache has not shown yet.
	recheck time.Duration
}

// manageVariants makes the writes w asks for: its creates and updates in
// target order, then, only when every target rendered, the deletes of the
// stale variants. A failed write is recorded in the result and the others
// go ahead. The error is the live read of the set before the first create
// failing (errSetGoing when the set is going), which stops every write
// after it.
func (c *Controller) manageVariants(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, w *wanted) (manageResult, error) {
	logger := klog.FromContext(ctx)
	var r manageResult
	liveChecked := false
	for _, ch := range w.changes {
		if ch.current != nil {
			if err := c.updateVariant(ctx, ch.current, ch.spec, w.waveOf[ch.name]); err != nil {
				r.writeErrs = append(r.writeErrs, err)
				continue
			}
			r.updated++
			continue
		}
		if _, err := c.pvLister.PackageVariants(pvs.Namespace).Get(ch.name); err == nil {
			// In the cache since the create was planned: its event has
			// queued the set again (and settled the expectation that
			// would keep the set from creating it twice).
			continue
		}
		if wait, err := c.awaitCreated(ctx, pvs, ch.name); err != nil {
			r.writeErrs = append(r.writeErrs, err)
			continue
		} else if wait > 0 {
			// Made by an earlier sync; the cache has not shown it yet.
			if r.recheck == 0 || wait < r.recheck {
				r.recheck = wait
			}
			continue
		}
		if !liveChecked {
			// The cache may lag a deletion of the set: variants created
			// for a set that is gone or going would make drafts before
			// garbage collection removed them. One live read per sync
			// that creates, none in syncs that do not.
			liveChecked = true
			if err := c.checkSetLive(ctx, pvs); err != nil {
				return r, err
			}
		}
		created, err := c.createVariant(ctx, pvs, ch.name, ch.spec, w.waveOf[ch.name])
		if err != nil {
			r.writeErrs = append(r.writeErrs, err)
			continue
		}
		if created {
			r.created++
		}
	}
	if w.renderFailed {
		// A target that could not be rendered may be one of the existing
		// variants: deleting "stale" ones now could delete it.
		logger.V(2).Info("Not deleting stale PackageVariants while a target cannot be rendered")
	} else {
		for _, pv := range w.stale {
			if err := c.deleteStaleVariant(ctx, pvs, pv); err != nil {
				r.writeErrs = append(r.writeErrs, err)
				continue
			}
			r.deleted++
		}
	}
	if r.created > 0 {
		c.recorder.Eventf(pvs, corev1.EventTypeNormal, "Created", "Created %d PackageVariant(s)", r.created)
	}
	return r, nil
}

// awaitCreated says how long to wait before looking again for the
// variant name, which an earlier sync of the set created (or was answered
// AlreadyExists for) and the cache has not shown yet; 0 when the set
// expects no such variant, or the server says it does not exist (then the
// set creates it now). No event may ever come: a variant deleted before the
// cache showed it, or one of another owner that answered the create and
// has gone since, is never seen. So an expectation older than
// expectations.CheckAfter is checked with a live read.
func (c *Controller) awaitCreated(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, name string) (time.Duration, error) {
	age, pending := c.expectations.Age(pvs.UID, name)
	switch {
	case !pending:
		return 0, nil
	case age < expectations.CheckAfter:
		return expectations.CheckAfter - age, nil
	}
	_, err := c.client.ConfigV1alpha1().PackageVariants(pvs.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).V(2).Info("A PackageVariant the set expected does not exist; creating it", "packageVariant", klog.KRef(pvs.Namespace, name), "waited", age)
		c.expectations.Observed(pvs.UID, name)
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("check whether PackageVariant %s exists: %w", name, err)
	}
	return expectations.CheckAfter, nil
}

// updateVariant writes spec into a copy of cur: of the cache's newer copy
// of it when there is one with the same spec (its controller writes its
// status all the time; the set's plan may be older than the last of those
// writes, and writing onto it would only conflict).
func (c *Controller) updateVariant(ctx context.Context, cur *configv1alpha1.PackageVariant, spec *configv1alpha1.PackageVariantSpec, wave string) error {
	if latest, err := c.pvLister.PackageVariants(cur.Namespace).Get(cur.Name); err == nil && latest.UID == cur.UID && latest.Generation == cur.Generation {
		cur = latest
	}
	upd := cur.DeepCopy()
	upd.Spec = *spec
	setWaveLabel(upd, wave)
	updated, err := c.client.ConfigV1alpha1().PackageVariants(cur.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update PackageVariant %s: %w", cur.Name, err)
	}
	c.variantWrites.Record(cur.ResourceVersion, updated)
	klog.FromContext(ctx).V(2).Info("Updated PackageVariant", "packageVariant", klog.KObj(cur))
	return nil
}

// createVariant creates the set's variant name, expecting it in the cache
// until its event comes. created is false when it existed already.
func (c *Controller) createVariant(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, name string, spec *configv1alpha1.PackageVariantSpec, wave string) (created bool, err error) {
	pv := c.newVariant(pvs, name, spec)
	setWaveLabel(pv, wave)
	c.expectations.Expect(pvs.UID, name)
	_, err = c.client.ConfigV1alpha1().PackageVariants(pvs.Namespace).Create(ctx, pv, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made by an earlier sync whose expectation has expired or by a
		// previous run, and the cache has not shown it yet; or another
		// owner's. The expectation stays: the cache shows the variant,
		// or awaitCreated finds it gone and the set creates its own.
		return false, nil
	case err != nil:
		c.expectations.Observed(pvs.UID, name)
		return false, fmt.Errorf("create PackageVariant %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created PackageVariant", "packageVariant", klog.KObj(pv))
	return true, nil
}

// deleteStaleVariant deletes pv, on the condition that it is still the
// object the cache showed (its UID): a variant of the same name created
// since is not stale. A variant already gone counts as deleted.
func (c *Controller) deleteStaleVariant(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, pv *configv1alpha1.PackageVariant) error {
	uid := pv.UID
	err := c.client.ConfigV1alpha1().PackageVariants(pvs.Namespace).Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete stale PackageVariant %s: %w", pv.Name, err)
	}
	// Until the cache shows the deletion, the variant is one being deleted
	// (its finalizer holds it), not one to delete again.
	going := pv.DeepCopy()
	going.DeletionTimestamp = ptr.To(metav1.Now())
	c.variantWrites.Record(pv.ResourceVersion, going)
	klog.FromContext(ctx).Info("Deleted stale PackageVariant", "packageVariant", klog.KObj(pv))
	c.recorder.Eventf(pvs, corev1.EventTypeNormal, "Deleted", "Deleted PackageVariant %s: no target renders downstream %s/%s any more",
		pv.Name, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
	return nil
}

// errSetGoing is returned by manageVariants when a live read shows the set
// being deleted, deleted, or replaced by a new set of the same name.
var errSetGoing = errors.New("the PackageVariantSet is being deleted")

// checkSetLive reads the set from the API server: errSetGoing when it is
// gone, being deleted or another object by now, nil when it is the set the
// cache showed, any other error as it came.
func (c *Controller) checkSetLive(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	live, err := c.client.ConfigV1alpha2().PackageVariantSets(pvs.Namespace).Get(ctx, pvs.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: it is gone", errSetGoing)
	case err != nil:
		return fmt.Errorf("read PackageVariantSet %s/%s before creating variants: %w", pvs.Namespace, pvs.Name, err)
	case live.UID != pvs.UID:
		return fmt.Errorf("%w: it was replaced by a new set of the same name", errSetGoing)
	case live.DeletionTimestamp != nil:
		return fmt.Errorf("%w: it is marked for deletion", errSetGoing)
	}
	return nil
}

// newVariant is a PackageVariant of the set: labelled with the set's UID,
// controlled by the set (so garbage collection removes it with the set),
// and carrying the finalizer from the start so its downstream is always
// cleaned up.
func (c *Controller) newVariant(pvs *configv1alpha2.PackageVariantSet, name string, spec *configv1alpha1.PackageVariantSpec) *configv1alpha1.PackageVariant {
	isController := true
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  pvs.Namespace,
			Labels:     map[string]string{configv1alpha2.SetLabel: string(pvs.UID)},
			Finalizers: []string{configv1alpha1.Finalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: configv1alpha2.SchemeGroupVersion.String(),
				Kind:       "PackageVariantSet",
				Name:       pvs.Name,
				UID:        pvs.UID,
				Controller: &isController,
			}},
		},
		Spec: *spec,
	}
}

// setWaveLabel gives pv the WaveLabel of its wave, or takes it away ("":
// the set has no rollout).
func setWaveLabel(pv *configv1alpha1.PackageVariant, wave string) {
	if wave == "" {
		delete(pv.Labels, configv1alpha2.WaveLabel)
		return
	}
	if pv.Labels == nil {
		pv.Labels = map[string]string{}
	}
	pv.Labels[configv1alpha2.WaveLabel] = wave
}

// reportRollout sends the events of a rollout decision on the set and
// puts its wave counts in the metrics (the status is calculateStatus's).
// A set without a rollout has no counts; a set whose sync stopped before
// deciding keeps what it had.
func (c *Controller) reportRollout(pvs *configv1alpha2.PackageVariantSet, plan *rollout.Plan) {
	if pvs.Spec.Rollout == nil {
		c.metrics.SetRollout(pvs.Namespace, pvs.Name, nil)
		return
	}
	if plan == nil {
		return
	}
	for _, e := range plan.Events {
		eventType := corev1.EventTypeNormal
		if e.Warning {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(pvs, eventType, e.Reason, e.Message)
	}
	waves := make([]metrics.WaveVariants, 0, len(plan.Status.Waves))
	for i, ws := range plan.Status.Waves {
		s := plan.States[i]
		waves = append(waves, metrics.WaveVariants{Wave: ws.Name, Pending: s.Pending, Open: s.Open, Finished: s.Finished, Failed: s.Failed, Skipped: s.Skipped})
	}
	c.metrics.SetRollout(pvs.Namespace, pvs.Name, waves)
}
