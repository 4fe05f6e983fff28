package apiserver

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// typedClient is the part of a generated typed client a storage passes
// requests to.
type typedClient[T object, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// resource is what every namespaced resource this server serves does the
// same way: its empty objects, its names, get, list and update (and so
// patch). The storages of the resources embed it and add their own verbs.
type resource[T object, L runtime.Object] struct {
	client   func(namespace string) typedClient[T, L]
	newObj   func() T
	newList  func() L
	singular string
	tableConvertor
}

var (
	_ rest.Storage              = &resource[object, runtime.Object]{}
	_ rest.Scoper               = &resource[object, runtime.Object]{}
	_ rest.SingularNameProvider = &resource[object, runtime.Object]{}
	_ rest.Getter               = &resource[object, runtime.Object]{}
	_ rest.Lister               = &resource[object, runtime.Object]{}
	_ rest.Updater              = &resource[object, runtime.Object]{}
)

// New returns an empty object of the resource.
func (r *resource[T, L]) New() runtime.Object { return r.newObj() }

// NewList returns an empty list of the resource.
func (r *resource[T, L]) NewList() runtime.Object { return r.newList() }

// Destroy does nothing: the Sim outlives the server.
func (r *resource[T, L]) Destroy() {}

// NamespaceScoped is true: Porch's resources live in a Repository's
// namespace.
func (r *resource[T, L]) NamespaceScoped() bool { return true }

// GetSingularName is the singular resource name.
func (r *resource[T, L]) GetSingularName() string { return r.singular }

// Get returns one object.
func (r *resource[T, L]) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return served(r.client(namespaceOf(ctx)).Get(ctx, name, *opts))
}

// List lists objects; label and field selectors go to the Sim, which
// rejects the fields Porch does not index.
func (r *resource[T, L]) List(ctx context.Context, o *metainternalversion.ListOptions) (runtime.Object, error) {
	opts, err := listOptions(o)
	if err != nil {
		return nil, err
	}
	return served(r.client(namespaceOf(ctx)).List(ctx, opts))
}

// Update updates (or patches) an object. Porch never creates one on update,
// so forceAllowCreate has no effect: a missing one is NotFound.
func (r *resource[T, L]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, false, err
	}
	client := r.client(namespaceOf(ctx))
	out, err := updateThrough(ctx, objInfo, validate,
		func() (T, error) { return client.Get(ctx, name, metav1.GetOptions{}) },
		func(in T) (T, error) { return client.Update(ctx, in, *opts) })
	return out, false, err
}
