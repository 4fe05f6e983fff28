package workloop

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

// TestTracker: a sync in progress and a failed key waiting for its retry
// keep the tracker busy; a success or a dropped key frees it; syncs are
// counted per loop and per key.
func TestTracker(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	tr := NewTracker()
	if !tr.Idle() {
		t.Fatal("new tracker is not idle")
	}
	q, _ := newTestQueue(t, nil)
	var idleDuringSync bool
	fail := true
	l := &Loop{Name: testLoop, Queue: q, Tracker: tr, Sync: func(context.Context, cache.ObjectName) error {
		idleDuringSync = tr.Idle()
		if fail {
			return errors.New("boom")
		}
		return nil
	}}

	q.Add(keyA)
	l.processNext(ctx, ctx)
	if idleDuringSync {
		t.Error("tracker idle while a sync runs")
	}
	if tr.Idle() {
		t.Error("tracker idle while a failed key waits for its retry")
	}
	fail = false
	key, _ := q.Get() // the rate-limited retry
	q.Done(key)
	q.Add(keyA)
	l.processNext(ctx, ctx)
	if !tr.Idle() {
		t.Error("tracker busy after the retry succeeded")
	}
	if got := tr.Syncs(testLoop); got != 2 {
		t.Errorf("Syncs = %d, want 2", got)
	}
	if got := tr.Busy(testLoop); got <= 0 {
		t.Errorf("Busy = %v after two syncs, want their time", got)
	}
	if got := tr.Busy("other"); got != 0 {
		t.Errorf("Busy of a loop that never synced = %v, want 0", got)
	}
	if got := tr.SyncsOf(testLoop, keyA); got != 2 {
		t.Errorf("SyncsOf(%s) = %d, want 2", keyA, got)
	}
	if got := tr.SyncsOf(testLoop, keyB); got != 0 {
		t.Errorf("SyncsOf(%s) = %d before any sync of it, want 0", keyB, got)
	}
	if got := tr.SyncsOf("other", keyA); got != 0 {
		t.Errorf("SyncsOf another loop's key = %d, want 0", got)
	}

	// A key that fails past MaxRetries is dropped: nothing waits for it.
	fail = true
	for i := 0; i < MaxRetries; i++ {
		l.Queue.AddRateLimited(keyB)
		key, _ := q.Get()
		q.Done(key)
	}
	q.Add(keyB)
	l.processNext(ctx, ctx)
	if !tr.Idle() {
		t.Errorf("tracker busy after a key was dropped (requeues %d)", q.NumRequeues(keyB))
	}

	var nilTracker *Tracker
	nilTracker.start()
	nilTracker.finish(testLoop, keyC, time.Millisecond, true, nil)
}

// TestTrackerBusyUntilDone: a key re-added while its sync runs is back in
// the queue before the tracker reports the loop idle.
func TestTrackerBusyUntilDone(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	tr := NewTracker()
	q, _ := newTestQueue(t, nil)
	l := &Loop{Name: testLoop, Queue: q, Tracker: tr, Sync: func(context.Context, cache.ObjectName) error {
		q.Add(keyA) // an event for the key while it is being synced
		return nil
	}}
	q.Add(keyA)
	l.processNext(ctx, ctx)
	if tr.Idle() && q.Len() == 0 {
		t.Error("idle with an empty queue although the key was re-added during its sync")
	}
}

// TestTrackerRecheckIsWorkInHand: a key the handler asked to recheck
// (RecheckAfter: work under way) keeps the tracker busy until that sync
// has run; a paced retry (RetryAfter) does not.
func TestTrackerRecheckIsWorkInHand(t *testing.T) {
	ctx := context.Background()
	tr := NewTracker()
	q, _ := newTestQueue(t, nil)
	var result error
	l := &Loop{Name: testLoop, Queue: q, Tracker: tr, Sync: func(context.Context, cache.ObjectName) error { return result }}

	result = RecheckAfter(time.Millisecond)
	q.Add(keyA)
	l.processNext(ctx, ctx)
	if tr.Idle() {
		t.Error("tracker idle while a key waits for its recheck")
	}
	result = nil
	l.processNext(ctx, ctx) // the recheck, once due
	if !tr.Idle() {
		t.Error("tracker busy after the recheck ran")
	}

	result = RetryAfter(time.Hour, errors.New("reported"))
	q.Add(keyA)
	l.processNext(ctx, ctx)
	if !tr.Idle() {
		t.Error("tracker busy while a key waits for a paced retry")
	}
}
