package packagevariant

import (
	"strings"
	"sync"
	"testing"
)

// TestLoopWritesIntoOneRepositoryNeverOverlap: two variants whose
// downstreams are in one repository sync at the same time on two workers.
// Real Porch loses one of two overlapping writes into a repository (a
// created draft vanishes, or comes back without its metadata), so the
// first create is held until the other variant's write has either reached
// the controller's repository lock (and waits there) or reached Porch (an
// overlap, which porchsim records and the harness fails on). Both drafts
// are made, one after the other.
func TestLoopWritesIntoOneRepositoryNeverOverlap(t *testing.T) {
	h := newHarness(t)
	var once sync.Once
	h.sim.OnWrite(func(_, repo, what string) {
		if repo != "deploy" || !strings.HasPrefix(what, "create ") {
			return
		}
		once.Do(func() {
			h.eventually("the other variant's write to wait for the repository, or to overlap", func() bool {
				return h.ctrl.porch.locks.Waiting(testNS, "deploy") > 0 || h.sim.WritesInProgress(testNS, "deploy") > 1
			})
		})
	})
	h.create(newVariant("a", "a"))
	h.create(newVariant("b", "b"))
	h.waitReady("a")
	h.waitReady("b")
	h.settle()
	h.expectRevisions("a", "packagevariant-1:Draft")
	h.expectRevisions("b", "packagevariant-1:Draft")
	if o := h.sim.Overlaps(); len(o) > 0 {
		t.Errorf("writes overlapped: %v", o)
	}
}
