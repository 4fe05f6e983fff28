package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

// packageRevisions serves packagerevisions from the Sim: get, list, watch,
// create, update (and so patch) and delete.
type packageRevisions struct {
	client porchclient.PackageRevisionsGetter
	tableConvertor
}

var (
	_ rest.Storage              = &packageRevisions{}
	_ rest.Scoper               = &packageRevisions{}
	_ rest.SingularNameProvider = &packageRevisions{}
	_ rest.Getter               = &packageRevisions{}
	_ rest.Lister               = &packageRevisions{}
	_ rest.Watcher              = &packageRevisions{}
	_ rest.Creater              = &packageRevisions{}
	_ rest.Updater              = &packageRevisions{}
	_ rest.GracefulDeleter      = &packageRevisions{}
)

func newPackageRevisions(client porchclient.PackageRevisionsGetter) *packageRevisions {
	return &packageRevisions{client: client, tableConvertor: packageRevisionTable}
}

// New returns an empty PackageRevision.
func (r *packageRevisions) New() runtime.Object { return &porchv1alpha1.PackageRevision{} }

// NewList returns an empty PackageRevisionList.
func (r *packageRevisions) NewList() runtime.Object { return &porchv1alpha1.PackageRevisionList{} }

// Destroy does nothing: the Sim outlives the server.
func (r *packageRevisions) Destroy() {}

// NamespaceScoped is true: PackageRevisions live in a Repository's namespace.
func (r *packageRevisions) NamespaceScoped() bool { return true }

// GetSingularName is the singular resource name.
func (r *packageRevisions) GetSingularName() string { return "packagerevision" }

// Get returns one PackageRevision.
func (r *packageRevisions) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return served(r.client.PackageRevisions(namespaceOf(ctx)).Get(ctx, name, *opts))
}

// List lists PackageRevisions; label and field selectors go to the Sim,
// which rejects the fields Porch does not index.
func (r *packageRevisions) List(ctx context.Context, o *metainternalversion.ListOptions) (runtime.Object, error) {
	opts, err := listOptions(o)
	if err != nil {
		return nil, err
	}
	return served(r.client.PackageRevisions(namespaceOf(ctx)).List(ctx, opts))
}

// Watch watches PackageRevisions through the Sim's watch.
func (r *packageRevisions) Watch(ctx context.Context, o *metainternalversion.ListOptions) (watch.Interface, error) {
	opts, err := listOptions(o)
	if err != nil {
		return nil, err
	}
	client := r.client.PackageRevisions(namespaceOf(ctx))
	// Like Porch, every watch replays every revision as ADDED and then marks
	// the end of that replay with a bookmark, whatever resourceVersion it
	// names: so a watch-list client gets its initial state from the watch
	// itself.
	inner := opts
	inner.ResourceVersion, inner.ResourceVersionMatch, inner.SendInitialEvents = "", "", nil
	w, err := client.Watch(ctx, inner)
	if err != nil {
		return nil, err
	}
	if opts.AllowWatchBookmarks {
		return w, nil
	}
	return newFilterWatch(ctx, w, func(ev watch.Event) bool { return ev.Type != watch.Bookmark }), nil
}

// Create creates a PackageRevision; the Sim names it and makes its files
// from its one task, as Porch does.
func (r *packageRevisions) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, err
	}
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, apierrors.NewBadRequest("expected a PackageRevision")
	}
	if validate != nil {
		if err := validate(ctx, pr); err != nil {
			return nil, err
		}
	}
	return served(r.client.PackageRevisions(namespaceOf(ctx)).Create(ctx, pr, *opts))
}

// Update updates (or patches) a PackageRevision. Porch never creates one on
// update, so forceAllowCreate has no effect: a missing one is NotFound.
func (r *packageRevisions) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, false, err
	}
	client := r.client.PackageRevisions(namespaceOf(ctx))
	out, err := updateThrough(ctx, objInfo, validate,
		func() (*porchv1alpha1.PackageRevision, error) { return client.Get(ctx, name, metav1.GetOptions{}) },
		func(pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
			return client.Update(ctx, pr, *opts)
		})
	return out, false, err
}

// Delete deletes a PackageRevision with the request's preconditions and
// propagation policy. It answers with the object's last state and whether
// it is gone; one with finalizers stays, marked for deletion.
func (r *packageRevisions) Delete(ctx context.Context, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, false, err
	}
	client := r.client.PackageRevisions(namespaceOf(ctx))
	cur, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	if validate != nil {
		if err := validate(ctx, cur); err != nil {
			return nil, false, err
		}
	}
	if err := client.Delete(ctx, name, *opts); err != nil {
		return nil, false, err
	}
	after, err := client.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return cur, true, nil
	case err != nil:
		return nil, false, err
	case after.UID != cur.UID:
		// Deleted and created again meanwhile: ours is gone.
		return cur, true, nil
	}
	return after, false, nil
}
