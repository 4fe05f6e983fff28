package porchsim

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
)

// wait bounds every wait for something that must happen.
const wait = 10 * time.Second

func TestRequestCounting(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	prr := getPRR(t, c, pr.Name)
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	pv, err := c.ConfigV1alpha1().PackageVariants(ns).Create(ctx, newVariant("foo"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfigV1alpha1().PackageVariants(ns).UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := c.PorchV1alpha1().PackageRevisions(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	// A failed request counts too.
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	// Helpers do not count.
	if err := s.Publish(ns, pr.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resources(ns, pr.Name); err != nil {
		t.Fatal(err)
	}

	want := map[string]int{
		"create packagerevisions":         1,
		"get packagerevisionresources":    1,
		"update packagerevisionresources": 1,
		"list packagerevisions":           1,
		"create packagevariants":          1,
		"update packagevariants/status":   1,
		"watch packagerevisions":          1,
		"get packagerevisions":            1,
	}
	checkDiff(t, want, s.Requests(), "requests")
	s.ResetRequests()
	if got := s.Requests(); len(got) != 0 {
		t.Errorf("after ResetRequests: %v", got)
	}
}

func TestFaultInjection(t *testing.T) {
	ctx := context.Background()
	getPV := func(c context.Context, s *Sim, name string) error {
		_, err := s.Clientset().ConfigV1alpha1().PackageVariants(ns).Get(c, name, metav1.GetOptions{})
		return err
	}
	cases := map[string]struct {
		fault Fault
		// results of five gets of "a", then one of "b"
		wantA []func(error) bool
		wantB func(error) bool
	}{
		"times is honoured": {
			fault: Fault{Verb: "get", Resource: "packagevariants", Times: 2, Err: TimeoutError("slow")},
			wantA: []func(error) bool{apierrors.IsTimeout, apierrors.IsTimeout, isNil, isNil, isNil},
			wantB: isNil,
		},
		"zero times fails until cleared": {
			fault: Fault{Verb: "get", Resource: "packagevariants", Err: ConflictError("packagevariants", "a")},
			wantA: []func(error) bool{apierrors.IsConflict, apierrors.IsConflict, apierrors.IsConflict, apierrors.IsConflict, apierrors.IsConflict},
			wantB: apierrors.IsConflict,
		},
		"name limits the fault": {
			fault: Fault{Verb: "get", Resource: "packagevariants", Name: "b", Times: 1},
			wantA: []func(error) bool{isNil, isNil, isNil, isNil, isNil},
			wantB: apierrors.IsInternalError,
		},
		"other verbs are not affected": {
			fault: Fault{Verb: "update", Resource: "packagevariants", Err: ServerError("boom")},
			wantA: []func(error) bool{isNil, isNil, isNil, isNil, isNil},
			wantB: isNil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			for _, n := range []string{"a", "b"} {
				if _, err := c.ConfigV1alpha1().PackageVariants(ns).Create(ctx, newVariant(n), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			s.InjectFault(tc.fault)
			for i, want := range tc.wantA {
				if err := getPV(ctx, s, "a"); !want(err) {
					t.Errorf("get %d of a: unexpected %v", i+1, err)
				}
			}
			if err := getPV(ctx, s, "b"); !tc.wantB(err) {
				t.Errorf("get of b: unexpected %v", err)
			}
			s.ClearFaults()
			if err := getPV(ctx, s, "a"); err != nil {
				t.Errorf("after ClearFaults: %v", err)
			}
		})
	}
}

func TestFaultHasNoEffect(t *testing.T) {
	s, c := fixture(t)
	name := helper.PackageRevisionName("deploy", "foo", "packagevariant-1")
	s.InjectFault(Fault{Verb: "create", Resource: "packagerevisions", Name: name, Times: 1})
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
		newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)), metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("create: got %v, want the injected fault", err)
	}
	if _, err := s.PackageRevision(ns, name); !apierrors.IsNotFound(err) {
		t.Errorf("a failed create stored the revision")
	}
	create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
}

func TestFaultAfterEffect(t *testing.T) {
	s, c := fixture(t)
	name := helper.PackageRevisionName("deploy", "foo", "packagevariant-1")
	s.InjectFault(Fault{Verb: "create", Resource: "packagerevisions", Name: name, Times: 1, Err: TimeoutError("response lost"), AfterEffect: true})
	draft := newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1))
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(), draft, metav1.CreateOptions{}); !apierrors.IsTimeout(err) {
		t.Fatalf("create: got %v, want the injected timeout", err)
	}
	if _, err := s.PackageRevision(ns, name); err != nil {
		t.Errorf("the create should have taken effect: %v", err)
	}
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(), draft, metav1.CreateOptions{}); !helper.IsAlreadyExists(err) {
		t.Errorf("retried create: got %v, want Porch's answer for an existing revision", err)
	}
}

