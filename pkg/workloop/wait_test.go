package workloop

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestHasSyncedNeedsEveryCache(t *testing.T) {
	var second atomic.Bool
	l := &Loop{Synced: []cache.InformerSynced{func() bool { return true }, second.Load}}
	if l.HasSynced() {
		t.Error("synced while one cache is not")
	}
	second.Store(true)
	if !l.HasSynced() {
		t.Error("not synced with every cache synced")
	}
}

// TestWaitAndRunGivesUpWithItsContext: caches that never sync make
// WaitAndRun return an error naming the controller once ctx ends, with the
// queue shut down (no sync ran).
func TestWaitAndRunGivesUpWithItsContext(t *testing.T) {
	var syncs atomic.Int32
	l := &Loop{Name: "things", Queue: NewQueue("things-wait-test", nil),
		Sync:   func(context.Context, cache.ObjectName) error { syncs.Add(1); return nil },
		Synced: []cache.InformerSynced{func() bool { return false }}}
	l.Queue.Add(cache.ObjectName{Namespace: "ns", Name: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := l.WaitAndRun(ctx, 1)
	if err == nil || !strings.Contains(err.Error(), "things: informer caches did not sync") {
		t.Errorf("WaitAndRun = %v, want the controller's caches named", err)
	}
	if !l.Queue.ShuttingDown() {
		t.Error("the queue is still up")
	}
	if n := syncs.Load(); n != 0 {
		t.Errorf("%d syncs before the caches synced", n)
	}
}

func TestEnqueueTakesTombstones(t *testing.T) {
	l := &Loop{Queue: NewQueue("things-enqueue-test", nil)}
	defer l.Queue.ShutDown()
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	l.Enqueue(obj, "thing")
	l.Enqueue(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: obj}, "thing")
	l.Enqueue("not an object", "thing")
	var got []string
	for l.Queue.Len() > 0 {
		k, _ := l.Queue.Get()
		got = append(got, k.String())
		l.Queue.Done(k)
	}
	if strings.Join(got, ",") != "ns/a,ns/b" {
		t.Errorf("queued %v, want ns/a and the tombstone's key ns/b", got)
	}
}
