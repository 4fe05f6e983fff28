package offline

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// clusterObjects are the in-cluster objects (Options.Objects) the
// controllers read: a fake dynamic client and a matching REST mapper.
type clusterObjects struct {
	dyn    *dynamicfake.FakeDynamicClient
	mapper meta.RESTMapper

	mu sync.Mutex
	// watched holds, per resource, a channel closed once the resource is
	// watched.
	watched map[schema.GroupVersionResource]chan struct{}
	// waiters holds, per object, the channels of writes waiting until the
	// controllers' handlers heard of them.
	waiters map[objectName][]chan struct{}
	// handlersSynced reports whether the controllers' handlers of a kind
	// were called for its first list (nil: not known, not waited for).
	handlersSynced func(schema.GroupVersionKind) bool
}

// objectName names an in-cluster object as the controllers' handlers hear
// of it.
type objectName struct {
	gk              schema.GroupKind
	namespace, name string
}

// heard is called after the controllers' own handlers for each event of an
// in-cluster object: the writes waiting for it may return.
func (c *clusterObjects) heard(gk schema.GroupKind, namespace, name string) {
	key := objectName{gk, namespace, name}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.waiters[key] {
		close(ch)
	}
	delete(c.waiters, key)
}

// waitHeard registers a wait for the next event of obj the controllers
// hear; the returned func cancels it.
func (c *clusterObjects) waitHeard(obj *unstructured.Unstructured) (<-chan struct{}, func()) {
	key := objectName{obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName()}
	ch := make(chan struct{})
	c.mu.Lock()
	c.waiters[key] = append(c.waiters[key], ch)
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.waiters[key] = slices.DeleteFunc(c.waiters[key], func(x chan struct{}) bool { return x == ch })
		if len(c.waiters[key]) == 0 {
			delete(c.waiters, key)
		}
	}
}

// watchedChan is the channel closed once resource is watched.
func (c *clusterObjects) watchedChan(resource schema.GroupVersionResource) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watchedLocked(resource)
}

func (c *clusterObjects) watchedLocked(resource schema.GroupVersionResource) chan struct{} {
	ch, ok := c.watched[resource]
	if !ok {
		ch = make(chan struct{})
		c.watched[resource] = ch
	}
	return ch
}

// watching records that a watch of resource was established.
func (c *clusterObjects) watching(resource schema.GroupVersionResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.watchedLocked(resource)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// resourceOf waits until the controllers watch obj's kind, then returns
// the client of obj's resource (in obj's namespace if it has one).
func (c *clusterObjects) resourceOf(ctx context.Context, obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	what := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	select {
	case <-c.watchedChan(mapping.Resource):
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: the controllers do not watch %s: %w", what, mapping.Resource.Resource, ctx.Err())
	}
	res := c.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return res.Namespace(obj.GetNamespace()), nil
	}
	return res, nil
}

// CreateObject adds an in-cluster object (as Options.Objects holds them)
// while the controllers run. It first waits until they watch the object's
// kind (or ctx ends): a change made before that would never reach them. A
// kind nothing reads is never watched, so give ctx a deadline. It returns
// once the controllers' handlers heard of the new object.
func (r *Runner) CreateObject(ctx context.Context, obj *unstructured.Unstructured) error {
	return r.objects.write(ctx, obj, func(res dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
		return res.Create(ctx, obj, metav1.CreateOptions{})
	})
}

// UpdateObject changes an in-cluster object while the controllers run,
// once they watch its kind, as CreateObject does.
func (r *Runner) UpdateObject(ctx context.Context, obj *unstructured.Unstructured) error {
	return r.objects.write(ctx, obj, func(res dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
		return res.Update(ctx, obj, metav1.UpdateOptions{})
	})
}

