// Package ctrlfixture is the unit-test fixture of both controllers, after
// kubernetes/sample-controller's: a fake clientset and an informer factory
// on it, objects loaded into the informer indexers, caches that report
// synced, the sync handler called directly, and the client's write actions
// and the queued keys read back. It imports neither controller, so their
// in-package tests can use it (test/kit runs them and cannot be imported
// there).
package ctrlfixture

import (
	"context"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
)

// AlwaysReady is an InformerSynced whose cache is always synced.
func AlwaysReady() bool { return true }

// Fixture is a fake clientset holding the test's objects and an informer
// factory on it: set T and Objects, then Start a controller on it.
type Fixture struct {
	T *testing.T
	// Objects go into the fake clientset when Start makes it.
	Objects []runtime.Object
	// Client and Factory are made by Start.
	Client  *fake.Clientset
	Factory informers.SharedInformerFactory
}

// Start makes the fake clientset with f.Objects and the informer factory
// (no resync) on it, then the controller newController builds on them,
// failing the test on its error.
func Start[C any](f *Fixture, newController func() (C, error)) C {
	f.T.Helper()
	f.Client = fake.NewSimpleClientset(f.Objects...)
	f.Factory = informers.NewSharedInformerFactory(f.Client, 0)
	c, err := newController()
	if err != nil {
		f.T.Fatalf("New: %v", err)
	}
	return c
}

// Index adds objs to the informer's indexer, as if its list had returned
// them.
func Index[T any](t testing.TB, informer cache.SharedIndexInformer, objs []T) {
	t.Helper()
	for _, o := range objs {
		if err := informer.GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
}

// WriteActions is what the client was asked, without the lists and watches
// the informers make.
func (f *Fixture) WriteActions() []core.Action { return WriteActions(f.Client.Actions()) }

// WriteActions is actions without the lists and watches the informers make.
func WriteActions(actions []core.Action) []core.Action {
	var out []core.Action
	for _, a := range actions {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// Drain empties the queue and returns the keys it held, sorted.
func Drain(q workqueue.TypedInterface[cache.ObjectName]) []string {
	var keys []string
	for q.Len() > 0 {
		k, _ := q.Get()
		keys = append(keys, k.String())
		q.Done(k)
	}
	sort.Strings(keys)
	return keys
}

// Synced is a sync handler that only records the keys it is called with,
// and the channel they arrive on.
func Synced(buffer int) (func(context.Context, cache.ObjectName) error, <-chan cache.ObjectName) {
	ch := make(chan cache.ObjectName, buffer)
	return func(_ context.Context, key cache.ObjectName) error {
		ch <- key
		return nil
	}, ch
}

// WaitForKeys reads synced keys until every wanted key has been seen,
// ignoring others, and fails after a timeout.
func WaitForKeys(t testing.TB, ch <-chan cache.ObjectName, what string, want ...string) {
	t.Helper()
	missing := map[string]bool{}
	for _, k := range want {
		missing[k] = true
	}
	timeout := time.After(10 * time.Second)
	for len(missing) > 0 {
		select {
		case k := <-ch:
			delete(missing, k.String())
		case <-timeout:
			t.Fatalf("%s: sync handler never saw %v", what, slices.Sorted(maps.Keys(missing)))
		}
	}
}

// Receive returns the next value sent on ch, and fails the test when none
// comes within 30 seconds.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// RunInBackground runs a controller's Run until ctx ends, failing the test
// on an error; the returned wait cancels ctx (through cancel) and fails the
// test unless Run returns within ten seconds.
func RunInBackground(t testing.TB, cancel context.CancelFunc, run func() error) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	return func() {
		t.Helper()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after the context was cancelled")
		}
	}
}

// Revision is a PackageRevision <repo>.<pkg>.<ws> in the given lifecycle.
func Revision(ns, repo, pkg, ws string, lifecycle porchv1alpha1.PackageRevisionLifecycle) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: repo + "." + pkg + "." + ws},
		Spec: porchv1alpha1.PackageRevisionSpec{
			RepositoryName: repo, PackageName: pkg, WorkspaceName: porchv1alpha1.WorkspaceName(ws),
			Lifecycle: lifecycle,
		},
	}
}
