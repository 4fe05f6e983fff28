package ondemand

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// readTimeout is how long a read may take before the test calls it stuck:
// far below the hour the fixtures give a first list, far above a failed
// list's answer.
const readTimeout = 30 * time.Second

const retryPeriod = 30 * time.Second

var (
	servicesResource = schema.GroupResource{Resource: "services"}
	forbidden        = apierrors.NewForbidden(servicesResource, "",
		errors.New(`User "system:serviceaccount:variant-controller-system:variant-controller" cannot list resource "services" in API group "" at the cluster scope`))
)

func service(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]interface{}{"name": name, "namespace": ns},
	}}
}

// accessFixture is a fixture whose lists of services fail with the error
// set by refuse, on a fake clock, with a first list that may take an hour:
// a read that waits for a failed list to sync never returns in a test.
type accessFixture struct {
	*fixture
	clock *testingclock.FakeClock

	mu  sync.Mutex
	err error
}

func newAccessFixture(t *testing.T, listErr error, objs ...runtime.Object) *accessFixture {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Now())
	f := &accessFixture{
		fixture: newFixtureWithOptions(t, Options{SyncTimeout: time.Hour, AccessRetryPeriod: retryPeriod, Clock: clk}, objs...),
		clock:   clk,
		err:     listErr,
	}
	f.dyn.PrependReactor("list", "services", func(clienttesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.err == nil {
			return false, nil, nil
		}
		return true, nil, f.err
	})
	return f
}

// refuse sets the error of the next lists of services; nil lets them pass.
func (f *accessFixture) refuse(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// lists counts the list requests made for a resource.
func (f *fixture) lists(resource string) int {
	n := 0
	for _, a := range f.dyn.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// running is how many informers have goroutines left.
func (f *fixture) running() int {
	f.informers.mu.Lock()
	defer f.informers.mu.Unlock()
	return f.informers.running
}

// waitUntil fails the test when cond is still false after waitFor.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), pollEvery, waitFor, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s", what, waitFor)
	}
}

// within runs a read and returns its error, failing the test when the read
// does not return within readTimeout: it is then waiting out the bound of a
// first list that has already failed.
func within(t *testing.T, what string, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(readTimeout):
		t.Fatalf("%s did not return within %s: it waits for a list that has failed", what, readTimeout)
		return nil
	}
}

func getService(f *accessFixture, name string) func() error {
	return func() error {
		_, _, err := f.informers.Get(serviceGVK, "ns", name)
		return err
	}
}

func listServices(f *accessFixture) func() error {
	return func() error {
		_, err := f.informers.List(serviceGVK, "ns", labels.Everything())
		return err
	}
}

// TestRefusedKindFailsAtOnce: a read of a kind the controller may not list
// returns at once with an AccessError saying what to grant, and the
// refused informer stops.
func TestRefusedKindFailsAtOnce(t *testing.T) {
	cases := map[string]struct {
		listErr error
		is      func(error) bool
		want    []string
	}{
		"forbidden: the message names the resource, the refusal and the grant": {
			listErr: forbidden,
			is:      apierrors.IsForbidden,
			want: []string{
				`list services: services is forbidden: User "system:serviceaccount:variant-controller-system:variant-controller" cannot list resource "services"`,
				"grant the controller get, list and watch on services",
				`variant-controller.porch.kpt.dev/aggregate-to-injection: "true"`,
				"tried again every 30s",
			},
		},
		"unauthorized: the message points at the credentials": {
			listErr: apierrors.NewUnauthorized("Unauthorized"),
			is:      apierrors.IsUnauthorized,
			want:    []string{"list services: Unauthorized", "did not accept the controller's credentials", "tried again every 30s"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newAccessFixture(t, tc.listErr)
			for what, read := range map[string]func() error{"Get": getService(f, "db"), "List": listServices(f)} {
				err := within(t, what, read)
				var denied *AccessError
				if !errors.As(err, &denied) {
					t.Fatalf("%s: %v (%T), want an AccessError", what, err, err)
				}
				if denied.Resource != servicesResource {
					t.Errorf("%s: AccessError.Resource %v, want %v", what, denied.Resource, servicesResource)
				}
				if !tc.is(err) {
					t.Errorf("%s: the API server's answer is lost: %v", what, err)
				}
				var unusable *UnusableKindError
				if errors.As(err, &unusable) {
					t.Errorf("%s: an AccessError is an UnusableKindError too; callers cannot tell them apart", what)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not contain %q", what, err, w)
					}
				}
			}
			waitUntil(t, "the refused informer stops", func() bool { return f.running() == 0 })
		})
	}
}

// TestRefusalIsRemembered: reads within the retry period answer from memory,
// without asking the API server again.
func TestRefusalIsRemembered(t *testing.T) {
	f := newAccessFixture(t, forbidden)
	first := within(t, "first Get", getService(f, "db"))
	if first == nil {
		t.Fatal("first Get of a forbidden kind succeeded")
	}
	f.clock.Step(retryPeriod - time.Second)
	for what, read := range map[string]func() error{"Get": getService(f, "other"), "List": listServices(f)} {
		err := within(t, what, read)
		if err == nil || err.Error() != first.Error() {
			t.Errorf("%s within the retry period: %v, want the remembered %v", what, err, first)
		}
	}
	if n := f.lists("services"); n != 1 {
		t.Errorf("%d lists of services for three reads within the retry period, want 1", n)
	}
}

