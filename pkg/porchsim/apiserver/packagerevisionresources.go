package apiserver

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

// packageRevisionResources serves packagerevisionresources from the Sim:
// get, list and update (and so patch), the verbs Porch serves. They are not
// watchable, as in Porch.
type packageRevisionResources struct {
	client porchclient.PackageRevisionResourcesGetter
	tableConvertor
}

var (
	_ rest.Storage              = &packageRevisionResources{}
	_ rest.Scoper               = &packageRevisionResources{}
	_ rest.SingularNameProvider = &packageRevisionResources{}
	_ rest.Getter               = &packageRevisionResources{}
	_ rest.Lister               = &packageRevisionResources{}
	_ rest.Updater              = &packageRevisionResources{}
)

func newPackageRevisionResources(client porchclient.PackageRevisionResourcesGetter) *packageRevisionResources {
	return &packageRevisionResources{client: client, tableConvertor: packageRevisionResourcesTable}
}

// New returns an empty PackageRevisionResources.
func (r *packageRevisionResources) New() runtime.Object {
	return &porchv1alpha1.PackageRevisionResources{}
}

// NewList returns an empty PackageRevisionResourcesList.
func (r *packageRevisionResources) NewList() runtime.Object {
	return &porchv1alpha1.PackageRevisionResourcesList{}
}

// Destroy does nothing: the Sim outlives the server.
func (r *packageRevisionResources) Destroy() {}

// NamespaceScoped is true, like the PackageRevisions they belong to.
func (r *packageRevisionResources) NamespaceScoped() bool { return true }

// GetSingularName is the singular resource name (Porch's plural and
// singular are the same word).
func (r *packageRevisionResources) GetSingularName() string { return "packagerevisionresources" }

// Get returns the files of one PackageRevision.
func (r *packageRevisionResources) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return served(r.client.PackageRevisionResources(namespaceOf(ctx)).Get(ctx, name, *opts))
}

// List lists the files of PackageRevisions, with Porch's field selectors.
func (r *packageRevisionResources) List(ctx context.Context, o *metainternalversion.ListOptions) (runtime.Object, error) {
	opts, err := listOptions(o)
	if err != nil {
		return nil, err
	}
	return served(r.client.PackageRevisionResources(namespaceOf(ctx)).List(ctx, opts))
}

// Update stores the files of a Draft; the answer carries the render status.
func (r *packageRevisionResources) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, false, err
	}
	client := r.client.PackageRevisionResources(namespaceOf(ctx))
	out, err := updateThrough(ctx, objInfo, validate,
		func() (*porchv1alpha1.PackageRevisionResources, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
		func(prr *porchv1alpha1.PackageRevisionResources) (*porchv1alpha1.PackageRevisionResources, error) {
			return client.Update(ctx, prr, *opts)
		})
	return out, false, err
}
