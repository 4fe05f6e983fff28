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
	resource[*porchv1alpha1.PackageRevision, *porchv1alpha1.PackageRevisionList]
	porch porchclient.PackageRevisionsGetter
}

var (
	_ rest.Storage         = &packageRevisions{}
	_ rest.Watcher         = &packageRevisions{}
	_ rest.Creater         = &packageRevisions{}
	_ rest.Updater         = &packageRevisions{}
	_ rest.GracefulDeleter = &packageRevisions{}
)

func newPackageRevisions(client porchclient.PackageRevisionsGetter) *packageRevisions {
	return &packageRevisions{
		resource: resource[*porchv1alpha1.PackageRevision, *porchv1alpha1.PackageRevisionList]{
			client: func(namespace string) typedClient[*porchv1alpha1.PackageRevision, *porchv1alpha1.PackageRevisionList] {
				return client.PackageRevisions(namespace)
			},
			newObj:         func() *porchv1alpha1.PackageRevision { return &porchv1alpha1.PackageRevision{} },
			newList:        func() *porchv1alpha1.PackageRevisionList { return &porchv1alpha1.PackageRevisionList{} },
			singular:       "packagerevision",
			tableConvertor: packageRevisionTable,
		},
		porch: client,
	}
}

// Watch watches PackageRevisions through the Sim's watch.
func (r *packageRevisions) Watch(ctx context.Context, o *metainternalversion.ListOptions) (watch.Interface, error) {
	opts, err := listOptions(o)
	if err != nil {
		return nil, err
	}
	client := r.porch.PackageRevisions(namespaceOf(ctx))
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
	return served(r.porch.PackageRevisions(namespaceOf(ctx)).Create(ctx, pr, *opts))
}

// Delete deletes a PackageRevision with the request's preconditions and
// propagation policy. It answers with the object's last state and whether
// it is gone; one with finalizers stays, marked for deletion.
func (r *packageRevisions) Delete(ctx context.Context, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, false, err
	}
	client := r.porch.PackageRevisions(namespaceOf(ctx))
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
