package workloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"

	"github.com/porch-variants/variant-controller/pkg/metrics"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

const testLoop = "test"

var (
	keyA = cache.ObjectName{Namespace: "ns", Name: "a"}
	keyB = cache.ObjectName{Namespace: "ns", Name: "b"}
	keyC = cache.ObjectName{Namespace: "other", Name: "c"}
)

// countingLimiter is a fast exponential limiter (1ms doubling, capped at
// 10ms) that counts how often the queue asked it for a delay, that is how
// often a key was added rate-limited.
type countingLimiter struct {
	workqueue.TypedRateLimiter[cache.ObjectName]
	whens atomic.Int32
}

func (l *countingLimiter) When(key cache.ObjectName) time.Duration {
	l.whens.Add(1)
	return l.TypedRateLimiter.When(key)
}

// recordingQueue records the calls that decide a key's fate.
type recordingQueue struct {
	Queue
	mu    sync.Mutex
	calls []string
}

func (q *recordingQueue) record(op string, key cache.ObjectName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, op+" "+key.String())
}

func (q *recordingQueue) Add(key cache.ObjectName) { q.record("Add", key); q.Queue.Add(key) }
func (q *recordingQueue) AddAfter(key cache.ObjectName, d time.Duration) {
	q.record("AddAfter", cache.ObjectName{Namespace: key.Namespace, Name: key.Name + " " + d.String()})
	q.Queue.AddAfter(key, d)
}
func (q *recordingQueue) AddRateLimited(key cache.ObjectName) {
	q.record("AddRateLimited", key)
	q.Queue.AddRateLimited(key)
}
func (q *recordingQueue) Forget(key cache.ObjectName) { q.record("Forget", key); q.Queue.Forget(key) }

func (q *recordingQueue) takeCalls() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	c := q.calls
	q.calls = nil
	return c
}

func newTestQueue(t *testing.T, m *metrics.Metrics) (*recordingQueue, *countingLimiter) {
	t.Helper()
	limiter := &countingLimiter{TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](
		time.Millisecond, 10*time.Millisecond)}
	cfg := workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: testLoop}
	if m != nil {
		cfg.MetricsProvider = m.QueueMetricsProvider()
	}
	q := &recordingQueue{Queue: workqueue.NewTypedRateLimitingQueueWithConfig[cache.ObjectName](limiter, cfg)}
	t.Cleanup(q.ShutDown)
	return q, limiter
}

func conflict() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "config.porch.kpt.dev", Resource: "packagevariants"}, "a", errors.New("the object has been modified"))
}