// TestFaultLateAnswer: a fault with AfterEffect and a Delay but no error
// serves the request at once and answers it late (a client on a busy
// machine): another client sees the write, and may write the revision
// itself (Porch released it when it had served the request), while the
// answer is held back; the answer, when it comes, is the object as the
// request stored it.
func TestFaultLateAnswer(t *testing.T) {
	s, c := fixture(t)
	name := helper.PackageRevisionName("deploy", "foo", "packagevariant-1")
	s.InjectFault(Fault{Verb: "create", Resource: "packagerevisions", Name: name, Times: 1, AfterEffect: true, Delay: 3 * time.Second})
	type answer struct {
		pr  *porchv1alpha1.PackageRevision
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		pr, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
			newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)), metav1.CreateOptions{})
		answered <- answer{pr, err}
	}()
	person := s.ClientsetAs("person")
	waitUntil(t, func() bool {
		_, err := person.PorchV1alpha1().PackageRevisions(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil
	})
	live := mustGet(t, person.PorchV1alpha1().PackageRevisions(ns), name)
	live.Labels = map[string]string{"touched": "by-a-person"}
	if _, err := person.PorchV1alpha1().PackageRevisions(ns).Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a person's update while the answer is held back: %v", err)
	}
	select {
	case a := <-answered:
		t.Fatalf("the answer came with no delay: %v", a.err)
	default:
	}
	select {
	case a := <-answered:
		if a.err != nil || a.pr == nil || a.pr.Name != name {
			t.Errorf("late answer: %v, %v; want the created %s", a.pr, a.err, name)
		}
	case <-time.After(wait):
		t.Fatalf("no answer within %v", wait)
	}
}

func isNil(err error) bool { return err == nil }

func receive(t *testing.T, ch <-chan watch.Event) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("watch closed")
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no watch event within %v", wait)
	}
	return watch.Event{}
}

func eventName(ev watch.Event) string {
	return fmt.Sprintf("%s %s", ev.Type, ev.Object.(metav1.Object).GetName())
}

// TestWatchResumesFromListResourceVersion: a watch of a custom resource
// resumes from the list's resourceVersion, as the API server's does.
func TestWatchResumesFromListResourceVersion(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	list := mustList(t, pvs, metav1.ListOptions{})
	// Changes between the list and the watch must not be missed.
	pv, err := pvs.Create(ctx, newVariant("foo"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Labels = map[string]string{"a": "b"}
	if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := pvs.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, eventName(receive(t, w.ResultChan())))
	}
	want := []string{"ADDED foo", "MODIFIED foo", "DELETED foo"}
	checkDiff(t, want, got, "events")
}

