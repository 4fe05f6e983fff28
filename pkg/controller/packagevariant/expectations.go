package packagevariant

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationTimeout is how long a variant waits for a draft it created to
// appear in the informer cache before it trusts the cache again.
const expectationTimeout = 2 * time.Minute

// expectDraft records that variant uid created the draft name: while the
// cache does not show it the variant creates nothing else (with a lagging
// cache the reference controller makes a second packagevariant-N draft for
// the same change), and the name is remembered as the variant's last
// draft, seen or not.
func (c *Controller) expectDraft(uid types.UID, name string) {
	c.expectations.Forget(uid) // one draft at a time: the latest
	c.expectations.Expect(uid, name)
	c.created.Store(uid, name)
}

// expectUnconfirmed records that variant uid tried to create the draft
// name and does not know whether it was created: Porch is asked before the
// variant creates anything else.
func (c *Controller) expectUnconfirmed(uid types.UID, name string) {
	c.expectations.Forget(uid)
	c.expectations.ExpectUnconfirmed(uid, name)
}

// lastCreated is the name of the last draft variant uid created ("" if
// none since the process started): Porch can hand a new draft back without
// its metadata, and then only this (or the variant's status) tells that the
// draft is the variant's own.
func (c *Controller) lastCreated(uid types.UID) string {
	name, _ := c.created.Load(uid)
	s, _ := name.(string)
	return s
}

// forgetDrafts drops what the controller remembers of a variant that is
// gone.
func (c *Controller) forgetDrafts(uid types.UID) {
	c.expectations.Forget(uid)
	c.created.Delete(uid)
}
