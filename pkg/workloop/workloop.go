// Package workloop runs a controller's sync handler over the keys of a
// typed, rate-limited workqueue, with the retry and shutdown rules both
// controllers share.
package workloop

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/metrics"
)

// MaxRetries is how many times a key is retried after errors before it is
// dropped until its next event or resync. With the default controller rate
// limiter (5ms doubling per failure, capped at 1000s) the retries are spaced
// 5ms, 10ms, 20ms ... 82s apart: about 2m45s of retrying in all.
const MaxRetries = 15

// RetryAfter wraps an error the sync handler has already reported where a
// person looks (a condition and an event) and that keeps happening until
// something changes (a package whose pipeline fails to render, say), or
// nothing at all (err nil: a wait that is not a failure). The loop syncs
// the key again after d, on the handler's own backoff, for as long as it
// takes; it never drops the key, and a Tracker does not count it as work
// in hand: until d passes, nothing will change unless the world does (and
// an event then syncs the key at once).
func RetryAfter(d time.Duration, err error) error {
	return &retryAfter{after: d, err: err}
}

// RecheckAfter asks the loop to sync the key again after d because work
// on it is under way and only time will tell how it went (a created object
// not in the cache yet, say). Unlike RetryAfter, a Tracker counts the key
// as work in hand until that sync has run.
func RecheckAfter(d time.Duration) error {
	return &retryAfter{after: d, inHand: true}
}

type retryAfter struct {
	after time.Duration
	err   error
	// inHand: made by RecheckAfter.
	inHand bool
}

// inHand reports whether err is (or wraps) an error made by RecheckAfter.
func inHand(err error) bool {
	var r *retryAfter
	return errors.As(err, &r) && r.inHand
}

func (e *retryAfter) Error() string {
	if e.err == nil {
		return fmt.Sprintf("waiting %s", e.after)
	}
	return e.err.Error()
}

func (e *retryAfter) Unwrap() error { return e.err }

// retryDelay returns the delay of an error made by RetryAfter.
func retryDelay(err error) (time.Duration, bool) {
	var r *retryAfter
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// IsRetryAfter reports whether err is (or wraps) an error made by
// RetryAfter.
func IsRetryAfter(err error) bool {
	_, ok := retryDelay(err)
	return ok
}

// Queue is the workqueue type both controllers use: keys are namespace/name.
type Queue = workqueue.TypedRateLimitingInterface[cache.ObjectName]

// NewQueue makes a rate-limited queue with the default controller rate
// limiter, reporting its metrics under name.
func NewQueue(name string, m *metrics.Metrics) Queue {
	cfg := workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name}
	if m != nil {
		cfg.MetricsProvider = m.QueueMetricsProvider()
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](), cfg)
}

// Loop runs Sync for the keys of Queue on a number of workers.
type Loop struct {
	// Name of the controller, for logs and metrics.
	Name string
	// Queue holds the keys to sync.
	Queue Queue
	// Sync reconciles one key. It returns nil when done, an error to retry
	// with backoff. A Conflict error is retried without being logged as an
	// error: it only means the cache was behind.
	Sync func(ctx context.Context, key cache.ObjectName) error
	// Metrics, when set, records each sync.
	Metrics *metrics.Metrics
	// Tracker, when set, follows the syncs in hand.
	Tracker *Tracker
	// Synced are the informer registrations whose caches must have synced
	// before the first sync (WaitAndRun, HasSynced).
	Synced []cache.InformerSynced
}

// NewLoop is a controller's Loop: named name, on a new queue (NewQueue),
// syncing with sync. tracker, when set, follows its syncs and its queue.
func NewLoop(name string, m *metrics.Metrics, tracker *Tracker, sync func(ctx context.Context, key cache.ObjectName) error) *Loop {
	l := &Loop{Name: name, Queue: NewQueue(name, m), Sync: sync, Metrics: m, Tracker: tracker}
	if tracker != nil {
		tracker.Watch(l.Queue.Len)
	}
	return l
}

// Watch registers handler with informer and adds the registration to
// Synced; what names the watched kind in the error.
func (l *Loop) Watch(informer cache.SharedIndexInformer, what string, handler cache.ResourceEventHandler) error {
	reg, err := informer.AddEventHandler(handler)
	if err != nil {
		return fmt.Errorf("watch %s: %w", what, err)
	}
	l.Synced = append(l.Synced, reg.HasSynced)
	return nil
}

// HasSynced reports whether every cache in Synced has synced.
func (l *Loop) HasSynced() bool {
	for _, synced := range l.Synced {
		if !synced() {
			return false
		}
	}
	return true
}