// metricValue reads a counter or gauge from the registry; -1 when absent.
func metricValue(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, mt := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range mt.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metric
				}
			}
			switch {
			case mt.GetCounter() != nil:
				return mt.GetCounter().GetValue()
			case mt.GetGauge() != nil:
				return mt.GetGauge().GetValue()
			case mt.GetHistogram() != nil:
				return float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

func syncCount(t *testing.T, m *metrics.Metrics, result string) float64 {
	t.Helper()
	v := metricValue(t, m, metrics.Namespace+"_sync_total", map[string]string{"controller": testLoop, "result": result})
	if v < 0 {
		return 0
	}
	return v
}

// TestProcessNext drives one key through processNext per case and checks
// what the loop did with it: forgotten, requeued rate-limited or dropped.
func TestProcessNext(t *testing.T) {
	cases := map[string]struct {
		priorFailures int
		err           error
		wantCalls     []string
		wantRequeues  int
		wantResult    string
	}{
		"success forgets the key": {
			wantCalls: []string{"Forget ns/a"}, wantResult: metrics.ResultSuccess,
		},
		"success after failures resets the backoff": {
			priorFailures: 3,
			wantCalls:     []string{"Forget ns/a"}, wantResult: metrics.ResultSuccess,
		},
		"first error is retried rate-limited": {
			err:       errors.New("boom"),
			wantCalls: []string{"AddRateLimited ns/a"}, wantRequeues: 1, wantResult: metrics.ResultError,
		},
		"last allowed retry is still requeued": {
			priorFailures: MaxRetries - 1, err: errors.New("boom"),
			wantCalls: []string{"AddRateLimited ns/a"}, wantRequeues: MaxRetries, wantResult: metrics.ResultError,
		},
		"error after MaxRetries retries drops the key": {
			priorFailures: MaxRetries, err: errors.New("boom"),
			wantCalls: []string{"Forget ns/a"}, wantRequeues: 0, wantResult: metrics.ResultError,
		},
		"conflict is requeued rate-limited": {
			err:       conflict(),
			wantCalls: []string{"AddRateLimited ns/a"}, wantRequeues: 1, wantResult: metrics.ResultConflict,
		},
		"wrapped conflict is requeued as a conflict": {
			err:       fmt.Errorf("update PackageRevision: %w", conflict()),
			wantCalls: []string{"AddRateLimited ns/a"}, wantRequeues: 1, wantResult: metrics.ResultConflict,
		},
		"conflict is requeued even after MaxRetries": {
			priorFailures: MaxRetries, err: conflict(),
			wantCalls: []string{"AddRateLimited ns/a"}, wantRequeues: MaxRetries + 1, wantResult: metrics.ResultConflict,
		},
		"reported error is retried when the handler says": {
			err:       RetryAfter(time.Minute, errors.New("render failed")),
			wantCalls: []string{"Forget ns/a", "AddAfter ns/a 1m0s"}, wantResult: metrics.ResultError,
		},
		"reported error is never dropped": {
			priorFailures: 3 * MaxRetries, err: fmt.Errorf("sync: %w", RetryAfter(time.Second, errors.New("render failed"))),
			wantCalls: []string{"Forget ns/a", "AddAfter ns/a 1s"}, wantResult: metrics.ResultError,
		},
		"a wait is no failure": {
			err:       RetryAfter(time.Second, nil),
			wantCalls: []string{"Forget ns/a", "AddAfter ns/a 1s"}, wantResult: metrics.ResultSuccess,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			m := metrics.New()
			q, limiter := newTestQueue(t, m)
			for i := 0; i < tc.priorFailures; i++ {
				limiter.TypedRateLimiter.When(keyA)
			}
			q.Add(keyA)
			q.takeCalls()
			var got []cache.ObjectName
			l := &Loop{Name: testLoop, Queue: q, Metrics: m, Sync: func(_ context.Context, key cache.ObjectName) error {
				got = append(got, key)
				return tc.err
			}}
			if !l.processNext(ctx, ctx) {
				t.Fatal("processNext returned false on a running queue")
			}
			if diff := cmp.Diff([]cache.ObjectName{keyA}, got); diff != "" {
				t.Errorf("synced keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, q.takeCalls()); diff != "" {
				t.Errorf("queue calls (-want +got):\n%s", diff)
			}
			if n := q.NumRequeues(keyA); n != tc.wantRequeues {
				t.Errorf("NumRequeues = %d, want %d", n, tc.wantRequeues)
			}
			for _, r := range []string{metrics.ResultSuccess, metrics.ResultConflict, metrics.ResultError} {
				want := 0.0
				if r == tc.wantResult {
					want = 1
				}
				if got := syncCount(t, m, r); got != want {
					t.Errorf("sync_total{result=%q} = %v, want %v", r, got, want)
				}
			}
		})
	}
}

// TestReportedFailureIsNotWorkInHand: a key whose sync failed with a
// reported error waits for its retry, but the Tracker calls the loop idle
// (variantctl settles on it); an unreported failure keeps it busy.
func TestReportedFailureIsNotWorkInHand(t *testing.T) {
	cases := map[string]struct {
		err      error
		wantIdle bool
	}{
		"reported failure":   {err: RetryAfter(time.Minute, errors.New("render failed")), wantIdle: true},
		"unreported failure": {err: errors.New("boom"), wantIdle: false},
		"success":            {wantIdle: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			q, _ := newTestQueue(t, nil)
			tracker := NewTracker()
			// A key that failed unreported before: a reported failure
			// or a success must clear it.
			tracker.start()
			tracker.finish(testLoop, keyA, time.Millisecond, true, nil)
			q.Add(keyA)
			l := &Loop{Name: testLoop, Queue: q, Tracker: tracker, Sync: func(context.Context, cache.ObjectName) error { return tc.err }}
			l.processNext(ctx, ctx)
			if got := tracker.Idle(); got != tc.wantIdle {
				t.Errorf("Idle() = %v, want %v", got, tc.wantIdle)
			}
		})
	}
	if !IsRetryAfter(RetryAfter(time.Second, nil)) {
		t.Error("a wait is not recognised")
	}
}

