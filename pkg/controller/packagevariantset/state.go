package packagevariantset

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
)

// A set's sync works on what changed since its last sync, not on the
// whole fleet. The event handlers record what changed for each set: only
// some of its variants (by name), or anything else (its spec, a
// Repository, the upstream, a selected object: "everything"). A sync that
// finds only variants changed, and a clean outcome of the sync before
// (state below), brings just those variants up to date in what it kept and
// plans their writes; any other sync expands and renders the targets (the
// renders of unchanged targets are kept, rendered.go) and plans every
// variant. Both end in the same fleet (below), from which the writes and
// the status are taken, so the two paths cannot disagree on a rule. A
// fleet older than fullSyncEvery is not used: a full sync then re-reads
// everything, whatever the handlers recorded.

// fullSyncEvery bounds how long a set goes on the record of its handlers
// alone.
const fullSyncEvery = 10 * time.Minute

// changes is what happened to each set since its sync last took the
// record. A set queued with no record (a retry, a wake-up for a soak's end)
// has had nothing happen to it.
type changes struct {
	mu   sync.Mutex
	sets map[cache.ObjectName]*changed
}

// changed is what happened to one set.
type changed struct {
	everything bool
	// variants are the names of the set's variants that changed.
	variants map[string]bool
}

func (c *changes) record(key cache.ObjectName, f func(*changed)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[cache.ObjectName]*changed{}
	}
	ch := c.sets[key]
	if ch == nil {
		ch = &changed{}
		c.sets[key] = ch
	}
	f(ch)
}

// everything records a change the set's variants alone do not tell.
func (c *changes) everything(key cache.ObjectName) {
	c.record(key, func(ch *changed) { ch.everything = true; ch.variants = nil })
}

// variant records a change of the set's variant name.
func (c *changes) variant(key cache.ObjectName, name string) {
	c.record(key, func(ch *changed) {
		if ch.everything {
			return
		}
		if ch.variants == nil {
			ch.variants = map[string]bool{}
		}
		ch.variants[name] = true
	})
}

// take returns and clears the record of a set.
func (c *changes) take(key cache.ObjectName) changed {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.sets[key]
	delete(c.sets, key)
	if ch == nil {
		return changed{}
	}
	return *ch
}

// pending reports whether the set has a change recorded that concerns the
// variant name (every variant, after a change of everything).
func (c *changes) pending(key cache.ObjectName, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.sets[key]
	return ch != nil && (ch.everything || ch.variants[name])
}

// states holds what each set's syncs keep, by set UID.
type states struct {
	mu   sync.Mutex
	sets map[types.UID]*setState
}

// setState is what the syncs of one set generation against one upstream
// revision keep: the renders of its targets and the fleet of its last sync.
// Only the set's own sync uses it (the queue syncs a set on one worker at a
// time).
type setState struct {
	generation int64
	upstream   string
	targets    map[targetKey]*rendered
	// sweep numbers the syncs; a render not used by the last one is
	// dropped.
	sweep uint64
	// fleet is the outcome of the last sync, when it was clean enough to
	// go on from (nil otherwise).
	fleet *fleet
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

// fleetOf returns the fleet a set's last sync left, if it may be gone on
// from: kept for the set's generation and upstream revision, and recent.
func (s *states) fleetOf(pvs *configv1alpha2.PackageVariantSet, upstream *porchv1alpha1.PackageRevision, now time.Time) *fleet {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sets[pvs.UID]
	if st == nil || st.fleet == nil || st.generation != pvs.Generation || st.upstream != upstreamKey(upstream) || now.Sub(st.fleet.at) > fullSyncEvery {
		return nil
	}
	return st.fleet
}

// keep records the fleet of a sync whose outcome later syncs may go on
// from; nil drops it.
func (s *states) keep(uid types.UID, f *fleet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.sets[uid]; st != nil {
		st.fleet = f
	}
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
	// at is when the fleet was read in full.
	at time.Time
	// existing are the set's variants by identifier; byName all of them
	// (a variant without a downstream has no identifier), and idOf the
	// identifier under which each is in existing.
	existing map[string]*configv1alpha1.PackageVariant
	byName   map[string]*configv1alpha1.PackageVariant
	idOf     map[string]string
	// variants, renderProblems and renderFailed are what the targets
	// rendered (wanted's fields of those names); rendered are the
	// rendered specs by identifier.
	variants       []*rendered
	renderProblems []string
	renderFailed   bool
	rendered       map[string]*rendered
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
	// waves are what a rollout knows of each rendered variant, in their
	// waves as rollout.Waves puts them, and waveAt where each identifier
	// is (built by the first sync that needs them); touched are the
	// identifiers the last refresh read again.
	waves   [][]rollout.Variant
	waveAt  map[string][2]int
	touched map[string]bool
	// unusable says a later sync cannot go on from this fleet: two
	// variants share an identifier, or a variant name is taken by an
	// object that is not the set's.
	unusable bool
}

func newFleet(n int, at time.Time) *fleet {
	return &fleet{
		at:       at,
		existing: make(map[string]*configv1alpha1.PackageVariant, n),
		byName:   make(map[string]*configv1alpha1.PackageVariant, n),
		idOf:     make(map[string]string, n),
		changes:  map[string]change{},
		creates:  map[string]bool{},
		stale:    map[string]*configv1alpha1.PackageVariant{},
	}
}

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
		f.unusable = true
		if prev.Name == variantName(id) {
			return
		}
		delete(f.idOf, prev.Name)
	}
	f.existing[id] = pv
	f.idOf[pv.Name] = id
}

// remove takes the variant name out of the fleet and returns the
// identifier it had ("" when none).
func (f *fleet) remove(name string) string {
	if pv, ok := f.byName[name]; ok && isReady(pv) {
		f.ready--
	}
	delete(f.byName, name)
	delete(f.stale, name)
	id, ok := f.idOf[name]
	if !ok {
		return ""
	}
	delete(f.idOf, name)
	delete(f.existing, id)
	return id
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

// rolloutChanges are the writes of a rollout that opens the updates of the
// variants named open: those updates and every create, in target order.
// It reads the open names and the creates, not every change: a rollout
// holds most of them back.
func (f *fleet) rolloutChanges(open []string) []change {
	var out []change
	for _, name := range open {
		if ch, ok := f.changes[f.idOf[name]]; ok && ch.current != nil && ch.current.Name == name {
			out = append(out, ch)
		}
	}
	for id := range f.creates {
		out = append(out, f.changes[id])
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

// written drops from the fleet the updates and deletes a sync made: their
// variants' events bring them back as changed variants. Creates stay until
// the cache shows the variant (a create answered AlreadyExists may be
// another owner's variant, which the set waits out: manage.go).
func (f *fleet) written(w *wanted) {
	for _, ch := range w.changes {
		if ch.current != nil {
			f.unplan(ch.id)
		}
	}
	if !w.renderFailed {
		for _, pv := range w.stale {
			delete(f.stale, pv.Name)
		}
	}
}

// isReady says whether a variant reports Ready=True.
func isReady(pv *configv1alpha1.PackageVariant) bool {
	return meta.IsStatusConditionTrue(pv.Status.Conditions, conditions.Ready)
}
