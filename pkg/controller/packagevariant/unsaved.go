package packagevariant

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// unsavedApplied remembers, per variant, the status.applied a sync meant
// to store when its status write failed: the files the sync wrote into a
// draft are then the controller's own, though the stored status still
// names the files before. The next sync starts from what is remembered, as
// long as the stored status is still the one the failed write started
// from. A restart forgets it; the next controller then finds a record of
// before a write the variant owed and a draft that holds all the variant
// asks, and takes the draft for unverified (unrecordedWrite), never for
// its own. Safe for concurrent use; the zero value is ready.
type unsavedApplied struct {
	mu      sync.Mutex
	entries map[types.UID]unsavedEntry
}

type unsavedEntry struct {
	from, to *configv1alpha1.AppliedState
}

// remember notes that the status of pv (as stored) should have become to.
func (u *unsavedApplied) remember(pv *configv1alpha1.PackageVariant, to *configv1alpha1.AppliedState) {
	if equality.Semantic.DeepEqual(pv.Status.Applied, to) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.entries == nil {
		u.entries = map[types.UID]unsavedEntry{}
	}
	u.entries[pv.UID] = unsavedEntry{from: pv.Status.Applied.DeepCopy(), to: to.DeepCopy()}
}

// restore returns pv with the remembered status.applied when its stored
// one is still the one the failed write started from; pv itself
// otherwise. pv is not modified.
func (u *unsavedApplied) restore(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.entries[pv.UID]
	if !ok {
		return pv
	}
	if !equality.Semantic.DeepEqual(pv.Status.Applied, e.from) {
		// Something newer was stored since.
		delete(u.entries, pv.UID)
		return pv
	}
	out := pv.DeepCopy()
	out.Status.Applied = e.to.DeepCopy()
	return out
}

// forget drops what is remembered of a variant (its status was stored, or
// it is gone).
func (u *unsavedApplied) forget(uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.entries, uid)
}