// WaitAndRun waits for the caches in Synced, then runs the workers as Run
// does. If ctx ends first, it shuts the queue down and says so.
func (l *Loop) WaitAndRun(ctx context.Context, workers int) error {
	// Run names the controller in the logs of the syncs: ctx is passed on
	// as it came, not with the name added a second time.
	logger := klog.FromContext(ctx).WithValues("controller", l.Name)
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForNamedCacheSync(l.Name, ctx.Done(), l.Synced...) {
		l.Queue.ShutDown()
		return fmt.Errorf("%s: informer caches did not sync before shutdown", l.Name)
	}
	l.Run(ctx, workers)
	return nil
}

// Enqueue adds the key of an informer's object (or of the last state of a
// deleted one) to the queue; what names the kind in the error an object
// without a key gets.
func (l *Loop) Enqueue(obj any, what string) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("enqueue %s: %w", what, err))
		return
	}
	l.Queue.Add(key)
}

// fenceKey is the context key of WithFence.
type fenceKey struct{}

// WithFence returns a copy of ctx that makes the Loops run with it cut
// their syncs off when fence ends. Cancelling ctx itself only stops new
// syncs and lets those in progress finish; a fence is for the moment when
// writing at all has become wrong (the leader election Lease is lost:
// another replica may be leading already).
func WithFence(ctx, fence context.Context) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// Run starts workers and blocks until ctx is cancelled. Then it stops
// handing out keys, lets the syncs in progress finish (they run on a context
// that is not cancelled with ctx, so a half-done write is not cut off, but
// that ends with ctx's fence, see WithFence), shuts the queue down and
// returns.
func (l *Loop) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", l.Name)
	logger.Info("Starting workers", "count", workers)

	syncCtx := klog.NewContext(context.WithoutCancel(ctx), logger)
	if fence, ok := ctx.Value(fenceKey{}).(context.Context); ok {
		var cutOff context.CancelFunc
		syncCtx, cutOff = context.WithCancel(syncCtx)
		defer cutOff()
		defer context.AfterFunc(fence, cutOff)()
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l.processNext(ctx, syncCtx) {
			}
		}()
	}
	<-ctx.Done()
	logger.Info("Stopping workers; waiting for syncs in progress")
	// ShutDown wakes the workers blocked in Get; processNext sees ctx is
	// done and returns the key unprocessed.
	l.Queue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
}

func (l *Loop) processNext(ctx, syncCtx context.Context) bool {
	var err error
	key, shutdown := l.Queue.Get()
	if shutdown {
		return false
	}
	// The tracker counts the sync as running from here until the key is
	// Done, so a key re-added meanwhile is back in the queue before the
	// tracker can report the loop idle.
	l.Tracker.start()
	retry := false
	start := time.Now()
	defer func() {
		l.Queue.Done(key)
		// A scheduled retry is not work in hand; a recheck is.
		l.Tracker.finish(l.Name, key, time.Since(start), retry && (!IsRetryAfter(err) || inHand(err)), err)
	}()
	if ctx.Err() != nil {
		return false
	}

	// Labelled with the loop's name, a CPU profile tells each loop's
	// syncs apart (go tool pprof -tagfocus loop=NAME).
	pprof.Do(syncCtx, pprof.Labels("loop", l.Name), func(syncCtx context.Context) {
		err = l.Sync(syncCtx, key)
	})
	logger := klog.FromContext(syncCtx).WithValues("key", key.String())
	result := metrics.ResultSuccess
	switch {
	case err == nil:
		l.Queue.Forget(key)
	case apierrors.IsConflict(err):
		result = metrics.ResultConflict
		logger.V(2).Info("Conflict; requeueing", "err", err)
		retry = true
		l.Queue.AddRateLimited(key)
	case IsRetryAfter(err):
		// Reported in the object's status already (or no failure at
		// all): the handler chose when to try again; never drop it.
		d, _ := retryDelay(err)
		if errors.Unwrap(err) != nil {
			result = metrics.ResultError
			logger.V(2).Info("Sync failed; reported, retrying later", "err", err, "after", d)
		}
		retry = true
		l.Queue.Forget(key)
		l.Queue.AddAfter(key, d)
	case l.Queue.NumRequeues(key) < MaxRetries:
		result = metrics.ResultError
		logger.V(2).Info("Sync failed; retrying", "err", err, "retries", l.Queue.NumRequeues(key))
		retry = true
		l.Queue.AddRateLimited(key)
	default:
		result = metrics.ResultError
		logger.Error(err, "Sync failed too often; dropping the key until its next event or resync", "retries", MaxRetries)
		l.Queue.Forget(key)
	}
	l.Metrics.ObserveSync(l.Name, result, time.Since(start))
	return true
}
