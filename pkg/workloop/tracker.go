package workloop

import (
	"time"

	"fmt"
	"slices"
	"sort"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Tracker follows what loops have in hand: syncs running, keys whose last
// sync failed (a retry is pending), and how many syncs each loop (and each
// key) ran. The offline tool, tests and benchmarks use it to tell when
// controllers are idle. One Tracker may serve several loops.
type Tracker struct {
	mu       sync.Mutex
	inflight int
	failing  map[string]map[cache.ObjectName]error // by loop: the last error
	syncs    map[string]int
	// busy is the time each loop's syncs took, in all.
	busy map[string]time.Duration
	// keySyncs counts the syncs of each key, by loop; it keeps every key
	// ever synced (a count per object, as the informers hold the object).
	keySyncs map[string]map[cache.ObjectName]int
	// backlogs count keys waiting: queued, or held back for later.
	backlogs []func() int
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{
		failing:  map[string]map[cache.ObjectName]error{},
		syncs:    map[string]int{},
		busy:     map[string]time.Duration{},
		keySyncs: map[string]map[cache.ObjectName]int{},
	}
}

func (t *Tracker) start() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inflight++
}

// finish records the end of a sync that took took; retry says whether the
// key was queued again because it failed (with err).
func (t *Tracker) finish(loop string, key cache.ObjectName, took time.Duration, retry bool, err error) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inflight--
	t.syncs[loop]++
	t.busy[loop] += took
	counts := t.keySyncs[loop]
	if counts == nil {
		counts = map[cache.ObjectName]int{}
		t.keySyncs[loop] = counts
	}
	counts[key]++
	keys := t.failing[loop]
	if retry {
		if keys == nil {
			keys = map[cache.ObjectName]error{}
			t.failing[loop] = keys
		}
		keys[key] = err
		return
	}
	delete(keys, key)
}

// Idle reports whether no sync is running and no failed key waits for a
// retry.
func (t *Tracker) Idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight > 0 {
		return false
	}
	for _, keys := range t.failing {
		if len(keys) > 0 {
			return false
		}
	}
	return true
}

// Syncs returns how many syncs the named loop has run.
func (t *Tracker) Syncs(loop string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.syncs[loop]
}

// Busy returns how long the named loop's syncs took, in all (wall time:
// on a busy machine more than the CPU they used).
func (t *Tracker) Busy(loop string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.busy[loop]
}

// SyncsOf returns how many syncs of key the named loop has run (tests
// tell from it that a key they queued was synced, and how often).
func (t *Tracker) SyncsOf(loop string, key cache.ObjectName) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keySyncs[loop][key]
}

// Failing describes the keys whose last sync failed and that wait for a
// retry, sorted: "<loop> <namespace/name>: <error>".
func (t *Tracker) Failing() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for loop, keys := range t.failing {
		for key, err := range keys {
			out = append(out, fmt.Sprintf("%s %s: %v", loop, key, err))
		}
	}
	sort.Strings(out)
	return out
}

// Watch adds a count of keys waiting (a queue's length, wake-ups held for a
// delay) to Queued. Controllers given a Tracker register their own.
func (t *Tracker) Watch(backlog func() int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.backlogs = append(t.backlogs, backlog)
}

// Queued is the number of keys waiting in the watched queues.
func (t *Tracker) Queued() int {
	t.mu.Lock()
	backlogs := slices.Clone(t.backlogs)
	t.mu.Unlock()
	n := 0
	for _, b := range backlogs {
		n += b()
	}
	return n
}

// Resync queues, on demand, every object the controllers registered with
// it know of, as a full informer resync would (the benchmark measures what
// that costs). Controllers given one register at construction.
type Resync struct {
	mu  sync.Mutex
	fns []func()
}

// Add registers fn, which queues everything of one controller.
func (r *Resync) Add(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fns = append(r.fns, fn)
}

// Now queues everything; the keys are queued when it returns.
func (r *Resync) Now() {
	r.mu.Lock()
	fns := slices.Clone(r.fns)
	r.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
