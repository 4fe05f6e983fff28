package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// releaseTimeout bounds the release of the Lease on a graceful shutdown:
// the shutdown grace period plus this must fit in the pod's
// terminationGracePeriodSeconds (deploy/manager/deployment.yaml).
const releaseTimeout = 3 * time.Second

// errLostLease is returned by runLeading when the Lease was lost while
// leading.
var errLostLease = errors.New("lost the leader election Lease; stopped writing and exiting so that a fresh process competes again")

// election is what runLeading competes with.
type election struct {
	lock     resourcelock.Interface
	id       string
	name     string
	lease    time.Duration
	renew    time.Duration
	retry    time.Duration
	grace    time.Duration
	watchdog *leaderelection.HealthzAdaptor
	// fence, when set, is told when writing stops being allowed (the event
	// sink drops events from then on).
	fence *writeFence
}

// runLeading competes for the Lease and runs run while it leads, until
// one of two things happens:
//   - ctx is cancelled (SIGTERM): run's context is cancelled, the syncs in
//     progress may finish within the grace period, then, and only then,
//     the Lease is released so a standby takes over at once; nil is
//     returned.
//   - the Lease is lost (renewal failed for the renew deadline): the
//     syncs' contexts are cut off at once, so no request leaves after the
//     loss is known; the Lease is not released (another replica may hold
//     it by now) and errLostLease is returned, so the process exits and the
//     kubelet starts a fresh one that competes again.
//
// Unlike client-go's ReleaseOnCancel, which releases the Lease as soon as
// renewal stops, even before the controllers have heard of it, the Lease is
// released only after the writes have stopped.
func runLeading(ctx context.Context, e election, run func(ctx context.Context)) error {
	// The elector's own context is cancelled by runLeading only: while
	// leading, once the controllers have stopped.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	l := &leadership{election: e, run: run, ctx: ctx, stopElector: stopElector, stopped: make(chan struct{})}
	// Waiting for the Lease ends at once on a signal.
	defer context.AfterFunc(ctx, l.stopWaiting)()
	logger := klog.FromContext(ctx)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            e.lock,
		LeaseDuration:   e.lease,
		RenewDeadline:   e.renew,
		RetryPeriod:     e.retry,
		ReleaseOnCancel: false,
		Name:            e.name,
		WatchDog:        e.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: l.lead,
			OnStoppedLeading: func() {
				logger.Info("Not leading any more", "identity", e.id)
			},
			OnNewLeader: func(identity string) {
				if identity != e.id {
					logger.Info("Another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configure leader election: %w", err)
	}
	if e.watchdog != nil {
		e.watchdog.SetLeaderElection(elector)
	}
	logger.Info("Waiting for leadership", "lease", e.lock.Describe(), "identity", e.id)
	elector.Run(electorCtx)
	return l.end(electorCtx)
}

// leadership is one runLeading: what the elector's callbacks, the signal
// and the end of the election share.
type leadership struct {
	election
	run func(ctx context.Context)
	// ctx is the process's: cancelled on a signal.
	ctx         context.Context
	stopElector context.CancelFunc

	mu      sync.Mutex
	leading bool
	// stopped is closed once lead has returned, if it ran.
	stopped chan struct{}
	// lost says the Lease was lost while leading; release that the
	// controllers stopped within the grace period, so the Lease may be
	// handed over.
	lost, release atomic.Bool
}

// stopWaiting ends the wait for the Lease (on a signal); a leader stops by
// itself.
func (l *leadership) stopWaiting() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.leading {
		l.stopElector()
	}
}

