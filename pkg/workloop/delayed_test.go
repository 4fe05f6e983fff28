package workloop

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

// TestDelayedCoalesces: a burst of adds of one key is one add after the
// delay; while it waits it is pending, and afterwards it is queued.
func TestDelayedCoalesces(t *testing.T) {
	q := NewQueue("test", nil)
	defer q.ShutDown()
	d := NewDelayed(q)
	a, b := cache.ObjectName{Namespace: "ns", Name: "a"}, cache.ObjectName{Namespace: "ns", Name: "b"}
	for range 100 {
		d.AddAfter(a, 50*time.Millisecond)
	}
	d.AddAfter(b, time.Hour)
	if got := d.Pending(); got != 2 {
		t.Fatalf("pending %d, want 2", got)
	}
	if q.Len() != 0 {
		t.Fatalf("queued %d before the delay, want 0", q.Len())
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.Pending() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("a still pending after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if q.Len() != 1 {
		t.Fatalf("queued %d, want a alone once", q.Len())
	}
	if key, _ := q.Get(); key != a {
		t.Fatalf("queued %v, want %v", key, a)
	}
	q.Done(a)
	// Once added, the key can wait again.
	d.AddAfter(a, time.Hour)
	if got := d.Pending(); got != 2 {
		t.Errorf("pending %d after a new add, want 2", got)
	}
}
