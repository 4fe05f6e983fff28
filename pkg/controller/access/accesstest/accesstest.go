// Package accesstest gives tests an access.Checker whose
// SubjectAccessReviews are answered by a table of grants instead of an
// API server.
package accesstest

import (
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"

	"github.com/porch-variants/variant-controller/pkg/controller/access"
)

// RBAC grants get on single objects to ServiceAccounts. It is safe for
// concurrent use; grants take effect for the next review.
type RBAC struct {
	mu      sync.Mutex
	allowed map[string]bool
	asked   []string
	fail    error
}

// New returns an RBAC that grants nothing.
func New() *RBAC { return &RBAC{allowed: map[string]bool{}} }

func grantKey(user, resource, namespace, name string) string {
	return user + " get " + resource + " " + namespace + "/" + name
}

// Grant lets ServiceAccount namespace/account get the object.
func (r *RBAC) Grant(namespace, account, resource, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allowed[grantKey("system:serviceaccount:"+namespace+":"+account, resource, namespace, name)] = true
}

// Revoke undoes Grant.
func (r *RBAC) Revoke(namespace, account, resource, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.allowed, grantKey("system:serviceaccount:"+namespace+":"+account, resource, namespace, name))
}

// Fail makes every review fail with err (nil: answer again).
func (r *RBAC) Fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// Asked is every review answered, as "user get resource namespace/name".
func (r *RBAC) Asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// Checker returns a Checker asking r, for ConfigMaps and the given kinds
// (all namespaced), with opts' other fields as given.
func (r *RBAC) Checker(opts access.Options, kinds ...schema.GroupVersionKind) *access.Checker {
	kube := fake.NewSimpleClientset()
	kube.PrependReactor("create", "subjectaccessreviews", func(a core.Action) (bool, runtime.Object, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.fail != nil {
			return true, nil, r.fail
		}
		sar := a.(core.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		ra := sar.Spec.ResourceAttributes
		q := sar.Spec.User + " " + ra.Verb + " " + ra.Resource + " " + ra.Namespace + "/" + ra.Name
		r.asked = append(r.asked, q)
		sar.Status.Allowed = r.allowed[q]
		if !sar.Status.Allowed {
			sar.Status.Reason = "no RBAC rule allows it"
		}
		return true, sar, nil
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	for _, k := range kinds {
		mapper.Add(k, meta.RESTScopeNamespace)
	}
	opts.Reviews = kube.AuthorizationV1().SubjectAccessReviews()
	opts.Mapper = mapper
	if opts.DeniedTTL == 0 {
		// Tests wait for grants to take effect; a short refusal keeps
		// them quick.
		opts.DeniedTTL = 200 * time.Millisecond
	}
	return access.New(opts)
}