// syncUntilSucceeded runs l with one worker, queues keyA, waits until the
// sync closes succeeded (what says for what) and then until the queue has
// forgotten keyA's failures.
func syncUntilSucceeded(t *testing.T, ctx context.Context, l *Loop, q *recordingQueue, succeeded chan struct{}, what string) {
	t.Helper()
	runLoop(t, ctx, l, 1)
	q.Add(keyA)
	ctrlfixture.Receive(t, succeeded, what)
	poll(t, ctx, "key forgotten after success", func() bool { return q.NumRequeues(keyA) == 0 })
}

// cancelledLoop is a loop with keyA queued whose Sync fails the test (when
// says when it was called), and a context derived from ctx, already
// cancelled.
func cancelledLoop(t *testing.T, ctx context.Context, when string) (context.Context, *recordingQueue, *Loop) {
	t.Helper()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	q, _ := newTestQueue(t, nil)
	q.Add(keyA)
	l := &Loop{Name: testLoop, Queue: q, Sync: func(context.Context, cache.ObjectName) error {
		t.Error("Sync called " + when)
		return nil
	}}
	return cancelled, q, l
}

// TestProcessNextAfterCancelDoesNotSync: a worker that gets a key after ctx
// is cancelled returns it unsynced and marks it done.
func TestProcessNextAfterCancelDoesNotSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cancelled, q, l := cancelledLoop(t, ctx, "after the context was cancelled")
	if l.processNext(cancelled, ctx) {
		t.Error("processNext returned true after the context was cancelled")
	}
	// The key must have been marked done: re-adding it queues it again.
	q.Add(keyA)
	if n := q.Len(); n != 1 {
		t.Errorf("queue length after re-adding = %d, want 1 (key left in processing?)", n)
	}
}

func TestProcessNextOnShutDownQueue(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	q, _ := newTestQueue(t, nil)
	q.ShutDown()
	l := &Loop{Name: testLoop, Queue: q, Sync: func(context.Context, cache.ObjectName) error {
		t.Error("Sync called on a shut down queue")
		return nil
	}}
	if l.processNext(ctx, ctx) {
		t.Error("processNext returned true on a shut down queue")
	}
}

// runLoop starts l.Run in the background and returns a function that
// cancels it and waits for Run to return.
func runLoop(t *testing.T, ctx context.Context, l *Loop, workers int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, workers)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after the context was cancelled")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func poll(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestRunSyncsAddedKeys(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	q, _ := newTestQueue(t, nil)
	synced := make(chan cache.ObjectName, 10)
	l := &Loop{Name: testLoop, Queue: q, Sync: func(_ context.Context, key cache.ObjectName) error {
		synced <- key
		return nil
	}}
	runLoop(t, ctx, l, 2)

	want := map[cache.ObjectName]bool{keyA: true, keyB: true, keyC: true}
	for k := range want {
		q.Add(k)
	}
	for len(want) > 0 {
		k := ctrlfixture.Receive(t, synced, "keys to be synced")
		if !want[k] {
			t.Fatalf("unexpected or repeated sync of %s", k)
		}
		delete(want, k)
	}
}

func TestRunUsesTheWorkers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	q, _ := newTestQueue(t, nil)
	started := make(chan cache.ObjectName, 2)
	release := make(chan struct{})
	l := &Loop{Name: testLoop, Queue: q, Sync: func(_ context.Context, key cache.ObjectName) error {
		started <- key
		<-release
		return nil
	}}
	stop := runLoop(t, ctx, l, 2)
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // runs before the cleanup that stops the loop
	q.Add(keyA)
	q.Add(keyB)
	// Both syncs block until released: they only both start if two workers run.
	ctrlfixture.Receive(t, started, "first sync to start")
	ctrlfixture.Receive(t, started, "second sync to start while the first is running")
	unblock()
	stop()
}

