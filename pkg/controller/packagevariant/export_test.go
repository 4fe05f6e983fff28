package packagevariant

import (
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/controller/repolock"
	porchlisters "github.com/porch-variants/variant-controller/pkg/generated/listers/porch/v1alpha1"
)

// What the integration tests (package packagevariant_test, the
// loop_*_test.go files) reach inside the package. They run the controller
// through pkg/offline, which imports this package, so they cannot be part
// of it; this file is compiled into the tests only.

// PRLister is the controller's PackageRevision cache.
func (c *Controller) PRLister() porchlisters.PackageRevisionLister { return c.prLister }

// Expectations are the drafts the controller created and waits to see in
// its cache.
func (c *Controller) Expectations() *expectations.Expectations { return c.expectations }

// RepoLocks are the locks that keep the controller's writes into one
// repository apart.
func (c *Controller) RepoLocks() *repolock.Locks { return c.porch.locks }

// SetRenderRetryBackoff sets how long a draft that failed to render waits
// before it is written again: first after the first failure, doubling up
// to most.
func (c *Controller) SetRenderRetryBackoff(first, most time.Duration) {
	c.renderRetries.mu.Lock()
	defer c.renderRetries.mu.Unlock()
	c.renderRetries.setBackoff(first, most)
}

// Enqueue queues a variant, as a periodic resync would.
func (c *Controller) Enqueue(key cache.ObjectName) { c.queue.Add(key) }

// Helpers of the controller the tests use to build and check objects.
var (
	HasFinalizer = hasFinalizer
	EditTask     = editTask
)

// The fixtures shared with the unit tests (fixtures_test.go).
const TestNS = testNS

var (
	NewVariant  = newVariant
	Customised  = customised
	ConfigMap   = configMap
	MustContain = mustContain
)
