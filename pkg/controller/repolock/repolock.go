// Package repolock serialises the controllers' writes into one Porch
// repository. Porch commits every write to the repository's git branch; when
// two writes into one repository overlap, one of them can be lost after
// Porch answered it (a created draft vanishes, its name then blocked by a
// "non-fast-forward" error, or it comes back without its labels,
// annotations and owner references). Writes into different repositories do
// not interfere and proceed in parallel.
package repolock

import (
	"context"
	"sync"
)

// Locks hands out one lock per repository (namespace and name). The zero
// value is not usable; use New. Safe for concurrent use.
type Locks struct {
	mu    sync.Mutex
	locks map[key]*lock
}

type key struct{ namespace, repository string }

// lock is a one-slot semaphore, so that a waiter can give up when its
// context ends; refs counts holders and waiters, and the entry goes when
// nobody needs it any more.
type lock struct {
	slot chan struct{}
	refs int
}

// New returns an empty set of locks.
func New() *Locks {
	return &Locks{locks: map[key]*lock{}}
}

// Lock waits until no other write into the repository is in progress, or
// until ctx ends (then it returns ctx's error). The caller must call the
// returned function once its write has been answered.
func (l *Locks) Lock(ctx context.Context, namespace, repository string) (unlock func(), err error) {
	k := key{namespace, repository}
	l.mu.Lock()
	lk := l.locks[k]
	if lk == nil {
		lk = &lock{slot: make(chan struct{}, 1)}
		l.locks[k] = lk
	}
	lk.refs++
	l.mu.Unlock()

	select {
	case lk.slot <- struct{}{}:
		var once sync.Once
		return func() {
			once.Do(func() {
				<-lk.slot
				l.release(k, lk)
			})
		}, nil
	case <-ctx.Done():
		l.release(k, lk)
		return nil, ctx.Err()
	}
}

func (l *Locks) release(k key, lk *lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lk.refs--
	if lk.refs == 0 {
		delete(l.locks, k)
	}
}

// Waiting is how many writers wait for the repository's lock (the holder
// aside); for tests and metrics.
func (l *Locks) Waiting(namespace, repository string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	lk := l.locks[key{namespace, repository}]
	if lk == nil {
		return 0
	}
	return lk.refs - len(lk.slot)
}

// Held is how many repositories have a write in progress or waiting; for
// tests and metrics.
func (l *Locks) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
