package packagevariant

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// writtenVariants remembers, per variant, the object the controller's last
// write of it returned and the resourceVersion it replaced. A variant is
// often synced again before the informer cache shows that write (a Porch
// event arrives first); syncing from the cached copy would then send a
// status with a stale resourceVersion and lose a round trip to a Conflict.
// While the cache still shows the replaced version, the written object is
// the newer one; once the cache moves on (to this write or past it), the
// cache is right again and the entry goes.
type writtenVariants struct {
	mu      sync.Mutex
	entries map[types.UID]writtenVariant
}

type writtenVariant struct {
	replaced string // resourceVersion the write replaced
	obj      *configv1alpha1.PackageVariant
}

func newWrittenVariants() *writtenVariants {
	return &writtenVariants{entries: map[types.UID]writtenVariant{}}
}

// record notes that a write replaced the version replaced with obj.
func (w *writtenVariants) record(replaced string, obj *configv1alpha1.PackageVariant) {
	if obj == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries[obj.UID] = writtenVariant{replaced: replaced, obj: obj}
}

// latest returns the newest known state of a variant the cache returned:
// the cached object, or the controller's own write when the cache has not
// shown it yet. The result must not be modified.
func (w *writtenVariants) latest(cached *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.entries[cached.UID]
	if !ok {
		return cached
	}
	if cached.ResourceVersion == e.replaced {
		return e.obj
	}
	delete(w.entries, cached.UID)
	return cached
}

// forget drops what is remembered of a variant that is gone.
func (w *writtenVariants) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.entries, uid)
}
