// Package ownwrites remembers a controller's own writes of the objects it
// syncs until its informer cache shows them. An object is often synced
// again before the cache shows the controller's last write of it (another
// event arrives first); syncing from the cached copy would then send a
// write with a stale resourceVersion and lose a round trip to a Conflict.
package ownwrites

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Objects holds, per object UID, what the controller's last write of it
// returned and the resourceVersions its writes replaced since the cache
// last caught up. While the cache still shows one of those versions, the
// written object is the newest; once the cache moves on (to this write or
// past it, or to a version someone else wrote), the cache is right again
// and the entry goes. Safe for concurrent use; the zero value is ready.
type Objects[T metav1.Object] struct {
	mu      sync.Mutex
	entries map[types.UID]entry[T]
}

type entry[T metav1.Object] struct {
	// replaced are the versions the chain of own writes ending in obj
	// replaced, oldest first: a write made onto the previous one's answer
	// extends the chain, so a cache that is more than one write behind
	// still gets the newest.
	replaced []string
	obj      T
}

// maxChain bounds the versions an entry remembers: a cache that many of
// the controller's own writes behind gets the cached object (and the next
// write a Conflict, as without this package).
const maxChain = 8

// Record notes that a write replaced version replaced and returned written.
func (o *Objects[T]) Record(replaced string, written T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.entries == nil {
		o.entries = map[types.UID]entry[T]{}
	}
	chain := []string{replaced}
	if e, ok := o.entries[written.GetUID()]; ok && e.obj.GetResourceVersion() == replaced {
		chain = append(e.replaced[max(0, len(e.replaced)+1-maxChain):len(e.replaced):len(e.replaced)], replaced)
	}
	o.entries[written.GetUID()] = entry[T]{replaced: chain, obj: written}
}

// Latest returns the newest known state of an object the cache returned:
// the cached object, or the controller's own write when the cache has not
// shown it yet. The result must not be modified.
func (o *Objects[T]) Latest(cached T) T {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[cached.GetUID()]
	if !ok {
		return cached
	}
	if slices.Contains(e.replaced, cached.GetResourceVersion()) {
		return e.obj
	}
	delete(o.entries, cached.GetUID())
	return cached
}

// Own reports whether obj, as an event brought it, is the controller's
// own last write of it: its echo, which tells the controller nothing new.
func (o *Objects[T]) Own(obj T) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.entries[obj.GetUID()]
	return ok && e.obj.GetResourceVersion() == obj.GetResourceVersion()
}

// Get starts the sync of the object of key, a kind ("PackageVariant"): ctx
// gets a logger naming the object (as "packageVariant"), and the object is
// what get (a namespace lister's Get) returns for its name, in its newest
// known state (Latest). An object the cache does not have is gone: nil and
// no error.
func (o *Objects[T]) Get(ctx context.Context, kind string, key cache.ObjectName, get func(name string) (T, error)) (context.Context, T, error) {
	logger := klog.FromContext(ctx).WithValues(strings.ToLower(kind[:1])+kind[1:], key.String())
	ctx = klog.NewContext(ctx, logger)
	var none T
	cached, err := get(key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info(kind + " is gone")
		return ctx, none, nil
	}
	if err != nil {
		return ctx, none, fmt.Errorf("get %s %s: %w", kind, key, err)
	}
	return ctx, o.Latest(cached), nil
}

// Forget drops what is remembered of an object that is gone.
func (o *Objects[T]) Forget(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.entries, uid)
}
