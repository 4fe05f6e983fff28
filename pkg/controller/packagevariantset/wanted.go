package packagevariantset

import (
	"context"
	"errors"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
)

// wanted is what a set asks for, read from the caches alone: the variants
// it should have and with which spec, the writes that would make its
// variants those, and the problems found on the way.
type wanted struct {
	// stalled is a problem with the set as a whole (its spec, its upstream,
	// its targets) that only a change of the set or the cluster mends:
	// nothing is rendered and nothing is written.
	stalled *setProblem
	// targetsErr is a transient failure to list the targets: nothing is
	// rendered and nothing is written, and the sync is retried.
	targetsErr error

	// variants are the rendered specs, in target order, one per downstream.
	variants []*rendered
	// changes are the creates and updates that make the set's variants
	// the rendered ones, in target order.
	changes []change
	// stale are the set's variants that no rendered spec is for. While
	// renderFailed they may be the failed targets' own, and are not to be
	// deleted.
	stale []*configv1alpha1.PackageVariant
	// problems are the targets that have no variant for a reason a person
	// must fix, one message each.
	problems []string
	// renderFailed says that some target has no valid spec.
	renderFailed bool
	// rollout is the decision of spec.rollout (nil: the set has none, or
	// the sync did not get that far); changes holds only what it opens.
	rollout *rollout.Plan
	// waveOf is the wave of each variant, by name, under spec.rollout
	// (nil without one): its WaveLabel.
	waveOf map[string]string
}

// setProblem is the reason and message of a Stalled set.
type setProblem struct {
	reason  string
	message string
}

// writable says whether the set's variants may be written at all: not
// while the set is stalled or its targets cannot be listed.
func (w *wanted) writable() bool {
	return w.stalled == nil && w.targetsErr == nil
}

// fleet is a set's variants as a sync found them, and the write each
// needs.
type fleet struct {
	// existing are the set's variants by identifier; byName all of them
	// (a variant without a downstream has no identifier), and idOf the
	// identifier under which each is in existing.
	existing map[string]*configv1alpha1.PackageVariant
	byName   map[string]*configv1alpha1.PackageVariant
	idOf     map[string]string
	// variants are the rendered specs, in target order (wanted's
	// variants); rendered are the same by identifier.
	variants []*rendered
	rendered map[string]*rendered
	// changes are the creates and updates that make the variants the
	// rendered ones, by identifier, before a rollout holds any back;
	// stale are the variants no rendered spec is for, by name.
	// creates are the identifiers of changes that create a variant.
	changes map[string]change
	creates map[string]bool
	stale   map[string]*configv1alpha1.PackageVariant
	// ready counts the variants of byName that are Ready.
	ready int
	// pos is the position of each identifier in variants (target order).
	pos map[string]int
}

func newFleet(n int) *fleet {
	return &fleet{
		existing: make(map[string]*configv1alpha1.PackageVariant, n),
		byName:   make(map[string]*configv1alpha1.PackageVariant, n),
		idOf:     make(map[string]string, n),
		changes:  map[string]change{},
		creates:  map[string]bool{},
		stale:    map[string]*configv1alpha1.PackageVariant{},
		rendered: make(map[string]*rendered, n),
		pos:      make(map[string]int, n),
	}
}

// fleets keeps, by set UID, the fleet of the set's last sync for the next
// sync to fill again: a fleet is only used during its sync, and a set
// syncs on one worker at a time, so its maps, with room for the whole
// fleet, need not be made anew every time.
type fleets struct{ m sync.Map }

// empty returns the set's fleet, emptied, with room for n variants.
func (fs *fleets) empty(uid types.UID, n int) *fleet {
	v, ok := fs.m.Load(uid)
	if !ok {
		f := newFleet(n)
		fs.m.Store(uid, f)
		return f
	}
	f := v.(*fleet)
	clear(f.existing)
	clear(f.byName)
	clear(f.idOf)
	clear(f.changes)
	clear(f.creates)
	clear(f.stale)
	clear(f.rendered)
	clear(f.pos)
	f.variants, f.ready = nil, 0
	return f
}

func (fs *fleets) forget(uid types.UID) { fs.m.Delete(uid) }

// add puts a variant of the set into the fleet. Of two variants with one
// identifier (made by hand) the one with the expected name is kept.
func (f *fleet) add(setName string, pv *configv1alpha1.PackageVariant) {
	f.byName[pv.Name] = pv
	if isReady(pv) {
		f.ready++
	}
	if pv.Spec.Downstream == nil {
		return
	}
	id := variantIdentifier(setName, pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package)
	if prev, dup := f.existing[id]; dup {
		if prev.Name == variantName(id) {
			return
		}
		delete(f.idOf, prev.Name)
	}
	f.existing[id] = pv
	f.idOf[pv.Name] = id
}

// wantedVariants validates the set, resolves its upstream, expands and
// renders its targets, and compares the result with the set's variants
// (f, from variantsOf), planning the write of each.
func (c *Controller) wantedVariants(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, f *fleet) *wanted {
	set := celtemplate.SetKey{UID: pvs.UID, Generation: pvs.Generation}
	check := func(fldPath *field.Path, expr string, withRepository bool) error {
		return c.cel.Check(set, fldPath.String(), expr, withRepository)
	}
	if errs := validation.ValidatePackageVariantSet(pvs, check); len(errs) > 0 {
		return &wanted{stalled: &setProblem{ReasonValidationError, strings.Join(validation.Messages(errs), "; ")}}
	}
	up := pvs.Spec.Upstream
	upstream, err := helper.ResolveUpstream(up, prindex.Revisions(c.prIndexer, pvs.Namespace, up.Repo, up.Package))
	if err != nil {
		return &wanted{stalled: &setProblem{ReasonUpstreamNotFound, err.Error()}}
	}
	targets, err := c.expandTargets(ctx, pvs)
	var terr *targetError
	if errors.As(err, &terr) {
		return &wanted{stalled: &setProblem{ReasonNoMatchingTargets, terr.msg + "; nothing was created or deleted"}}
	}
	if err != nil {
		return &wanted{targetsErr: err}
	}

	r := &renderer{cel: c.cel, budget: celtemplate.NewBudget(ctx, c.celBudget), set: set, pvs: pvs, upstream: upstream,
		repository: func(name string) (*configv1alpha1.Repository, bool) {
			repo, err := c.repoLister.Repositories(pvs.Namespace).Get(name)
			return repo, err == nil
		}}
	w := &wanted{}
	var stopped error
	w.variants, w.problems, w.renderFailed, stopped = desiredVariants(c.states.of(pvs, upstream), r, targets)
	var overBudget *celtemplate.BudgetError
	switch {
	case errors.As(stopped, &overBudget):
		return &wanted{stalled: &setProblem{ReasonCostBudgetExceeded, overBudget.Error() + "; nothing was created or deleted"}}
	case stopped != nil:
		return &wanted{targetsErr: stopped}
	}
	f.variants = w.variants
	c.planChanges(pvs, f, w)
	if pvs.Spec.Rollout != nil {
		if err := c.planRollout(ctx, pvs, f, w, upstream); err != nil {
			return &wanted{stalled: &setProblem{ReasonValidationError, err.Error()}}
		}
	}
	planWaveLabels(f, w)
	return w
}

// isReady says whether a variant reports Ready=True.
func isReady(pv *configv1alpha1.PackageVariant) bool {
	return meta.IsStatusConditionTrue(pv.Status.Conditions, conditions.Ready)
}
