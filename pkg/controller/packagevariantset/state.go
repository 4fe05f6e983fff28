package packagevariantset

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// Every sync of a set takes the same path: it expands and renders the
// targets, reads the set's variants from the cache and plans the write of
// each. No event handler keeps a record of what changed for the sync to go
// on from; what the syncs keep are memos that check themselves against
// what they were made from, so a change nobody reported is never missed:
// a target's render against the set's generation, the upstream revision
// and the resourceVersions the render read (rendered.go), the comparison
// of a rendered spec with a variant's against the variant's UID and
// generation, and where a variant stands with its change against its
// resourceVersion.

// states holds what each set's syncs keep, by set UID.
type states struct {
	mu   sync.Mutex
	sets map[types.UID]*setState
}

// setState is what the syncs of one set generation against one upstream
// revision keep: the renders of its targets. Only the set's own sync uses
// it (the queue syncs a set on one worker at a time).
type setState struct {
	generation int64
	upstream   string
	targets    map[targetKey]*rendered
	// sweep numbers the syncs; a render not used by the last one is
	// dropped.
	sweep uint64
}

// upstreamKey identifies the upstream revision a set was rendered against.
func upstreamKey(upstream *porchv1alpha1.PackageRevision) string {
	return upstream.Name + "@" + upstream.ResourceVersion
}

// of returns the state of a set, empty when its generation or upstream
// revision differs from what it was kept for.
func (s *states) of(pvs *configv1alpha2.PackageVariantSet, upstream *porchv1alpha1.PackageRevision) *setState {
	s.mu.Lock()
	defer s.mu.Unlock()
	up := upstreamKey(upstream)
	st := s.sets[pvs.UID]
	if st == nil || st.generation != pvs.Generation || st.upstream != up {
		st = &setState{generation: pvs.Generation, upstream: up, targets: map[targetKey]*rendered{}}
		if s.sets == nil {
			s.sets = map[types.UID]*setState{}
		}
		s.sets[pvs.UID] = st
	}
	return st
}

// forget drops a set's state: the set is gone, or a sync stopped midway.
func (s *states) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sets, uid)
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

// rolloutChanges are the writes of a rollout that opens the variants
// named open: their updates and creates, and every other create when
// createsNow, in target order. It reads the open names and the creates,
// not every change: a rollout holds most of them back.
func (f *fleet) rolloutChanges(open []string, createsNow bool) []change {
	var out []change
	for _, name := range open {
		if ch, ok := f.changes[f.idOf[name]]; ok && ch.current != nil && ch.current.Name == name {
			out = append(out, ch)
		}
	}
	opened := func(string) bool { return true }
	if !createsNow {
		names := make(map[string]bool, len(open))
		for _, name := range open {
			names[name] = true
		}
		opened = func(name string) bool { return names[name] }
	}
	for id := range f.creates {
		if ch := f.changes[id]; opened(ch.name) {
			out = append(out, ch)
		}
	}
	slices.SortFunc(out, func(a, b change) int { return f.pos[a.id] - f.pos[b.id] })
	return out
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

// isReady says whether a variant reports Ready=True.
func isReady(pv *configv1alpha1.PackageVariant) bool {
	return meta.IsStatusConditionTrue(pv.Status.Conditions, conditions.Ready)
}
