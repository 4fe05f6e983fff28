package packagevariant

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationTimeout is how long a variant waits for a draft it created to
// appear in the informer cache before it trusts the cache again. Long
// enough for any sane watch delay; short enough that a draft deleted before
// it was ever seen does not stall the variant for long.
const expectationTimeout = 2 * time.Minute

// expectationCheck is how long a variant waits for a created draft to
// reach the cache before it asks Porch whether the draft still exists: a
// draft deleted before the cache showed it (a watch that restarted in
// between replays only what exists) never will.
const expectationCheck = 5 * time.Second

// expectations remember the drafts a variant created that the informer
// cache has not shown yet. While one is pending the variant creates nothing
// else: with a lagging cache the reference controller makes a second
// packagevariant-N draft for the same change.
type expectations struct {
	mu      sync.Mutex
	now     func() time.Time
	pending map[types.UID]expectation
	// created is the last draft each variant created, seen or not: Porch
	// can hand a new draft back without its metadata, and then only this
	// (or the variant's status) tells that the draft is the variant's own.
	created map[types.UID]string
}

type expectation struct {
	name string
	at   time.Time
	// unconfirmed: the create failed in a way that leaves its outcome
	// unknown (a timeout, a lost answer); Porch is asked before the variant
	// creates anything else.
	unconfirmed bool
}

func newExpectations() *expectations {
	return &expectations{now: time.Now, pending: map[types.UID]expectation{}, created: map[types.UID]string{}}
}

// expect records that variant uid created the PackageRevision name.
func (e *expectations) expect(uid types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[uid] = expectation{name: name, at: e.now()}
	e.created[uid] = name
}

// expectUnconfirmed records that variant uid tried to create the
// PackageRevision name and does not know whether it was created.
func (e *expectations) expectUnconfirmed(uid types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[uid] = expectation{name: name, at: e.now(), unconfirmed: true}
}

// unconfirmed returns the draft variant uid tried to create without
// learning whether it was, if any.
func (e *expectations) unconfirmed(uid types.UID) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.pending[uid]
	return exp.name, ok && exp.unconfirmed
}

// notCreated drops the expectation of variant uid for draft name: Porch
// says the draft does not exist (it was never created, or is gone).
func (e *expectations) notCreated(uid types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.pending[uid]; ok && exp.name == name {
		delete(e.pending, uid)
	}
}

// checkIn returns how long until variant uid should ask Porch about the
// draft it waits for (0: now).
func (e *expectations) checkIn(uid types.UID) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.pending[uid]
	if !ok {
		return 0
	}
	return max(0, expectationCheck-e.now().Sub(exp.at))
}

// lastCreated is the name of the last draft variant uid created ("" if
// none since the process started).
func (e *expectations) lastCreated(uid types.UID) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.created[uid]
}

// observe is called for every PackageRevision the cache shows; it settles
// the expectation of the variant that created it.
func (e *expectations) observe(uid types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if exp, ok := e.pending[uid]; ok && exp.name == name {
		delete(e.pending, uid)
	}
}

// waitingFor returns the name of a draft variant uid created that the cache
// does not show yet, or "" when there is none (or it is overdue). inCache
// checks the cache, in case the observation raced with the expectation.
func (e *expectations) waitingFor(uid types.UID, inCache func(name string) bool) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.pending[uid]
	if !ok {
		return ""
	}
	if inCache(exp.name) || e.now().Sub(exp.at) > expectationTimeout {
		delete(e.pending, uid)
		return ""
	}
	return exp.name
}

// forget drops the expectation of a variant that is gone.
func (e *expectations) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, uid)
	delete(e.created, uid)
}
