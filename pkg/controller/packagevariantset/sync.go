package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
)

// sync reconciles one PackageVariantSet: it renders a PackageVariant spec
// per target and makes the set's variants exactly those, creating missing
// ones, updating changed ones and deleting stale ones. Everything it reads
// comes from informer caches; it writes only what differs.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("packageVariantSet", key.String())
	ctx = klog.NewContext(ctx, logger)
	pvs, err := c.pvsLister.PackageVariantSets(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PackageVariantSet is gone")
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PackageVariantSet %s: %w", key, err)
	}
	pvs = c.written.Latest(pvs)
	if pvs.DeletionTimestamp != nil {
		// Its variants go by garbage collection (owner references), each
		// through its own deletion policy.
		return nil
	}
	desired := pvs.DeepCopy()
	syncErr := c.reconcile(ctx, desired)
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

// errSetGoing is returned by reconcile when a live read shows the set being
// deleted, deleted, or replaced by a new set of the same name.
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

// reconcile does the work and records the outcome in pvs.Status (pvs is
// the caller's copy).
func (c *Controller) reconcile(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	existing, byName := c.variantsOf(pvs)
	pvs.Status.DesiredVariants = 0
	pvs.Status.ExistingVariants = int32(len(byName))
	pvs.Status.ReadyVariants = countReady(byName)

	set := celtemplate.SetKey{UID: pvs.UID, Generation: pvs.Generation}
	check := func(fldPath *field.Path, expr string, withRepository bool) error {
		return c.cel.Check(set, fldPath.String(), expr, withRepository)
	}
	if errs := validation.ValidatePackageVariantSet(pvs, check); len(errs) > 0 {
		setStalled(pvs, ReasonValidationError, strings.Join(validation.Messages(errs), "; "))
		return nil
	}
	up := pvs.Spec.Upstream
	upstream, err := helper.ResolveUpstream(up, c.packageRevisions(pvs.Namespace, up.Repo, up.Package))
	if err != nil {
		setStalled(pvs, ReasonUpstreamNotFound, err.Error())
		return nil
	}
	targets, err := c.expandTargets(pvs)
	var terr *targetError
	if errors.As(err, &terr) {
		setStalled(pvs, ReasonNoMatchingTargets, terr.msg+"; nothing was created or deleted")
		return nil
	}
	if err != nil {
		setValid(pvs)
		setNotReady(pvs, ReasonUnexpectedError, fmt.Sprintf("could not list the targets, so nothing was created or deleted; retrying: %v", err))
		return err
	}

	r := &renderer{cel: c.cel, set: set, pvs: pvs, upstream: upstream, repository: func(name string) (*configv1alpha1.Repository, bool) {
		repo, err := c.repoLister.Repositories(pvs.Namespace).Get(name)
		return repo, err == nil
	}}
	wants, problems, renderFailed := desiredVariants(pvs, r, targets)
	pvs.Status.DesiredVariants = int32(len(wants))

	var writeErrs []error
	created, deleted := 0, 0
	liveChecked := false
	desiredIDs := make(map[string]bool, len(wants))
	for _, w := range wants {
		desiredIDs[w.id] = true
		if cur, ok := existing[w.id]; ok {
			if cur.DeletionTimestamp != nil || specEqual(&cur.Spec, w.spec) {
				continue
			}
			upd := cur.DeepCopy()
			upd.Spec = *w.spec
			if _, err := c.client.ConfigV1alpha1().PackageVariants(pvs.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				writeErrs = append(writeErrs, fmt.Errorf("update PackageVariant %s: %w", cur.Name, err))
				continue
			}
			klog.FromContext(ctx).V(2).Info("Updated PackageVariant", "packageVariant", klog.KObj(cur))
			continue
		}
		name := variantName(w.id)
		if other, err := c.pvLister.PackageVariants(pvs.Namespace).Get(name); err == nil {
			if other.Labels[configv1alpha2.SetLabel] != string(pvs.UID) {
				problems = append(problems, fmt.Sprintf("PackageVariant %s (for downstream %s/%s) already exists and does not belong to this set; delete or rename it",
					name, w.spec.Downstream.Repo, w.spec.Downstream.Package))
			}
			// Ours, and in the cache since this sync listed the set's
			// variants: its event has queued the set again.
			continue
		}
		if c.expectations.Pending(pvs.UID, name) {
			// Made by an earlier sync; the cache has not shown it yet.
			continue
		}
		if !liveChecked {
			// The cache may lag a deletion of the set: variants created
			// for a set that is gone or going would make drafts before
			// garbage collection removed them. One live read per sync
			// that creates, none in syncs that do not.
			liveChecked = true
			if err := c.checkSetLive(ctx, pvs); err != nil {
				return err
			}
		}
		pv := c.newVariant(pvs, name, w.spec)
		c.expectations.Expect(pvs.UID, name)
		_, err := c.client.ConfigV1alpha1().PackageVariants(pvs.Namespace).Create(ctx, pv, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Made by an earlier sync whose expectation has expired, or by a
			// previous run; the cache has not shown it yet.
		case err != nil:
			c.expectations.Observed(pvs.UID, name)
			writeErrs = append(writeErrs, fmt.Errorf("create PackageVariant %s: %w", name, err))
		default:
			created++
			klog.FromContext(ctx).V(2).Info("Created PackageVariant", "packageVariant", klog.KObj(pv))
		}
	}
	if renderFailed {
		// A target that could not be rendered may be one of the existing
		// variants: deleting "stale" ones now could delete it.
		klog.FromContext(ctx).V(2).Info("Not deleting stale PackageVariants while a target cannot be rendered")
	} else {
		for id, pv := range existing {
			if desiredIDs[id] || pv.DeletionTimestamp != nil {
				continue
			}
			uid := pv.UID
			err := c.client.ConfigV1alpha1().PackageVariants(pvs.Namespace).Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				writeErrs = append(writeErrs, fmt.Errorf("delete stale PackageVariant %s: %w", pv.Name, err))
				continue
			}
			deleted++
			klog.FromContext(ctx).Info("Deleted stale PackageVariant", "packageVariant", klog.KObj(pv))
			c.recorder.Eventf(pvs, corev1.EventTypeNormal, "Deleted", "Deleted PackageVariant %s: no target renders downstream %s/%s any more",
				pv.Name, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
		}
	}
	if created > 0 {
		c.recorder.Eventf(pvs, corev1.EventTypeNormal, "Created", "Created %d PackageVariant(s)", created)
	}
	pvs.Status.ExistingVariants = int32(len(byName) + created - deleted)

	switch {
	case len(problems) > 0:
		msg := conditions.List(problems, 10)
		if renderFailed {
			msg += "; variants of the other targets are kept up to date, and none is deleted until every target renders"
		}
		setStalled(pvs, ReasonValidationError, msg)
	case len(writeErrs) > 0:
		setValid(pvs)
		setNotReady(pvs, ReasonUnexpectedError, fmt.Sprintf("%s; retrying", errors.Join(writeErrs...)))
	default:
		setValid(pvs)
		setCondition(pvs, ConditionReady, metav1.ConditionTrue, ReasonReconciled, fmt.Sprintf("%s: %d desired, %d exist, %d Ready",
			readyMessage, pvs.Status.DesiredVariants, pvs.Status.ExistingVariants, pvs.Status.ReadyVariants))
	}
	return errors.Join(writeErrs...)
}

