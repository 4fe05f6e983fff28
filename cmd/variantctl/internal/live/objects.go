package live

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Objects reads a cluster's in-cluster objects (those injectors and
// objectSelectors name) for a run, one list per kind and namespace, the
// first time the controllers list that kind in that namespace: a diff
// reads only the kinds its variants use, never every object of the
// cluster.
type Objects struct {
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
	// listKinds are the list kinds of every listable resource the cluster
	// serves (what the fake dynamic client must know to serve a list).
	listKinds map[schema.GroupVersionResource]string
	// namespaces are those the run reads: the controllers list kinds
	// across the cluster, the diff only in these (a reader may be granted
	// no more).
	namespaces []string

	mu      sync.Mutex
	fetched map[string]bool // "<group/version/resource> <namespace>"
	errs    map[string]error
}

// NewObjects reads the cluster's API resources through discovery
// (build cfg with ReadOnlyConfig). Objects are read from the given
// namespaces only.
func NewObjects(cfg *rest.Config, namespaces []string) (*Objects, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		return nil, &ClusterError{What: "discover the cluster's API resources", Err: err}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	l := &Objects{
		dynamic:    dyn,
		mapper:     restmapper.NewDiscoveryRESTMapper(groups),
		listKinds:  map[schema.GroupVersionResource]string{},
		fetched:    map[string]bool{},
		namespaces: namespaces,
		errs:       map[string]error{},
	}
	for _, g := range groups {
		for version, resources := range g.VersionedResources {
			for _, r := range resources {
				if r.Kind == "" || !slices.Contains(r.Verbs, "list") {
					continue
				}
				l.listKinds[schema.GroupVersionResource{Group: g.Group.Name, Version: version, Resource: r.Name}] = r.Kind + "List"
			}
		}
	}
	return l, nil
}

// RESTMapper is the cluster's, from discovery.
func (l *Objects) RESTMapper() meta.RESTMapper { return l.mapper }

// ListKinds are the list kinds of the cluster's listable resources.
func (l *Objects) ListKinds() map[schema.GroupVersionResource]string { return l.listKinds }

// List lists resource in namespace from the cluster once; later calls
// return the first outcome's error and no items.
func (l *Objects) List(ctx context.Context, resource schema.GroupVersionResource, namespace string) ([]unstructured.Unstructured, bool, error) {
	key := resource.String() + " " + namespace
	l.mu.Lock()
	if l.fetched[key] {
		err := l.errs[key]
		l.mu.Unlock()
		return nil, false, err
	}
	l.fetched[key] = true
	l.mu.Unlock()
	namespaces := []string{namespace}
	if namespace == "" {
		namespaces = l.namespaces
	}
	var items []unstructured.Unstructured
	for _, ns := range namespaces {
		list, err := l.dynamic.Resource(resource).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			err = &ClusterError{What: fmt.Sprintf("list %s in namespace %s (an injector or objectSelector names them)", resource.GroupResource(), ns), Err: err}
			l.mu.Lock()
			l.errs[key] = err
			l.mu.Unlock()
			return nil, false, err
		}
		items = append(items, list.Items...)
	}
	return items, true, nil
}

// Errors are the lists that failed, sorted.
func (l *Objects) Errors() []error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.errs))
	for k := range l.errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]error, 0, len(keys))
	for _, k := range keys {
		out = append(out, l.errs[k])
	}
	return out
}