func TestRunRetriesErrorsWithBackoffThenForgets(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	m := metrics.New()
	q, limiter := newTestQueue(t, m)
	const failures = 3
	var mu sync.Mutex
	var seenRequeues []int
	succeeded := make(chan struct{})
	l := &Loop{Name: testLoop, Queue: q, Metrics: m, Sync: func(_ context.Context, key cache.ObjectName) error {
		mu.Lock()
		defer mu.Unlock()
		seenRequeues = append(seenRequeues, q.NumRequeues(key))
		if len(seenRequeues) <= failures {
			return errors.New("transient")
		}
		close(succeeded)
		return nil
	}}
	syncUntilSucceeded(t, ctx, l, q, succeeded, "the sync to succeed after retries")

	mu.Lock()
	defer mu.Unlock()
	// Each retry went through the rate limiter, one more failure each time.
	if diff := cmp.Diff([]int{0, 1, 2, 3}, seenRequeues); diff != "" {
		t.Errorf("NumRequeues seen by each sync (-want +got):\n%s", diff)
	}
	if n := limiter.whens.Load(); n != failures {
		t.Errorf("rate limiter consulted %d times, want %d", n, failures)
	}
	poll(t, ctx, "sync metrics recorded", func() bool { return syncCount(t, m, metrics.ResultSuccess) == 1 })
	if got := syncCount(t, m, metrics.ResultError); got != failures {
		t.Errorf("sync_total{result=error} = %v, want %d", got, failures)
	}
}

func TestRunDropsKeyAfterMaxRetries(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	q, limiter := newTestQueue(t, nil)
	var calls atomic.Int32
	barrier := make(chan struct{})
	l := &Loop{Name: testLoop, Queue: q, Sync: func(_ context.Context, key cache.ObjectName) error {
		if key == keyB {
			close(barrier)
			return nil
		}
		calls.Add(1)
		return errors.New("permanent")
	}}
	runLoop(t, ctx, l, 1)
	q.Add(keyA)
	// The first sync plus MaxRetries retries, then the key is forgotten.
	poll(t, ctx, "key dropped after MaxRetries", func() bool {
		return calls.Load() == MaxRetries+1 && q.NumRequeues(keyA) == 0
	})
	// Sync another key on the single worker: a requeued keyA would be due
	// within the 10ms backoff cap; the barrier sync proves the worker
	// moved on.
	q.Add(keyB)
	ctrlfixture.Receive(t, barrier, "another key to be synced after the drop")
	if n := calls.Load(); n != MaxRetries+1 {
		t.Errorf("sync called %d times for the failing key, want %d", n, MaxRetries+1)
	}
	if n := limiter.whens.Load(); n != MaxRetries {
		t.Errorf("key requeued rate-limited %d times, want %d", n, MaxRetries)
	}
	queueCalls := q.takeCalls()
	forgets := 0
	for _, c := range queueCalls {
		if c == "Forget ns/a" {
			forgets++
		}
	}
	if forgets != 1 {
		t.Errorf("key forgotten %d times, want exactly once (on drop); calls: %v", forgets, queueCalls)
	}
}

func TestRunRequeuesConflicts(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	m := metrics.New()
	q, limiter := newTestQueue(t, m)
	var calls atomic.Int32
	succeeded := make(chan struct{})
	l := &Loop{Name: testLoop, Queue: q, Metrics: m, Sync: func(_ context.Context, key cache.ObjectName) error {
		if calls.Add(1) == 1 {
			return conflict()
		}
		close(succeeded)
		return nil
	}}
	syncUntilSucceeded(t, ctx, l, q, succeeded, "the sync to succeed after a conflict")
	if n := limiter.whens.Load(); n != 1 {
		t.Errorf("rate limiter consulted %d times, want 1", n)
	}
	poll(t, ctx, "sync metrics recorded", func() bool { return syncCount(t, m, metrics.ResultSuccess) == 1 })
	if got := syncCount(t, m, metrics.ResultConflict); got != 1 {
		t.Errorf("sync_total{result=conflict} = %v, want 1", got)
	}
	if got := syncCount(t, m, metrics.ResultError); got != 0 {
		t.Errorf("sync_total{result=error} = %v, want 0", got)
	}
}

// TestRunShutdown: on cancel the loop takes no new key, lets the sync in
// progress finish on a context that is not cancelled, and then returns.
func TestRunShutdown(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q, _ := newTestQueue(t, nil)
	started := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan error, 1)
	var mu sync.Mutex
	var synced []cache.ObjectName
	l := &Loop{Name: testLoop, Queue: q, Sync: func(syncCtx context.Context, key cache.ObjectName) error {
		mu.Lock()
		synced = append(synced, key)
		mu.Unlock()
		if key == keyA {
			close(started)
			<-release
			finished <- syncCtx.Err()
		}
		return nil
	}}
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // lets the loop exit if the test fails early
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 1)
	}()

	q.Add(keyA)
	ctrlfixture.Receive(t, started, "the slow sync to start")
	q.Add(keyB) // queued behind the busy worker
	cancel()
	poll(t, context.Background(), "queue shut down after cancel", q.ShuttingDown)
	q.Add(keyC) // after shutdown: ignored

	// Run must still be waiting for the sync in progress.
	select {
	case <-done:
		t.Fatal("Run returned while a sync was in progress")
	case <-time.After(50 * time.Millisecond):
	}

	unblock()
	if err := ctrlfixture.Receive(t, finished, "the in-flight sync to finish"); err != nil {
		t.Errorf("in-flight sync saw a cancelled context: %v", err)
	}
	ctrlfixture.Receive(t, done, "Run to return")

	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]cache.ObjectName{keyA}, synced); diff != "" {
		t.Errorf("synced keys (-want +got):\n%s", diff)
	}
}