// lead runs the controllers while the Lease is held (leaderCtx ends when
// it is lost), stopping them on a signal or cutting them off on the loss.
func (l *leadership) lead(leaderCtx context.Context) {
	defer l.stopElector()
	l.mu.Lock()
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		close(l.stopped)
		return
	}
	l.leading = true
	l.mu.Unlock()
	defer close(l.stopped)
	logger := klog.FromContext(l.ctx)
	logger.Info("Became leader; starting controllers", "identity", l.id)
	// leaderCtx ends when the Lease is lost (or after run, when
	// runLeading stops the elector): it fences the syncs. A signal only
	// stops new syncs.
	runCtx, cancel := context.WithCancel(workloop.WithFence(leaderCtx, leaderCtx))
	defer cancel()
	defer context.AfterFunc(l.ctx, cancel)()
	// lost cuts the syncs off and says so, once: from the AfterFunc the
	// moment the Lease is lost, or at the latest before lead returns (the
	// process may exit right after; an AfterFunc still on its way would
	// never write its line).
	var announce sync.Once
	lost := func() {
		announce.Do(func() {
			l.lost.Store(true)
			l.fence.close()
			logger.Error(nil, "Lost the leader election Lease; cutting the syncs off", "identity", l.id)
		})
	}
	defer context.AfterFunc(leaderCtx, func() {
		if l.ctx.Err() == nil {
			lost()
		}
	})()
	graceErr := waitWithGrace(runCtx, l.grace, l.run)
	if graceErr != nil {
		logger.Error(graceErr, "Controllers did not stop in time")
	}
	if leaderCtx.Err() != nil {
		// Lost while leading, unless a signal stopped us first.
		if l.ctx.Err() == nil {
			lost()
		}
		l.fence.close()
		return
	}
	l.fence.close()
	// Syncs still writing after the grace period: let the Lease expire
	// rather than hand over now.
	l.release.Store(graceErr == nil)
}

// end waits for the controllers once the elector has returned and
// releases the Lease after a graceful stop; errLostLease when it was lost.
func (l *leadership) end(electorCtx context.Context) error {
	logger := klog.FromContext(l.ctx)
	if electorCtx.Err() == nil {
		// Run ends by itself only when renewal failed, which means it
		// acquired the Lease and lead runs (or is about to): it stops the
		// controllers, cut off.
		<-l.stopped
		return errLostLease
	}
	l.mu.Lock()
	wasLeading := l.leading
	l.mu.Unlock()
	if wasLeading {
		// The controllers stop on their own (cut off, or within the
		// grace period).
		<-l.stopped
	}
	if l.lost.Load() {
		return errLostLease
	}
	if l.release.Load() {
		// Only now: the elector has stopped renewing (the lock is not
		// safe for concurrent use) and the controllers have stopped.
		if err := releaseLease(l.ctx, l.lock, l.id); err != nil {
			logger.Error(err, "Could not release the Lease; a standby takes over when it expires", "lease", l.lock.Describe())
			return nil
		}
		logger.Info("Released the Lease after the controllers stopped", "identity", l.id)
	}
	return nil
}

// releaseLease gives up the Lease if id still holds it: a record with no
// holder that expires in a second, as client-go's elector writes it.
func releaseLease(ctx context.Context, lock resourcelock.Interface, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return fmt.Errorf("read Lease %s: %w", lock.Describe(), err)
	}
	if rec.HolderIdentity != id {
		return nil
	}
	now := metav1.Now()
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	}); err != nil {
		return fmt.Errorf("release Lease %s: %w", lock.Describe(), err)
	}
	return nil
}

// writeFence is closed when this process may not write any more; nil is a
// fence that never closes.
type writeFence struct{ closed atomic.Bool }

func (f *writeFence) close() {
	if f != nil {
		f.closed.Store(true)
	}
}

func (f *writeFence) isClosed() bool { return f != nil && f.closed.Load() }

// errFenced is what the event sink answers once writing has stopped.
var errFenced = errors.New("not writing events: this replica no longer leads")

// fencedSink drops events once the fence is closed: an Event is a write
// too, and the broadcaster sends them after the sync that recorded them.
type fencedSink struct {
	record.EventSink
	fence *writeFence
}

func (s fencedSink) Create(e *corev1.Event) (*corev1.Event, error) {
	if s.fence.isClosed() {
		return nil, errFenced
	}
	return s.EventSink.Create(e)
}

func (s fencedSink) Update(e *corev1.Event) (*corev1.Event, error) {
	if s.fence.isClosed() {
		return nil, errFenced
	}
	return s.EventSink.Update(e)
}

func (s fencedSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	if s.fence.isClosed() {
		return nil, errFenced
	}
	return s.EventSink.Patch(e, data)
}
