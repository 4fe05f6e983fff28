package porchsim

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	clienttesting "k8s.io/client-go/testing"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Every request of a Sim's clientsets goes through a chain of handlers
// (see Sim.newClientset): request counting, then fault injection, then the
// server (Porch's rules on the store). The chain runs under the store's
// lock, so that a request is one atomic step whatever the wrappers decide.

// request is one request a clientset hands the Sim.
type request struct {
	Request
	action clienttesting.Action
	// late is the fault that holds the answer back (see Fault.Delay), set
	// by the fault wrapper and waited out once the lock is released.
	late *Fault
}

// handler answers a request: an object, or a watch.
type handler[T any] func(r *request) (T, error)

func newRequest(user string, action clienttesting.Action) *request {
	path := action.GetResource().Resource
	if sub := action.GetSubresource(); sub != "" {
		path += "/" + sub
	}
	return &request{
		Request: Request{User: user, Verb: action.GetVerb(), Resource: path, Name: requestName(action)},
		action:  action,
	}
}

// requestName is the object name a request is about, "" for collections.
func requestName(action clienttesting.Action) string {
	switch action.GetVerb() {
	case "get", "delete", "patch":
		if a, ok := action.(interface{ GetName() string }); ok {
			return a.GetName()
		}
	case "create", "update":
		obj := action.(clienttesting.CreateAction).GetObject()
		if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok && action.GetVerb() == "create" && pr.Spec.RepositoryName != "" {
			// Porch names a new revision itself; faults use that name.
			return helper.PackageRevisionName(pr.Spec.RepositoryName, pr.Spec.PackageName, string(pr.Spec.WorkspaceName))
		}
		if m, err := meta.Accessor(obj); err == nil {
			return m.GetName()
		}
	}
	return ""
}

// locked runs a handler under mu.
func locked[T any](mu sync.Locker, h handler[T], r *request) (T, error) {
	mu.Lock()
	defer mu.Unlock()
	return h(r)
}

// requestCounter counts the requests served, failed ones included, keyed
// "verb resource[/subresource]".
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// counting counts every request before next answers it.
func counting[T any](c *requestCounter, next handler[T]) handler[T] {
	return func(r *request) (T, error) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[r.Verb+" "+r.Resource]++
		c.mu.Unlock()
		return next(r)
	}
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(c.n)
	if out == nil {
		out = map[string]int{}
	}
	return out
}

func (c *requestCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.n)
}