// TestPackageRevisionWatchReplaysEverything: as real Porch does, every watch
// of PackageRevisions starts with every revision as ADDED, whatever
// resourceVersion it asks to resume from, and lists carry no
// resourceVersion. A client that tells changes by resourceVersion order
// cannot work against Porch; resourceVersions are opaque commit SHAs.
func TestPackageRevisionWatchReplaysEverything(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	prs := c.PorchV1alpha1().PackageRevisions(ns)
	pr := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	list := mustList(t, prs, metav1.ListOptions{})
	if list.ResourceVersion != "" {
		t.Errorf("list resourceVersion = %q, want none (Porch's lists carry none)", list.ResourceVersion)
	}
	for _, rv := range []string{"", pr.ResourceVersion, "0"} {
		w, err := prs.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 4 {
			ev := receive(t, w.ResultChan())
			if ev.Type == watch.Bookmark && ev.Object.(metav1.Object).GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				got = append(got, "BOOKMARK initial-events-end at "+ev.Object.(metav1.Object).GetResourceVersion())
				continue
			}
			got = append(got, eventName(ev))
		}
		w.Stop()
		want := []string{"ADDED blueprints.app.main", "ADDED " + upstreamV1, "ADDED " + pr.Name, "BOOKMARK initial-events-end at " + pr.ResourceVersion}
		checkDiff(t, want, got, "watch from %q: events", rv)
	}
	if _, err := strconv.ParseInt(pr.ResourceVersion, 10, 64); err == nil || len(pr.ResourceVersion) != 40 {
		t.Errorf("resourceVersion %q, want an opaque 40-hex-digit commit SHA", pr.ResourceVersion)
	}
}

