// Package expectations remembers, per owner, the objects a controller's
// syncs created that its informer cache has not shown yet, so that a sync
// woken before the cache caught up does not create them again (the model
// is Kubernetes' ControllerExpectations, keyed by name rather than counted:
// Porch and the API server refuse a second create of one name, and the
// controllers must know which object they are waiting for).
//
// A PackageVariantSet expects the hundreds of variants one sync creates; a
// PackageVariant expects its one new draft, and may not know whether a
// create whose answer was lost was made (unconfirmed).
package expectations

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// CheckAfter is how long an owner waits for an object it created to reach
// its cache before it asks the server whether the object exists: one
// deleted before the cache showed it (a watch that restarted in between
// replays only what exists), or a create answered AlreadyExists by an
// object of another owner that has gone since, never will, and no event
// says so.
const CheckAfter = 5 * time.Second

// Expectations is safe for concurrent use.
type Expectations struct {
	mu sync.Mutex
	// Now is the clock (time.Now); tests set it before use.
	Now     func() time.Time
	timeout time.Duration
	pending map[types.UID]map[string]entry
}

type entry struct {
	at time.Time
	// unconfirmed: the create failed in a way that leaves its outcome
	// unknown (a timeout, a lost answer).
	unconfirmed bool
}

// New returns expectations that are trusted for timeout: long enough for
// any sane watch delay, short enough that an object deleted before the
// cache ever showed it (a relist can skip both its events) does not block
// its owner for long.
func New(timeout time.Duration) *Expectations {
	return &Expectations{Now: time.Now, timeout: timeout, pending: map[types.UID]map[string]entry{}}
}

// Expect records that owner created name (or is about to: called before
// the create, the cache cannot show the object before the expectation
// exists; a create that fails withdraws it with Observed).
func (e *Expectations) Expect(owner types.UID, name string) {
	e.set(owner, name, entry{at: e.Now()})
}

// ExpectUnconfirmed records that owner tried to create name and does not
// know whether it was created.
func (e *Expectations) ExpectUnconfirmed(owner types.UID, name string) {
	e.set(owner, name, entry{at: e.Now(), unconfirmed: true})
}

func (e *Expectations) set(owner types.UID, name string, en entry) {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := e.pending[owner]
	if names == nil {
		names = map[string]entry{}
		e.pending[owner] = names
	}
	names[name] = en
}

// Observed settles owner's expectation of name: the cache has shown it (or
// its deletion), the server says it does not exist, or its create failed.
func (e *Expectations) Observed(owner types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dropLocked(owner, name)
}

func (e *Expectations) dropLocked(owner types.UID, name string) {
	names := e.pending[owner]
	delete(names, name)
	if len(names) == 0 {
		delete(e.pending, owner)
	}
}

// Pending reports whether owner created name and neither the cache nor
// the timeout has settled it: then owner must not create it again.
func (e *Expectations) Pending(owner types.UID, name string) bool {
	_, ok := e.Age(owner, name)
	return ok
}

// Age reports how long ago owner created name, when it is Pending.
func (e *Expectations) Age(owner types.UID, name string) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.pending[owner][name]
	if !ok {
		return 0, false
	}
	age := e.Now().Sub(en.at)
	if age > e.timeout {
		e.dropLocked(owner, name)
		return 0, false
	}
	return age, true
}

// Unconfirmed returns a name owner tried to create without learning
// whether it was, if any.
func (e *Expectations) Unconfirmed(owner types.UID) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, name := range e.namesLocked(owner) {
		if e.pending[owner][name].unconfirmed {
			return name, true
		}
	}
	return "", false
}

// Waiting returns the oldest name owner waits for and how long it has
// waited; "" when there is none. Expectations inCache shows (the
// observation raced with the expectation) or that are overdue are dropped
// on the way.
func (e *Expectations) Waiting(owner types.UID, inCache func(name string) bool) (string, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.Now()
	for _, name := range e.namesLocked(owner) {
		age := now.Sub(e.pending[owner][name].at)
		if inCache(name) || age > e.timeout {
			e.dropLocked(owner, name)
			continue
		}
		return name, age
	}
	return "", 0
}

// namesLocked is owner's pending names, oldest first (then by name).
func (e *Expectations) namesLocked(owner types.UID) []string {
	names := make([]string, 0, len(e.pending[owner]))
	for name := range e.pending[owner] {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := e.pending[owner][names[i]].at, e.pending[owner][names[j]].at
		if !a.Equal(b) {
			return a.Before(b)
		}
		return names[i] < names[j]
	})
	return names
}

// Forget drops the expectations of an owner that is gone.
func (e *Expectations) Forget(owner types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, owner)
}
