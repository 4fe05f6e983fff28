package packagevariantset

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationTimeout is how long a set trusts that a variant it created
// will appear in the informer cache. Long enough for any sane watch delay;
// short enough that a variant deleted before the cache ever showed it (a
// relist can skip both events) is re-created soon.
const expectationTimeout = 2 * time.Minute

// expectations remember, per set, the variants its syncs created that the
// informer cache has not shown yet. A set creates hundreds of variants in
// one sync, and their events wake it again before the cache has caught up:
// without expectations the next sync would send a create for every variant
// still missing from the cache, each one failing with AlreadyExists.
type expectations struct {
	mu  sync.Mutex
	now func() time.Time
	// pending maps a set UID to the names of the variants it created and
	// when.
	pending map[types.UID]map[string]time.Time
}

func newExpectations() *expectations {
	return &expectations{now: time.Now, pending: map[types.UID]map[string]time.Time{}}
}

// expect records that set uid is creating the variant name. It is called
// before the create, so that the cache cannot show the variant before the
// expectation exists; a create that fails withdraws it with observe.
func (e *expectations) expect(uid types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := e.pending[uid]
	if names == nil {
		names = map[string]time.Time{}
		e.pending[uid] = names
	}
	names[name] = e.now()
}

// observe settles the expectation for a variant of set uid: the cache has
// shown it (or its deletion), or its create failed.
func (e *expectations) observe(uid types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := e.pending[uid]
	delete(names, name)
	if len(names) == 0 {
		delete(e.pending, uid)
	}
}

// created reports whether set uid created the variant name and the cache
// has not shown it yet (and it is not overdue): then the set must not
// create it again.
func (e *expectations) created(uid types.UID, name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.pending[uid][name]
	if !ok {
		return false
	}
	if e.now().Sub(at) > expectationTimeout {
		delete(e.pending[uid], name)
		if len(e.pending[uid]) == 0 {
			delete(e.pending, uid)
		}
		return false
	}
	return true
}

// forget drops the expectations of a set that is gone.
func (e *expectations) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, uid)
}
