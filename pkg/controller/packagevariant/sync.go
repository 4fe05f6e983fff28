package packagevariant

import (
	"context"
	"strings"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// sync reconciles one PackageVariant. Contract: NotFound -> nil; an invalid
// spec or a problem only a person can fix -> conditions, nil; Conflict ->
// silent requeue; other errors -> returned for a rate-limited retry. A
// variant that is already up to date costs no API call at all.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	ctx, pv, err := c.written.Get(ctx, "PackageVariant", key, c.pvLister.PackageVariants(key.Namespace).Get)
	if err != nil || pv == nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return c.cleanup(ctx, pv)
	}
	// A paused variant gets no write but its status, not even the
	// finalizer. One deleted while paused is still cleaned up if it
	// carries the finalizer: the deletion is a person's later word.
	if !hasFinalizer(pv) && !confighelper.Paused(pv) {
		if pv, err = c.addFinalizer(ctx, pv); err != nil {
			return err
		}
	}
	desired := c.unsaved.restore(pv).DeepCopy()
	syncErr := c.reconcile(ctx, desired)
	conditions.KeepTransitionTimes(pv.Status.Conditions, desired.Status.Conditions)
	if err := c.writeStatus(ctx, pv, desired); err != nil {
		// What the sync wrote into the draft must not be forgotten with
		// the status: the next sync would take it for a person's edit.
		c.unsaved.remember(pv, desired.Status.Applied)
		if syncErr == nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Could not write status", "err", err)
		return syncErr
	}
	c.unsaved.forget(pv.UID)
	return syncErr
}

// reconcile brings the downstream up to date and records the outcome in
// pv.Status (pv is the caller's copy), in the phases of the ReplicaSet
// controller: manage (validate, resolve a conflict, wait for expected
// drafts, plan from the caches, act on the plan) records what it found
// and did in an outcome; settle decides what the work loop does with the
// error; the events and the status are derived from the outcome alone.
func (c *Controller) reconcile(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	o := &outcome{}
	err := c.manage(ctx, pv, o)
	err = o.settle(err)
	c.announce(pv, o)
	pv.Status = calculateStatus(pv, o)
	return err
}

// manage does the work of one sync, recording in o what it finds and does:
// validate, resolve the conflict with variants of the same downstream,
// check the expectations (in memory), claim the downstream revisions (the
// only writes before the plan), observe them, plan (pure, from the caches)
// and act on the plan.
func (c *Controller) manage(ctx context.Context, pv *configv1alpha1.PackageVariant, o *outcome) error {
	if o.paused = confighelper.Paused(pv); o.paused {
		return nil
	}
	if o.invalid = invalidSpec(pv); o.invalid != nil {
		return nil
	}
	if o.conflictWith = c.resolveConflict(pv); o.conflictWith != nil {
		return nil
	}
	up := pv.Spec.Upstream
	upRevs := c.packageRevisions(pv.Namespace, up.Repo, up.Package)
	upstream, err := helper.ResolveUpstream(up, upRevs)
	if err != nil {
		o.invalid = &invalid{stalled: err.Error(), ready: err.Error()}
		return nil
	}
	pending, err := c.expectationsSatisfied(ctx, pv)
	if err != nil {
		return err
	}
	st, err := c.claim(ctx, pv, upstream, upRevs, pending)
	o.claimed = st
	if err != nil {
		return err
	}
	st.classify()
	if st.rolloutSet, err = c.rolloutSetOf(ctx, st); err != nil {
		return err
	}
	o.st = st
	p := planDownstream(st)
	reads, err := c.observe(ctx, st, p)
	if err != nil {
		return err
	}
	p.decide(st, reads)
	return c.act(ctx, st, p, o)
}

// invalidSpec is what validation finds wrong with the variant (nil:
// nothing).
func invalidSpec(pv *configv1alpha1.PackageVariant) *invalid {
	errs := validation.ValidatePackageVariant(pv)
	if len(errs) == 0 {
		return nil
	}
	return &invalid{
		stalled: strings.Join(validation.Messages(errs), "; "),
		ready:   "invalid packagevariant object: fix the problems the Stalled condition lists",
	}
}
