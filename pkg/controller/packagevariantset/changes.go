package packagevariantset

// The writes a sync plans, from what the set wants (wanted.go) and the
// variants it has (its fleet): a create or an update for each rendered
// variant that differs, the stale variants to delete, and the wave labels
// to put right. manage.go makes them.

import (
	"fmt"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// change is one write for a wanted variant: a create of the variant name
// when current is nil, else an update of current to spec.
type change struct {
	// id is the identifier of the variant (variantIdentifier).
	id      string
	name    string
	spec    *configv1alpha1.PackageVariantSpec
	current *configv1alpha1.PackageVariant
}

// planChanges plans the write of every variant of f, rendered or stale,
// and lists them in w; the problems of variant names taken by objects that
// are not the set's go to w's problems.
func (c *Controller) planChanges(pvs *configv1alpha2.PackageVariantSet, f *fleet, w *wanted) {
	for i, v := range w.variants {
		f.rendered[v.id] = v
		f.pos[v.id] = i
	}
	for _, v := range w.variants {
		c.planVariant(pvs, f, v.id, w)
	}
	for id := range f.existing {
		if f.rendered[id] == nil {
			c.planVariant(pvs, f, id, w)
		}
	}
	f.apply(w, pvs.Spec.Rollout == nil)
}

// planVariant plans the write for one identifier of f: an update of its
// variant to the rendered spec, a create when it has none, nothing when it
// has the rendered spec; stale when nothing renders it any more.
func (c *Controller) planVariant(pvs *configv1alpha2.PackageVariantSet, f *fleet, id string, w *wanted) {
	f.unplan(id)
	cur := f.existing[id]
	if cur != nil {
		delete(f.stale, cur.Name)
	}
	v := f.rendered[id]
	switch {
	case v == nil:
		if cur != nil && cur.DeletionTimestamp == nil {
			f.stale[cur.Name] = cur
		}
	case cur != nil:
		// One being deleted is left to go; a later sync creates it anew
		// once it has gone.
		if cur.DeletionTimestamp == nil && !v.specOf(cur) {
			f.plan(change{id: id, name: cur.Name, spec: v.spec, current: cur})
		}
	default:
		if other, err := c.pvLister.PackageVariants(pvs.Namespace).Get(v.name); err == nil {
			if other.Labels[configv1alpha2.SetLabel] != string(pvs.UID) {
				w.problems = append(w.problems, fmt.Sprintf("PackageVariant %s (for downstream %s/%s) already exists and does not belong to this set; delete or rename it",
					v.name, v.spec.Downstream.Repo, v.spec.Downstream.Package))
			}
			// Ours, and in the cache since this sync listed the set's
			// variants: its event has queued the set again.
			return
		}
		f.plan(change{id: id, name: v.name, spec: v.spec})
	}
}

// plan records the change of an identifier; unplan drops it.
func (f *fleet) plan(ch change) {
	f.changes[ch.id] = ch
	if ch.current == nil {
		f.creates[ch.id] = true
	} else {
		delete(f.creates, ch.id)
	}
}

func (f *fleet) unplan(id string) {
	delete(f.changes, id)
	delete(f.creates, id)
}

// apply lists the fleet's writes in w: the creates and updates in target
// order (when withChanges; a rollout picks them itself, planRollout), the
// stale variants in name order.
func (f *fleet) apply(w *wanted, withChanges bool) {
	w.changes, w.stale = nil, nil
	if withChanges && len(f.changes) > 0 {
		for _, v := range w.variants {
			if ch, ok := f.changes[v.id]; ok {
				w.changes = append(w.changes, ch)
			}
		}
	}
	for _, pv := range f.stale {
		w.stale = append(w.stale, pv)
	}
	sortByName(w.stale, func(pv *configv1alpha1.PackageVariant) string { return pv.Name })
}

// planWaveLabels adds the updates of the variants whose WaveLabel is not
// their wave (or is there without a rollout) and that no other write
// brings up to date: a label changes no package, so a rollout never holds
// it back.
func planWaveLabels(f *fleet, w *wanted) {
	writes := make(map[string]bool, len(w.changes))
	for _, ch := range w.changes {
		writes[ch.name] = true
	}
	for _, v := range f.variants {
		cur, ok := f.existing[v.id]
		if !ok || cur.DeletionTimestamp != nil || writes[cur.Name] || cur.Labels[configv1alpha2.WaveLabel] == w.waveOf[cur.Name] {
			continue
		}
		w.changes = append(w.changes, change{id: v.id, name: cur.Name, spec: &cur.Spec, current: cur})
	}
}
