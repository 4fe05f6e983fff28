package porchsim

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestFaultsByUser: a fault with a User fails only that user's requests,
// and the chaos function sees who asks.
func TestFaultsByUser(t *testing.T) {
	ctx := context.Background()
	s, controller := fixture(t)
	person := s.ClientsetAs("person")
	s.InjectFault(Fault{Verb: "create", Resource: "packagevariants", User: "person"})
	if _, err := person.ConfigV1alpha1().PackageVariants(ns).Create(ctx, newVariant("a"), metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("person's create: got %v, want the injected fault", err)
	}
	if _, err := controller.ConfigV1alpha1().PackageVariants(ns).Create(ctx, newVariant("b"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the controller's create failed: %v", err)
	}
	s.ClearFaults()

	var seen []Request
	s.SetChaos(func(r Request) *Fault {
		seen = append(seen, r)
		if r.User == "" && r.Verb == "update" {
			return &Fault{Err: TimeoutError("lost"), AfterEffect: true}
		}
		return nil
	})
	pv := mustGet(t, person.ConfigV1alpha1().PackageVariants(ns), "b")
	pv.Labels = map[string]string{"x": "y"}
	if _, err := controller.ConfigV1alpha1().PackageVariants(ns).Update(ctx, pv, metav1.UpdateOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("update: got %v, want the chaos timeout", err)
	}
	s.SetChaos(nil)
	got := mustGet(t, person.ConfigV1alpha1().PackageVariants(ns), "b")
	if got.Labels["x"] != "y" {
		t.Errorf("the update with AfterEffect was not applied: labels %v", got.Labels)
	}
	want := []Request{
		{User: "person", Verb: "get", Resource: "packagevariants", Name: "b"},
		{User: "", Verb: "update", Resource: "packagevariants", Name: "b"},
	}
	checkDiff(t, want, seen, "requests the chaos function saw")
}

// TestBreakWatches: a broken watch ends (its channel closes), and a new
// watch from the last resourceVersion seen misses nothing.
func TestBreakWatches(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	w := watchFromList(t, pvs)
	a, err := pvs.Create(ctx, newVariant("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := eventName(receive(t, w.ResultChan())); got != "ADDED a" {
		t.Fatalf("first event %q", got)
	}
	if n := s.BreakWatches(); n != 1 {
		t.Errorf("BreakWatches ended %d watches, want 1", n)
	}
	select {
	case ev, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("broken watch delivered %v", ev)
		}
	case <-time.After(wait):
		t.Fatalf("the broken watch did not end within %v", wait)
	}
	if _, err := pvs.Create(ctx, newVariant("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w2, err := pvs.Watch(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if got := eventName(receive(t, w2.ResultChan())); got != "ADDED b" {
		t.Errorf("resumed watch: first event %q, want ADDED b", got)
	}
	if n := s.BreakWatches(); n != 1 {
		t.Errorf("second BreakWatches ended %d watches, want 1 (the first watch should be forgotten)", n)
	}
}

// TestObserve: an observer hears every change in order, also while watch
// events are held.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	var got []string
	s.Observe(func(ch Change) {
		got = append(got, string(ch.Type)+" "+ch.Resource+" "+ch.Object.(metav1.Object).GetName())
	})
	s.HoldWatchEvents()
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	if _, err := pvs.Create(ctx, newVariant("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pvs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{string(watch.Added) + " packagevariants a", string(watch.Deleted) + " packagevariants a"}
	checkDiff(t, want, got, "changes observed")
}