// TestRefusedKindIsTriedAgain: when the retry period has passed, the kind is
// listed again, once, by a read or in the background; a grant then serves
// reads and reaches the handlers.
func TestRefusedKindIsTriedAgain(t *testing.T) {
	cases := map[string]struct {
		// granted lets the lists pass before the period ends.
		granted bool
		// read reads ns/db after the period: it must be found when granted,
		// fail with an AccessError otherwise.
		read bool
	}{
		"granted: a read after the period is served":               {granted: true, read: true},
		"granted: the handlers hear of the objects without a read": {granted: true},
		"still refused: a read after the period fails again":       {read: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newAccessFixture(t, forbidden, service("ns", "db"))
			var mu sync.Mutex
			heard := map[string]bool{}
			f.informers.AddHandler(func(gk schema.GroupKind, ns, name string) {
				mu.Lock()
				defer mu.Unlock()
				heard[gk.Kind+" "+ns+"/"+name] = true
			})
			if err := within(t, "Get", getService(f, "db")); err == nil {
				t.Fatal("Get of a forbidden kind succeeded")
			}
			if tc.granted {
				f.refuse(nil)
			}
			f.clock.Step(retryPeriod)
			if tc.read {
				var found bool
				err := within(t, "Get after the retry period", func() error {
					var err error
					_, found, err = f.informers.Get(serviceGVK, "ns", "db")
					return err
				})
				var denied *AccessError
				switch {
				case tc.granted && (err != nil || !found):
					t.Errorf("Get after a grant: found=%v err=%v, want ns/db", found, err)
				case !tc.granted && !errors.As(err, &denied):
					t.Errorf("Get still refused: %v, want an AccessError", err)
				}
			}
			if tc.granted {
				waitUntil(t, "the handlers hear of Service ns/db", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return heard["Service ns/db"]
				})
			}
			if n := f.lists("services"); n != 2 {
				t.Errorf("%d lists of services, want 2: the refused one and one after the retry period", n)
			}
		})
	}
}

// TestRefusedKindBlocksNoOne: concurrent reads of a forbidden kind all fail
// at once, from one list, while a readable kind read alongside is served.
func TestRefusedKindBlocksNoOne(t *testing.T) {
	f := newAccessFixture(t, forbidden, configMap("ns", "eu-west", nil, nil))
	const readers = 16
	start := make(chan struct{})
	errs := make(chan error, readers)
	for n := 0; n < readers; n++ {
		read := getService(f, "db")
		if n%2 == 1 {
			read = listServices(f)
		}
		go func() {
			<-start
			errs <- read()
		}()
	}
	type result struct {
		found bool
		err   error
	}
	served := make(chan result, 1)
	go func() {
		<-start
		_, found, err := f.informers.Get(configMapGVK, "ns", "eu-west")
		served <- result{found, err}
	}()
	close(start)

	timeout := time.After(readTimeout)
	for n := 0; n < readers; n++ {
		select {
		case err := <-errs:
			var denied *AccessError
			if !errors.As(err, &denied) {
				t.Errorf("read of a forbidden kind: %v, want an AccessError", err)
			}
		case <-timeout:
			t.Fatalf("%d of %d concurrent reads of a forbidden kind did not return within %s", readers-n, readers, readTimeout)
		}
	}
	select {
	case r := <-served:
		if r.err != nil || !r.found {
			t.Errorf("ConfigMap read alongside: found=%v err=%v, want ns/eu-west", r.found, r.err)
		}
	case <-timeout:
		t.Fatalf("the read of a readable kind did not return within %s", readTimeout)
	}
	if n := f.lists("services"); n != 1 {
		t.Errorf("%d lists of services for %d concurrent reads, want 1", n, readers)
	}
	waitUntil(t, "only the ConfigMap informer runs", func() bool { return f.running() == 1 })
}

// TestFailedListFailsAtOnce: a list that fails for another reason than
// access returns a retriable error at once; the informer keeps trying and
// serves reads once the API server answers.
func TestFailedListFailsAtOnce(t *testing.T) {
	f := newAccessFixture(t, apierrors.NewInternalError(errors.New("etcd leader changed")), service("ns", "db"))
	err := within(t, "Get", getService(f, "db"))
	var denied *AccessError
	var unusable *UnusableKindError
	switch {
	case err == nil:
		t.Fatal("Get succeeded while the list fails")
	case errors.As(err, &denied), errors.As(err, &unusable):
		t.Fatalf("Get: %v (%T), want a retriable error", err, err)
	case !strings.Contains(err.Error(), "list services: ") || !apierrors.IsInternalError(err):
		t.Errorf("Get: %q, want the list's error", err)
	}
	f.refuse(nil)
	waitUntil(t, "the informer's own retry serves reads", func() bool {
		_, found, err := f.informers.Get(serviceGVK, "ns", "db")
		return err == nil && found
	})
	if f.running() != 1 {
		t.Errorf("%d informers running, want the one of services", f.running())
	}
}
