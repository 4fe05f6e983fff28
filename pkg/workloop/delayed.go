package workloop

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// Delayed adds keys to a queue after a delay, coalescing: a key already
// waiting is not scheduled again, so the events of a burst cost one add at
// the end of the first one's delay. Unlike the queue's own AddAfter it
// says how many keys wait (Pending), so that "nothing left to do" can be
// told apart from "something will be queued in a moment".
type Delayed struct {
	queue Queue

	mu      sync.Mutex
	pending map[cache.ObjectName]struct{}
}

// NewDelayed makes a Delayed adding to queue.
func NewDelayed(queue Queue) *Delayed {
	return &Delayed{queue: queue, pending: map[cache.ObjectName]struct{}{}}
}

// AddAfter adds key to the queue after d, unless it waits already.
func (w *Delayed) AddAfter(key cache.ObjectName, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[key]; ok {
		return
	}
	w.pending[key] = struct{}{}
	time.AfterFunc(d, func() {
		// Queued and no longer pending in one step: an event coalesced
		// into this add happened before it, so the sync the add causes
		// sees it; one after it schedules an add of its own.
		w.mu.Lock()
		defer w.mu.Unlock()
		w.queue.Add(key)
		delete(w.pending, key)
	})
}

// Pending is the number of keys waiting for their delay to pass.
func (w *Delayed) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}