// write writes obj with do through its resource's client, once the
// controllers watch its kind, and returns once their handlers heard of the
// write: the fake's watch delivers it apart from the Sim's, which WaitIdle
// follows, so a WaitIdle after write covers what the write set going.
func (c *clusterObjects) write(ctx context.Context, obj *unstructured.Unstructured, do func(dynamic.ResourceInterface) (*unstructured.Unstructured, error)) error {
	res, err := c.resourceOf(ctx, obj)
	if err != nil {
		return err
	}
	// An event of the first list handled late would end the wait below
	// before the write's own event.
	if synced := c.handlersSynced; synced != nil {
		gvk := obj.GroupVersionKind()
		if err := wait.PollUntilContextCancel(ctx, time.Millisecond, true, func(context.Context) (bool, error) { return synced(gvk), nil }); err != nil {
			return fmt.Errorf("%s %s/%s: the controllers did not handle the first list of its kind: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	heard, cancel := c.waitHeard(obj)
	defer cancel()
	if _, err := do(res); err != nil {
		return err
	}
	select {
	case <-heard:
		return nil
	case <-ctx.Done():
		gvk := obj.GroupVersionKind()
		return fmt.Errorf("%s %s/%s written, but the controllers did not hear of it: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), ctx.Err())
	}
}

// ObjectRequests counts the requests the controllers made for in-cluster
// objects by "<verb> <resource>" ("list configmaps"), as
// porchsim.Sim.Requests counts those to Porch.
func (r *Runner) ObjectRequests() map[string]int {
	out := map[string]int{}
	for _, a := range r.objects.dyn.Actions() {
		out[a.GetVerb()+" "+a.GetResource().Resource]++
	}
	return out
}

// ClusterObjects are a cluster's in-cluster objects (those injectors and
// objectSelectors name), listed while the controllers run, each kind in each
// namespace the first time they list it. variantctl diff reads a live
// cluster through one; this package holds no cluster client of its own.
type ClusterObjects interface {
	// RESTMapper maps the cluster's kinds to its resources.
	RESTMapper() meta.RESTMapper
	// ListKinds are the list kinds of every listable resource the
	// cluster serves (what a fake dynamic client needs to list them).
	ListKinds() map[schema.GroupVersionResource]string
	// List lists resource in namespace ("": every namespace the run
	// reads) the first time it is asked (fresh); later calls return no
	// items, fresh false and the first call's error.
	List(ctx context.Context, resource schema.GroupVersionResource, namespace string) (items []unstructured.Unstructured, fresh bool, err error)
	// Errors are the lists that failed, sorted.
	Errors() []error
}

// builtinKinds are served even when no object of theirs is given.
var builtinKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
}

// objectClient serves the given objects (and empty builtin and extra
// kinds) through a fake dynamic client with a matching REST mapper. A kind
// is namespaced unless one of its objects has no namespace. With live, the
// cluster's kinds are served too, and its objects on first list.
func objectClient(objs []*unstructured.Unstructured, extra []schema.GroupVersionKind, live ClusterObjects) (*clusterObjects, error) {
	local, listKinds, err := kindsOf(objs, extra)
	if err != nil {
		return nil, err
	}
	var mapper meta.RESTMapper = local
	if live != nil {
		// The cluster knows its kinds best; kinds only the change has come
		// from the local mapper.
		mapper = meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{live.RESTMapper(), local}}
		for gvr, kind := range live.ListKinds() {
			if _, ok := listKinds[gvr]; !ok {
				listKinds[gvr] = kind
			}
		}
	}
	var runtimeObjs []runtime.Object
	for _, o := range objs {
		runtimeObjs = append(runtimeObjs, o.DeepCopy())
	}
	c := &clusterObjects{
		dyn:     dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, runtimeObjs...),
		mapper:  mapper,
		watched: map[schema.GroupVersionResource]chan struct{}{},
		waiters: map[objectName][]chan struct{}{},
	}
	// The fake's watch starts at "now": a change made before the
	// controllers watch its kind never reaches them. This reactor watches
	// as the fake's own does and tells when a resource is first watched.
	c.dyn.PrependWatchReactor("*", func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if a, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = a.ListOptions
		}
		w, err := c.dyn.Tracker().Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		c.watching(action.GetResource())
		return true, w, nil
	})
	if live != nil {
		c.dyn.PrependReactor("list", "*", c.listFrom(live))
	}
	return c, nil
}

// kindsOf checks the given objects (a kind, a name, each once) and maps
// their kinds, the builtin and the extra ones: namespaced unless one of
// its objects has no namespace.
func kindsOf(objs []*unstructured.Unstructured, extra []schema.GroupVersionKind) (*meta.DefaultRESTMapper, map[schema.GroupVersionResource]string, error) {
	scopes := map[schema.GroupVersionKind]meta.RESTScope{}
	kinds := append(append([]schema.GroupVersionKind(nil), builtinKinds...), extra...)
	type objectID struct {
		gk              schema.GroupKind
		namespace, name string
	}
	ids := map[objectID]bool{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return nil, nil, fmt.Errorf("object %s/%s has no apiVersion or kind", o.GetNamespace(), o.GetName())
		}
		if o.GetName() == "" {
			return nil, nil, fmt.Errorf("%s object has no metadata.name", gvk.Kind)
		}
		id := objectID{gvk.GroupKind(), o.GetNamespace(), o.GetName()}
		if ids[id] {
			return nil, nil, fmt.Errorf("%s %s/%s is given twice", gvk.Kind, o.GetNamespace(), o.GetName())
		}
		ids[id] = true
		kinds = append(kinds, gvk)
		if o.GetNamespace() == "" {
			scopes[gvk] = meta.RESTScopeRoot
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	mapper := meta.NewDefaultRESTMapper(nil)
	listKinds := map[schema.GroupVersionResource]string{}
	seen := map[schema.GroupVersionKind]bool{}
	for _, gvk := range kinds {
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		scope := scopes[gvk]
		if scope == nil {
			scope = meta.RESTScopeNamespace
		}
		mapper.Add(gvk, scope)
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		listKinds[plural] = gvk.Kind + "List"
	}
	return mapper, listKinds, nil
}

// listFrom is a list reactor: a list of a kind in a namespace first brings
// in the cluster's objects; the fake then serves it (and its watches) from
// those. An object given to the run takes the cluster's one's place.
func (c *clusterObjects) listFrom(live ClusterObjects) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		gvr, ns := action.GetResource(), action.GetNamespace()
		items, fresh, err := live.List(context.Background(), gvr, ns)
		if err != nil {
			return true, nil, err
		}
		if fresh {
			for i := range items {
				item := &items[i]
				if _, err := c.dyn.Tracker().Get(gvr, item.GetNamespace(), item.GetName()); err == nil {
					continue // given by the change: it takes the cluster's place
				}
				if err := c.dyn.Tracker().Create(gvr, item, item.GetNamespace()); err != nil {
					return true, nil, err
				}
			}
		}
		return false, nil, nil
	}
}
