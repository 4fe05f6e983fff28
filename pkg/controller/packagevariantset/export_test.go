package packagevariantset

import (
	"time"

	"k8s.io/client-go/tools/cache"
)

// What the integration tests (package packagevariantset_test, loop_test.go)
// reach inside the package. They run the controllers through pkg/offline,
// which imports this package, so they cannot be part of it; this file is
// compiled into the tests only.

// Enqueue queues a set, as a periodic resync would.
func (c *Controller) Enqueue(key cache.ObjectName) { c.queue.Add(key) }

// SetClock makes the controller's rollouts decide by now.
func (c *Controller) SetClock(now func() time.Time) { c.clock = now }
