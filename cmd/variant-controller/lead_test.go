package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2/ktesting"

	"github.com/porch-variants/variant-controller/pkg/workloop"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

const testID = "replica-a"

// leaseHolder is the holder the Lease names.
func leaseHolder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("ns").Get(context.Background(), "variant-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the Lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaderUnderTest runs runLeading with short durations; its controllers are
// one workloop.Loop whose one sync blocks until the test lets it go or its
// context is cut off.
type leaderUnderTest struct {
	client  *fake.Clientset
	fence   *writeFence
	started chan struct{} // the sync runs
	release chan struct{} // lets the sync finish
	syncErr chan error    // what the sync's context said when it ended
	result  chan error    // what runLeading returned

	refuse        atomic.Bool  // set: every update of the Lease is refused
	refused       atomic.Int32 // updates refused
	syncDone      atomic.Bool  // set by the test when it lets the sync go
	releasedEarly atomic.Bool  // the Lease was released before syncDone
}

func startLeader(t *testing.T, ctx context.Context, grace time.Duration) *leaderUnderTest {
	t.Helper()
	l := &leaderUnderTest{
		client:  fake.NewSimpleClientset(),
		fence:   &writeFence{},
		started: make(chan struct{}),
		release: make(chan struct{}),
		syncErr: make(chan error, 1),
		result:  make(chan error, 1),
	}
	l.client.PrependReactor("update", "leases", func(a core.Action) (bool, runtime.Object, error) {
		if l.refuse.Load() {
			l.refused.Add(1)
			return true, nil, errors.New("injected: the Lease may not be renewed")
		}
		lease := a.(core.UpdateAction).GetObject().(*coordinationv1.Lease)
		if (lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "") && !l.syncDone.Load() {
			l.releasedEarly.Store(true)
		}
		return false, nil, nil
	})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "variant-controller",
		l.client.CoreV1(), l.client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: testID})
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context) {
		q := workloop.NewQueue("lead-test", nil)
		loop := &workloop.Loop{Name: "lead-test", Queue: q, Sync: func(syncCtx context.Context, _ cache.ObjectName) error {
			close(l.started)
			select {
			case <-l.release:
			case <-syncCtx.Done():
			}
			l.syncErr <- syncCtx.Err()
			return nil
		}}
		q.Add(cache.ObjectName{Namespace: "ns", Name: "v"})
		loop.Run(ctx, 1)
	}
	go func() {
		l.result <- runLeading(ctx, election{
			lock: lock, id: testID, name: "variant-controller",
			lease: 2 * time.Second, renew: time.Second, retry: 100 * time.Millisecond,
			grace: grace, fence: l.fence,
		}, run)
	}()
	return l
}

// TestLostLeaseCutsWritesOffAndExits: when renewing the Lease fails for the
// renew deadline, the sync in progress is cut off, events are fenced,
// runLeading returns errLostLease (the process exits non-zero and the
// kubelet restarts it), and the Lease is not released behind a standby's
// back.
func TestLostLeaseCutsWritesOffAndExits(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	l := startLeader(t, ctx, time.Minute)
	ctrlfixture.Receive(t, l.started, "the leader's sync to start")
	l.refuse.Store(true)
	if err := ctrlfixture.Receive(t, l.syncErr, "the sync to end"); !errors.Is(err, context.Canceled) {
		t.Errorf("the sync in progress ended with %v, want it cut off (context.Canceled)", err)
	}
	if err := ctrlfixture.Receive(t, l.result, "runLeading to return"); !errors.Is(err, errLostLease) {
		t.Fatalf("runLeading returned %v, want errLostLease", err)
	}
	if !l.fence.isClosed() {
		t.Error("the event fence is still open after the Lease was lost")
	}
	if l.refused.Load() == 0 {
		t.Error("no renewal was attempted")
	}
	if got := leaseHolder(t, l.client); got != testID {
		t.Errorf("Lease holder = %q after the loss; want it left as it was (%q), to expire", got, testID)
	}
}

// TestShutdownReleasesTheLeaseAfterWrites: on a signal the sync in
// progress is not cut off; the Lease is released only once it has
// finished, and runLeading returns nil.
func TestShutdownReleasesTheLeaseAfterWrites(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, signal := context.WithCancel(ctx)
	defer signal()
	l := startLeader(t, ctx, time.Minute)
	ctrlfixture.Receive(t, l.started, "the leader's sync to start")
	signal()
	// The loop stops taking keys; the sync must still be running and the
	// Lease still held until it is let go.
	if leaseHolder(t, l.client) != testID {
		t.Fatal("the Lease was released while the sync was still running")
	}
	l.syncDone.Store(true)
	close(l.release)
	if err := ctrlfixture.Receive(t, l.syncErr, "the sync to end"); err != nil {
		t.Errorf("the sync in progress was cut off on a graceful shutdown: %v", err)
	}
	if err := ctrlfixture.Receive(t, l.result, "runLeading to return"); err != nil {
		t.Fatalf("runLeading returned %v on a graceful shutdown, want nil", err)
	}
	if l.releasedEarly.Load() {
		t.Error("the Lease was released before the sync in progress had finished")
	}
	if got := leaseHolder(t, l.client); got != "" {
		t.Errorf("Lease holder = %q after a graceful shutdown; want it released", got)
	}
	if !l.fence.isClosed() {
		t.Error("the event fence is still open after the shutdown")
	}
}

// TestSignalWhileWaitingForTheLease: a standby stops at once on a signal.
func TestSignalWhileWaitingForTheLease(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, signal := context.WithCancel(ctx)
	client := fake.NewSimpleClientset()
	other := "replica-b"
	dur := int32(3600)
	now := metav1.NewMicroTime(time.Now())
	if _, err := client.CoordinationV1().Leases("ns").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "variant-controller"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "variant-controller",
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: testID})
	if err != nil {
		t.Fatal(err)
	}
	result := make(chan error, 1)
	go func() {
		result <- runLeading(ctx, election{lock: lock, id: testID, name: "variant-controller",
			lease: 2 * time.Second, renew: time.Second, retry: 100 * time.Millisecond, grace: time.Minute},
			func(context.Context) { t.Error("the controllers ran without the Lease") })
	}()
	signal()
	if err := ctrlfixture.Receive(t, result, "runLeading to return"); err != nil {
		t.Errorf("runLeading returned %v, want nil", err)
	}
	if got := leaseHolder(t, client); got != other {
		t.Errorf("Lease holder = %q, want %q untouched", got, other)
	}
}