func TestRunWithCancelledContextReturns(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, q, l := cancelledLoop(t, ctx, "although the context was cancelled before Run")
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 3)
	}()
	ctrlfixture.Receive(t, done, "Run to return")
	if !q.ShuttingDown() {
		t.Error("Run returned without shutting the queue down")
	}
}

func TestNewQueueReportsMetrics(t *testing.T) {
	m := metrics.New()
	q := NewQueue("metrics-test", m)
	defer q.ShutDown()
	q.Add(keyA)
	q.Add(keyB)
	labels := map[string]string{"name": "metrics-test"}
	if got := metricValue(t, m, "workqueue_adds_total", labels); got != 2 {
		t.Errorf("workqueue_adds_total = %v, want 2", got)
	}
	if got := metricValue(t, m, "workqueue_depth", labels); got != 2 {
		t.Errorf("workqueue_depth = %v, want 2", got)
	}

	// Without metrics the queue still works.
	plain := NewQueue("plain", nil)
	defer plain.ShutDown()
	plain.AddRateLimited(keyA)
	if n := plain.NumRequeues(keyA); n != 1 {
		t.Errorf("NumRequeues on a queue without metrics = %d, want 1", n)
	}
}

// TestRunFenceCutsSyncsOff: a sync in progress runs on until its work is
// done when the loop's context is cancelled (TestRunShutdown), but is cut
// off at once when the fence ends (a lost Lease: writing is wrong now).
func TestRunFenceCutsSyncsOff(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fence, lose := context.WithCancel(context.Background())
	defer lose()
	q, _ := newTestQueue(t, nil)
	started := make(chan struct{})
	cutOff := make(chan error, 1)
	l := &Loop{Name: testLoop, Queue: q, Sync: func(syncCtx context.Context, key cache.ObjectName) error {
		close(started)
		<-syncCtx.Done()
		cutOff <- syncCtx.Err()
		return syncCtx.Err()
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(WithFence(ctx, fence), 1)
	}()
	q.Add(keyA)
	ctrlfixture.Receive(t, started, "the sync to start")
	lose()
	if err := ctrlfixture.Receive(t, cutOff, "the sync to be cut off"); !errors.Is(err, context.Canceled) {
		t.Errorf("sync context error = %v, want context.Canceled", err)
	}
	cancel()
	ctrlfixture.Receive(t, done, "Run to return")
}

// TestNewLoopAndWatch: a controller's loop syncs with the given handler,
// its queue counts in the tracker, and a watch makes the loop wait for
// the registration's cache.
func TestNewLoopAndWatch(t *testing.T) {
	tr := NewTracker()
	var synced []cache.ObjectName
	l := NewLoop(testLoop, nil, tr, func(_ context.Context, key cache.ObjectName) error {
		synced = append(synced, key)
		return nil
	})
	if l.Name != testLoop || l.Tracker != tr {
		t.Errorf("loop %q with tracker %p, want %q with %p", l.Name, l.Tracker, testLoop, tr)
	}
	l.Queue.Add(keyA)
	if got := tr.Queued(); got != 1 {
		t.Errorf("tracker counts %d queued keys, want 1", got)
	}
	if err := l.Sync(context.Background(), keyB); err != nil || len(synced) != 1 || synced[0] != keyB {
		t.Errorf("Sync = %v, synced %v; want the handler called with %v", err, synced, keyB)
	}
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	if err := l.Watch(informer, "ConfigMaps", cache.ResourceEventHandlerFuncs{}); err != nil {
		t.Fatal(err)
	}
	if len(l.Synced) != 1 || l.HasSynced() {
		t.Errorf("after Watch: %d caches to wait for, synced %v; want 1, not synced before the informer runs", len(l.Synced), l.HasSynced())
	}
}
