package offline

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/porch-variants/variant-controller/pkg/controller/handlers"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// progress records, for each event handler a controller registered on a
// shared informer, the newest resourceVersion it has finished handling.
// The controllers have caught up with the Sim when every handler of a
// resource has handled the Sim's newest delivered change of it.
type progress struct {
	sim      *porchsim.Sim
	mu       sync.Mutex
	handlers map[string][]*handlerProgress // by resource
}

// handlerProgress is what one event handler has handled: the newest
// resourceVersion, and the objects it knows (added and not deleted).
type handlerProgress struct {
	seen  int64
	known map[string]struct{} // namespace/name
}

func newProgress(sim *porchsim.Sim) *progress {
	return &progress{sim: sim, handlers: map[string][]*handlerProgress{}}
}

func (p *progress) register(resource string) *handlerProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := &handlerProgress{known: map[string]struct{}{}}
	p.handlers[resource] = append(p.handlers[resource], h)
	return h
}

func (p *progress) handled(h *handlerProgress, obj interface{}, deleted bool) {
	m := handlers.Meta(obj)
	if m == nil {
		return
	}
	rv := p.sim.Sequence(m.GetResourceVersion())
	key := m.GetNamespace() + "/" + m.GetName()
	p.mu.Lock()
	defer p.mu.Unlock()
	if rv > h.seen {
		h.seen = rv
	}
	if deleted {
		delete(h.known, key)
	} else {
		h.known[key] = struct{}{}
	}
}

// caughtUp reports whether every handler has handled the newest change of
// its resource the Sim has delivered (passing over deletions of objects a
// handler never knew: a handler that started later never hears of them).
func (p *progress) caughtUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for resource, handlers := range p.handlers {
		latest := p.sim.DeliveredResourceVersion(resource, nil)
		for _, h := range handlers {
			if h.seen >= latest {
				continue
			}
			unknown := func(namespace, name string) bool {
				_, ok := h.known[namespace+"/"+name]
				return !ok
			}
			if h.seen < p.sim.DeliveredResourceVersion(resource, unknown) {
				return false
			}
		}
	}
	return true
}

// trackedInformer hands the controllers' event handlers to the shared
// informer wrapped so that progress learns what each has handled.
type trackedInformer struct {
	cache.SharedIndexInformer
	resource string
	progress *progress
}

func (t *trackedInformer) wrap(h cache.ResourceEventHandler) cache.ResourceEventHandler {
	seen := t.progress.register(t.resource)
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, initial bool) {
			h.OnAdd(obj, initial)
			t.progress.handled(seen, obj, false)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			h.OnUpdate(oldObj, newObj)
			t.progress.handled(seen, newObj, false)
		},
		DeleteFunc: func(obj interface{}) {
			h.OnDelete(obj)
			t.progress.handled(seen, obj, true)
		},
	}
}

func (t *trackedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return t.SharedIndexInformer.AddEventHandler(t.wrap(h))
}

func (t *trackedInformer) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resync time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return t.SharedIndexInformer.AddEventHandlerWithResyncPeriod(t.wrap(h), resync)
}

func (t *trackedInformer) AddEventHandlerWithOptions(h cache.ResourceEventHandler, opts cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return t.SharedIndexInformer.AddEventHandlerWithOptions(t.wrap(h), opts)
}

// tracked serves a typed informer interface the controllers take (a
// generated XxxInformer: its Informer and Lister) with a tracked shared
// informer.
type tracked[L any] struct {
	typed interface{ Lister() L }
	inf   *trackedInformer
}

func (i tracked[L]) Informer() cache.SharedIndexInformer { return i.inf }
func (i tracked[L]) Lister() L                           { return i.typed.Lister() }

// track wraps a generated typed informer so that progress learns what its
// handlers handled.
func track[L any](p *progress, resource string, typed interface {
	Informer() cache.SharedIndexInformer
	Lister() L
}) tracked[L] {
	return tracked[L]{typed: typed, inf: &trackedInformer{SharedIndexInformer: typed.Informer(), resource: resource, progress: p}}
}