// want is the spec the set renders for one of its variants.
type want struct {
	id   string
	spec *configv1alpha1.PackageVariantSpec
}

// desiredVariants renders every target into the spec of its variant. A
// target that cannot be rendered, renders a spec the PackageVariant
// controller would refuse, or renders the downstream of an earlier target
// is a problem for the set's condition. renderFailed says that a target
// has no valid spec: an existing variant may be that target's, so none may
// be taken for stale.
func desiredVariants(pvs *configv1alpha2.PackageVariantSet, r *renderer, targets []target) (wants []want, problems []string, renderFailed bool) {
	firstTarget := map[string]int{}
	for _, t := range targets {
		spec, err := r.render(t)
		if err != nil {
			renderFailed = true
			problems = append(problems, err.Error())
			continue
		}
		id := variantIdentifier(pvs.Name, spec.Downstream.Repo, spec.Downstream.Package)
		// Created, it would only be a Stalled variant; an existing one
		// keeps the spec it has.
		if errs := validation.ValidatePackageVariantSpec(spec, field.NewPath("spec")); len(errs) > 0 {
			renderFailed = true
			problems = append(problems, fmt.Sprintf("%s renders PackageVariant %s (for downstream %s/%s) with an invalid spec, so it is not created or updated: %s",
				confighelper.TargetPath(t.index), variantName(id), spec.Downstream.Repo, spec.Downstream.Package, strings.Join(validation.Messages(errs), "; ")))
			continue
		}
		if first, dup := firstTarget[id]; dup {
			problems = append(problems, fmt.Sprintf("%s and %s both render downstream %s/%s; only the first is used: give each a different downstream",
				confighelper.TargetPath(first), confighelper.TargetPath(t.index), spec.Downstream.Repo, spec.Downstream.Package))
			continue
		}
		firstTarget[id] = t.index
		wants = append(wants, want{id, spec})
	}
	return wants, problems, renderFailed
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

func countReady(variants map[string]*configv1alpha1.PackageVariant) int32 {
	var n int32
	for _, pv := range variants {
		if meta.IsStatusConditionTrue(pv.Status.Conditions, "Ready") {
			n++
		}
	}
	return n
}

// specEqual compares specs, taking nil and empty maps and lists as equal,
// and a package context with no data and no keys to remove as none. It
// runs for every variant on every sync of a set, so it copies nothing.
func specEqual(a, b *configv1alpha1.PackageVariantSpec) bool {
	// Semantic.DeepEqual already takes nil and empty maps and lists as
	// equal; only the empty package context needs help.
	return equality.Semantic.DeepEqual(withoutEmptyContext(a), withoutEmptyContext(b))
}

// withoutEmptyContext returns s, or, when its package context is empty, a
// shallow copy of s without it (shared with s, so only for reading).
func withoutEmptyContext(s *configv1alpha1.PackageVariantSpec) *configv1alpha1.PackageVariantSpec {
	if pc := s.PackageContext; pc == nil || len(pc.Data) > 0 || len(pc.RemoveKeys) > 0 {
		return s
	}
	out := *s
	out.PackageContext = nil
	return &out
}

// packageRevisions lists the revisions of one package from the cache.
func (c *Controller) packageRevisions(namespace, repo, pkg string) []*porchv1alpha1.PackageRevision {
	return prindex.Revisions(c.prIndexer, namespace, repo, pkg)
}

func sortByName[T any](items []T, name func(T) string) {
	sort.Slice(items, func(i, j int) bool { return name(items[i]) < name(items[j]) })
}
