package porchsim

import (
	"errors"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Fault makes matching requests fail.
type Fault struct {
	// Verb is "create", "update", "delete", "get", "list", "patch",
	// "watch" or "delete-collection".
	Verb string
	// Resource is a plural, with its subresource if any, for example
	// "packagerevisions", "packagerevisionresources" or
	// "packagevariants/status".
	Resource string
	// Name limits the fault to one object; "" matches any (collections
	// have no name). For a PackageRevision create it is the name Porch
	// derives from the spec.
	Name string
	// User limits the fault to the requests of one clientset (see
	// ClientsetAs); "" matches every client.
	User string
	// Times is how many matching requests fail; 0 means every one until
	// ClearFaults.
	Times int
	// Err is the error returned; nil means ServerError("injected fault").
	Err error
	// AfterEffect serves the request first and then returns Err: the write
	// happened but the client never learns it, as when a response is lost
	// to a timeout. Without it the request fails with no effect.
	AfterEffect bool
	// Delay holds the answer back this long after the request was served
	// (or refused), outside the Sim's lock: others' requests go on
	// meanwhile, as on a machine too busy to run the client. The client's
	// own clientset answers nothing else until then (a fake clientset
	// serves one request at a time). With AfterEffect and no Err the
	// request succeeds: only its answer is late.
	Delay time.Duration
	// Until, when set, ends the wait for the answer as soon as it is
	// closed, Delay at the latest: a test stages what others do while a
	// client waits for its answer.
	Until <-chan struct{}
}

// lateAnswer reports whether f only delays a successful answer.
func (f *Fault) lateAnswer() bool { return f.AfterEffect && f.Delay > 0 && f.Err == nil }

// wait holds an answer back as f says.
func (f *Fault) wait() {
	if f == nil || f.Delay <= 0 {
		return
	}
	t := time.NewTimer(f.Delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.Until:
	}
}

// faults is the one fault mechanism: the faults tests inject (InjectFault),
// tried in the order they were injected, then the chaos function
// (SetChaos). The first that has a fault for a request decides it.
type faults struct {
	mu       sync.Mutex
	injected []*injectedFault
	chaos    func(Request) *Fault
}

// injectedFault is a Fault with the count of the requests it may still
// fail (Times > 0).
type injectedFault struct {
	Fault
	remaining int
}

// matches tells whether f applies to r.
func (f *injectedFault) matches(r Request) bool {
	return f.Verb == r.Verb && f.Resource == r.Resource && (f.Name == "" || f.Name == r.Name) && (f.User == "" || f.User == r.User)
}

// pick returns the fault that applies to a request (nil when none) and
// uses up one of its Times.
func (fs *faults) pick(r Request) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.injected {
		if !f.matches(r) {
			continue
		}
		if f.Times > 0 {
			f.remaining--
			if f.remaining == 0 {
				fs.injected = append(fs.injected[:i:i], fs.injected[i+1:]...)
			}
		}
		return withDefaultErr(f.Fault)
	}
	if fs.chaos != nil {
		if f := fs.chaos(r); f != nil {
			return withDefaultErr(*f)
		}
	}
	return nil
}

// Request describes a request, for the chaos function (SetChaos).
type Request struct {
	// User is the clientset's user ("" for Clientset, see ClientsetAs).
	User string
	// Verb, Resource and Name are as in Fault.
	Verb, Resource, Name string
}

// SetChaos makes f decide, for every request that no injected fault
// matches, whether it fails: f returns the fault to apply (its Verb,
// Resource, Name, User and Times are ignored) or nil to serve the request.
// A soak test draws faults at random this way. f runs under the Sim's lock:
// it must be quick and must not call the Sim. nil removes it.
func (s *Sim) SetChaos(f func(Request) *Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.chaos = f
}

// InjectFault makes matching requests fail, without effect unless
// f.AfterEffect. Faults are tried
// in the order they were injected; the first match is used. A failed request
// is still counted by Requests.
func (s *Sim) InjectFault(f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.injected = append(s.faults.injected, &injectedFault{Fault: f, remaining: f.Times})
}

// ClearFaults removes every injected fault.
func (s *Sim) ClearFaults() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.injected = nil
}

// injecting fails a request as the fault that applies to it says: with no
// effect, or (AfterEffect) after next served it; a Delay holds the answer
// back (request.late). served hears of a request whose answer is held
// back, while the lock is still held: a write whose answer is late is no
// longer in progress by the time anyone else can reach the Sim.
func injecting[T any](fs *faults, next handler[T], served func(*request)) handler[T] {
	return func(r *request) (T, error) {
		var zero T
		fault := fs.pick(r.Request)
		if fault != nil && fault.Delay > 0 {
			r.late = fault
			defer served(r)
		}
		if fault != nil && !fault.AfterEffect {
			return zero, fault.Err
		}
		out, err := next(r)
		if err != nil {
			return zero, err
		}
		if fault != nil && fault.Err != nil {
			return zero, fault.Err
		}
		return out, nil
	}
}

// refusing fails a request the fault that applies to it names, before
// next sees it: a watch is refused or made, never delayed.
func refusing[T any](fs *faults, next handler[T]) handler[T] {
	return func(r *request) (T, error) {
		if f := fs.pick(r.Request); f != nil {
			var zero T
			return zero, f.Err
		}
		return next(r)
	}
}

// withDefaultErr gives a fault without Err the injected server error,
// unless it only delays a successful answer.
func withDefaultErr(f Fault) *Fault {
	if f.Err == nil && !f.lateAnswer() {
		f.Err = ServerError("injected fault")
	}
	return &f
}

// ConflictError returns the error an update with a stale resourceVersion
// gets (409, apierrors.IsConflict). resource is a plural such as
// "packagerevisions", optionally with a subresource.
func ConflictError(resource, name string) error {
	return apierrors.NewConflict(groupResource(resource), name, errors.New(helper.OptimisticLockMessage))
}

// ServerError returns an internal server error (500,
// apierrors.IsInternalError), which is also what Porch returns when it
// refuses an operation.
func ServerError(message string) error {
	return apierrors.NewInternalError(errors.New(message))
}

// TimeoutError returns a request timeout (504, apierrors.IsTimeout).
func TimeoutError(message string) error {
	return apierrors.NewTimeoutError(message, 1)
}

func groupResource(resource string) schema.GroupResource {
	resource, _, _ = strings.Cut(resource, "/")
	switch resource {
	case resPackageRevisions, resPackageRevisionResources:
		return porchv1alpha1.Resource(resource)
	}
	return configv1alpha1.Resource(resource)
}
