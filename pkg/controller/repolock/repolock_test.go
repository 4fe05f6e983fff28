package repolock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWritesIntoOneRepositoryNeverOverlap runs many writers on two
// repositories: within a repository at most one holds the lock at a time.
func TestWritesIntoOneRepositoryNeverOverlap(t *testing.T) {
	l := New()
	var inA, inB, maxA, maxB atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		repo, in, max := "a", &inA, &maxA
		if i%2 == 1 {
			repo, in, max = "b", &inB, &maxB
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				unlock, err := l.Lock(context.Background(), "ns", repo)
				if err != nil {
					t.Error(err)
					return
				}
				n := in.Add(1)
				for {
					m := max.Load()
					if n <= m || max.CompareAndSwap(m, n) {
						break
					}
				}
				in.Add(-1)
				unlock()
			}
		}()
	}
	wg.Wait()
	if maxA.Load() != 1 || maxB.Load() != 1 {
		t.Errorf("most writers inside at once: repository a %d, b %d; want 1 each", maxA.Load(), maxB.Load())
	}
	if n := l.Held(); n != 0 {
		t.Errorf("%d locks left after every writer finished; want 0", n)
	}
}

// TestOtherRepositoriesProceed: a held lock on one repository does not
// delay a write into another (same name, other namespace included).
func TestOtherRepositoriesProceed(t *testing.T) {
	l := New()
	unlock, err := l.Lock(context.Background(), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for _, k := range []struct{ ns, repo string }{{"ns", "b"}, {"other", "a"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		u, err := l.Lock(ctx, k.ns, k.repo)
		cancel()
		if err != nil {
			t.Fatalf("lock %s/%s while ns/a is held: %v", k.ns, k.repo, err)
		}
		u()
	}
}

// TestWaiterGivesUpWithItsContext: a writer waiting for a busy repository
// returns the context's error when the context ends, and leaves no lock
// behind; the holder's unlock is idempotent.
func TestWaiterGivesUpWithItsContext(t *testing.T) {
	l := New()
	unlock, err := l.Lock(context.Background(), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.Lock(ctx, "ns", "a")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: got %v, want context.Canceled", err)
	}
	unlock()
	unlock()
	if n := l.Held(); n != 0 {
		t.Errorf("%d locks left; want 0", n)
	}
	u, err := l.Lock(context.Background(), "ns", "a")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	u()
}