func TestWatchSelectors(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	in := newVariant("foo")
	in.Labels = map[string]string{"team": "a"}
	pv, err := pvs.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// No resourceVersion: the current state comes first, as ADDED.
	w, err := pvs.Watch(ctx, metav1.ListOptions{LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := eventName(receive(t, w.ResultChan())); got != "ADDED foo" {
		t.Errorf("first event %q, want the current state", got)
	}
	pv.Labels["team"] = "b"
	if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := eventName(receive(t, w.ResultChan())); got != "DELETED foo" {
		t.Errorf("leaving the selector: got %q, want DELETED", got)
	}
	pv.Labels["team"] = "a"
	if _, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := eventName(receive(t, w.ResultChan())); got != "ADDED foo" {
		t.Errorf("entering the selector: got %q, want ADDED", got)
	}
}

func TestHoldWatchEvents(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	list := mustList(t, c.PorchV1alpha1().PackageRevisions(ns), metav1.ListOptions{})
	w, err := c.PorchV1alpha1().PackageRevisions(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Porch's watch replays what exists first, then marks the end of the
	// replay with a bookmark.
	for range list.Items {
		receive(t, w.ResultChan())
	}
	if ev := receive(t, w.ResultChan()); ev.Type != watch.Bookmark {
		t.Fatalf("after the replay: %s, want the initial-events-end BOOKMARK", eventName(ev))
	}

	s.HoldWatchEvents()
	pr := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	if err := s.Propose(ns, pr.Name); err != nil {
		t.Fatal(err)
	}
	// Reads see the new state while the watch lags.
	if got := getPR(t, c, pr.Name); got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleProposed {
		t.Errorf("get while held: lifecycle %s, want Proposed", got.Spec.Lifecycle)
	}
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("event delivered while held: %s", eventName(ev))
	case <-time.After(50 * time.Millisecond):
	}

	s.ReleaseWatchEvents()
	var got []string
	for range 2 {
		got = append(got, eventName(receive(t, w.ResultChan())))
	}
	checkDiff(t, []string{"ADDED " + pr.Name, "MODIFIED " + pr.Name}, got, "events after release")
}

func TestInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, c := fixture(t)
	factory := externalversions.NewSharedInformerFactory(c, 0)
	prInformer := factory.Porch().V1alpha1().PackageRevisions()
	pvInformer := factory.Config().V1alpha1().PackageVariants()

	events := make(chan string, 100)
	handler := func(kind string) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { events <- kind + " add " + obj.(metav1.Object).GetName() },
			UpdateFunc: func(_, obj any) {
				events <- kind + " update " + obj.(metav1.Object).GetName()
			},
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				events <- kind + " delete " + obj.(metav1.Object).GetName()
			},
		}
	}
	if _, err := prInformer.Informer().AddEventHandler(handler("pr")); err != nil {
		t.Fatal(err)
	}
	if _, err := pvInformer.Informer().AddEventHandler(handler("pv")); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	// Stop the informers before waiting for them: defers run last-in first-out.
	defer func() { cancel(); factory.Shutdown() }()
	syncCtx, syncCancel := context.WithTimeout(ctx, wait)
	defer syncCancel()
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	expect := func(want string) {
		t.Helper()
		for {
			select {
			case got := <-events:
				if got == want {
					return
				}
			case <-time.After(wait):
				t.Fatalf("no %q within %v", want, wait)
			}
		}
	}
	expect("pr add " + upstreamV1)

	pv, err := c.ConfigV1alpha1().PackageVariants(ns).Create(ctx, newVariant("foo"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("pv add foo")
	pr := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	expect("pr add " + pr.Name)
	if err := s.SetResources(ns, pr.Name, map[string]string{"a.txt": "a"}); err != nil {
		t.Fatal(err)
	}
	expect("pr update " + pr.Name)
	if err := c.ConfigV1alpha1().PackageVariants(ns).Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pv delete foo")

	cached, err := prInformer.Lister().PackageRevisions(ns).Get(pr.Name)
	if err != nil {
		t.Fatalf("lister: %v", err)
	}
	if stored := getPR(t, c, pr.Name); cached.ResourceVersion != stored.ResourceVersion {
		t.Errorf("cache at rv %s, server at %s", cached.ResourceVersion, stored.ResourceVersion)
	}
}

// TestConcurrentClients runs writers and an informer against one Sim, for
// the race detector, and checks that no update is lost.
func TestConcurrentClients(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	if _, err := pvs.Create(ctx, newVariant("counter"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	factory := externalversions.NewSharedInformerFactory(c, 0)
	informer := factory.Config().V1alpha1().PackageVariants().Informer()
	seen := make(chan string, 1000)
	record := func(obj any) { seen <- obj.(*configv1alpha1.PackageVariant).ResourceVersion }
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	// Stop the informers before waiting for them: defers run last-in first-out.
	defer func() { cancel(); factory.Shutdown() }()

	const workers, increments = 4, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range increments {
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					pv, err := pvs.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if pv.Annotations == nil {
						pv.Annotations = map[string]string{}
					}
					pv.Annotations["n"] += "x"
					_, err = pvs.Update(ctx, pv, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	pv := mustGet(t, pvs, "counter")
	if got := len(pv.Annotations["n"]); got != workers*increments {
		t.Errorf("%d increments stored, want %d: an update was lost", got, workers*increments)
	}
	timeout := time.After(wait)
	for {
		select {
		case rv := <-seen:
			if rv == pv.ResourceVersion {
				return
			}
		case <-timeout:
			t.Fatalf("the informer never saw rv %s", pv.ResourceVersion)
		}
	}
}

// TestRequestsAreServedSideBySide: while one request renders, the Sim
// answers another through the same clientset (the fake clientset would
// otherwise hold every request back until the render ends), and the
// clientset keeps no copy of the requests it served.
func TestRequestsAreServedSideBySide(t *testing.T) {
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	prr := getPRR(t, c, pr.Name)
	answered := false
	s.porch.rendering = func() {
		s.porch.rendering = nil
		done := make(chan error, 1)
		go func() {
			_, err := c.PorchV1alpha1().PackageRevisions(ns).Get(context.Background(), pr.Name, metav1.GetOptions{})
			done <- err
		}()
		select {
		case err := <-done:
			answered = err == nil
			if err != nil {
				t.Errorf("get during a render: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("a get was not answered within %v while another request rendered: requests are served one at a time", wait)
		}
	}
	prr.Spec.Resources["extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(context.Background(), prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !answered {
		t.Fatal("the update did not render, or the get during it failed")
	}
	if got := c.(*clientset).Actions(); len(got) != 0 {
		t.Errorf("the clientset kept %d actions, want none (a long-running Sim would grow without bound)", len(got))
	}
}
