// Package access decides whether a variant or a set may read an in-cluster
// object: the controller reads every object with its own permissions, so
// anyone who may create a PackageVariant could otherwise copy into a
// package, stored in git, any object the controller may read. A variant
// (or a set's target) that names a ServiceAccount reads only what that
// account may get; the controller asks the API server with a
// SubjectAccessReview and remembers the answer for a while.
package access

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	// DefaultAllowedTTL is how long a permission granted is trusted: a
	// revoked grant stops reads within it.
	DefaultAllowedTTL = time.Minute
	// DefaultDeniedTTL is how long a refusal is remembered: a new grant
	// takes effect within it (the controllers sync a refused variant or set
	// again after it).
	DefaultDeniedTTL = 10 * time.Second
	// DefaultCacheSize bounds the answers remembered.
	DefaultCacheSize = 10000
)

// Options configure a Checker.
type Options struct {
	// Reviews creates SubjectAccessReviews.
	Reviews authorizationclient.SubjectAccessReviewInterface
	// Mapper maps a kind to the resource RBAC names.
	Mapper meta.RESTMapper
	// DefaultServiceAccount is the account of a variant or set target that
	// names none (the controller's --default-service-account); empty: such
	// reads are not checked (the controller's own permissions apply).
	DefaultServiceAccount string
	// AllowedTTL, DeniedTTL and CacheSize: zero means the defaults.
	AllowedTTL, DeniedTTL time.Duration
	CacheSize             int
	// Clock times the cache; nil means the real clock.
	Clock clock.Clock
}

// Checker answers whether a ServiceAccount may get an object. A nil
// Checker allows everything: offline runs (variantctl, porchsim) read what
// their input holds.
type Checker struct {
	opts    Options
	answers *utilcache.LRUExpireCache
	reviews atomic.Int64
}

// New returns a Checker.
func New(opts Options) *Checker {
	if opts.AllowedTTL == 0 {
		opts.AllowedTTL = DefaultAllowedTTL
	}
	if opts.DeniedTTL == 0 {
		opts.DeniedTTL = DefaultDeniedTTL
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Checker{opts: opts, answers: utilcache.NewLRUExpireCacheWithClock(opts.CacheSize, opts.Clock)}
}

// Account is the ServiceAccount whose permissions bound the reads of an
// object that names account (spec.serviceAccountName): account itself,
// else the default; "" when reads are not checked.
func (c *Checker) Account(account string) string {
	if c == nil || account != "" {
		return account
	}
	return c.opts.DefaultServiceAccount
}

// Reviews is how many SubjectAccessReviews the Checker has sent.
func (c *Checker) Reviews() int64 {
	if c == nil {
		return 0
	}
	return c.reviews.Load()
}

// DeniedError means the ServiceAccount may not get the object.
type DeniedError struct {
	// Account is namespace/name of the ServiceAccount.
	Account string
	// Resource, Namespace and Name are the object.
	Resource  schema.GroupResource
	Namespace string
	Name      string
	// Reason is the authorizer's, when it gave one.
	Reason string
	// RetryAfter is how long the refusal is remembered.
	RetryAfter time.Duration
}

func (e *DeniedError) Error() string {
	msg := fmt.Sprintf("ServiceAccount %s may not get %s %q in namespace %s, so it is not read: grant it get on %s (a Role and RoleBinding in %s), or name an object it may read; checked again every %s",
		e.Account, e.Resource, e.Name, e.Namespace, e.Resource, e.Namespace, e.RetryAfter)
	if e.Reason != "" {
		msg += "; the authorizer said: " + e.Reason
	}
	return msg
}

type key struct {
	account   string
	resource  schema.GroupResource
	namespace string
	name      string
}

// MayGet returns nil when the ServiceAccount of namespace that bounds the
// reads of an object naming account (spec.serviceAccountName; empty: the
// default, see Account) may get the object of kind gvk named name in
// namespace; a *DeniedError when it may not; another error when that
// cannot be told now (the kind is not served, the review failed). No
// account and no default, or a nil Checker, allows.
func (c *Checker) MayGet(ctx context.Context, namespace, account string, gvk schema.GroupVersionKind, name string) error {
	return c.MayGetIn(ctx, namespace, account, gvk, namespace, name)
}

// MayGetIn is MayGet for an object in another namespace than the
// ServiceAccount's (accountNamespace).
func (c *Checker) MayGetIn(ctx context.Context, accountNamespace, account string, gvk schema.GroupVersionKind, namespace, name string) error {
	if c == nil {
		return nil
	}
	if account = c.Account(account); account == "" {
		return nil
	}
	mapping, err := c.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("check whether ServiceAccount %s/%s may get %s %q: kind %s is not served by the cluster: %w", accountNamespace, account, gvk.Kind, name, gvk, err)
	}
	k := key{account: accountNamespace + "/" + account, resource: mapping.Resource.GroupResource(), namespace: namespace, name: name}
	if v, ok := c.answers.Get(k); ok {
		if denied, _ := v.(*DeniedError); denied != nil {
			return denied
		}
		return nil
	}
	c.reviews.Add(1)
	review, err := c.opts.Reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + accountNamespace + ":" + account,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + accountNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace,
			Verb:      "get",
			Group:     mapping.Resource.Group,
			Version:   mapping.Resource.Version,
			Resource:  mapping.Resource.Resource,
			Name:      name,
		},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("check whether ServiceAccount %s/%s may get %s %q in namespace %s (SubjectAccessReview): %w", accountNamespace, account, k.resource, name, namespace, err)
	}
	if review.Status.Allowed && !review.Status.Denied {
		c.answers.Add(k, (*DeniedError)(nil), c.opts.AllowedTTL)
		return nil
	}
	denied := &DeniedError{Account: k.account, Resource: k.resource, Namespace: namespace, Name: name,
		Reason: review.Status.Reason, RetryAfter: c.opts.DeniedTTL}
	c.answers.Add(k, denied, c.opts.DeniedTTL)
	return denied
}
