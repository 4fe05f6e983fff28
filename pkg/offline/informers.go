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
	handlers map[string][]*int64 // by resource
}

func newProgress(sim *porchsim.Sim) *progress {
	return &progress{sim: sim, handlers: map[string][]*int64{}}
}

func (p *progress) register(resource string) *int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := new(int64)
	p.handlers[resource] = append(p.handlers[resource], seen)
	return seen
}

func (p *progress) handled(seen *int64, obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv := p.sim.Sequence(m.GetResourceVersion())
	p.mu.Lock()
	defer p.mu.Unlock()
	if rv > *seen {
		*seen = rv
	}
}

// caughtUp reports whether every handler has handled the newest change of
// its resource the Sim has delivered.
func (p *progress) caughtUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for resource, handlers := range p.handlers {
		latest := p.sim.DeliveredResourceVersion(resource)
		for _, seen := range handlers {
			if *seen < latest {
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
			t.progress.handled(seen, obj)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			h.OnUpdate(oldObj, newObj)
			t.progress.handled(seen, newObj)
		},
		DeleteFunc: func(obj interface{}) {
			h.OnDelete(obj)
			t.progress.handled(seen, obj)
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
