package offline

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"

	configv1alpha1informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha1"
	configv1alpha2informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha2"
	porchinformers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/porch/v1alpha1"
	configv1alpha1listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha1"
	configv1alpha2listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha2"
	porchlisters "github.com/porch-variants/variant-controller/pkg/generated/listers/porch/v1alpha1"
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
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
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

// The typed informer interfaces the controllers take, serving tracked
// shared informers.

type variantInformer struct {
	configv1alpha1informers.PackageVariantInformer
	inf *trackedInformer
}

func (i variantInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i variantInformer) Lister() configv1alpha1listers.PackageVariantLister {
	return i.PackageVariantInformer.Lister()
}

type setInformer struct {
	configv1alpha2informers.PackageVariantSetInformer
	inf *trackedInformer
}

func (i setInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i setInformer) Lister() configv1alpha2listers.PackageVariantSetLister {
	return i.PackageVariantSetInformer.Lister()
}

type repositoryInformer struct {
	configv1alpha1informers.RepositoryInformer
	inf *trackedInformer
}

func (i repositoryInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i repositoryInformer) Lister() configv1alpha1listers.RepositoryLister {
	return i.RepositoryInformer.Lister()
}

type revisionInformer struct {
	porchinformers.PackageRevisionInformer
	inf *trackedInformer
}

func (i revisionInformer) Informer() cache.SharedIndexInformer { return i.inf }
func (i revisionInformer) Lister() porchlisters.PackageRevisionLister {
	return i.PackageRevisionInformer.Lister()
}
