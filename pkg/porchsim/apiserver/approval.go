package apiserver

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	clienttesting "k8s.io/client-go/testing"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

var (
	_ rest.Storage = &approval{}
	_ rest.Getter  = &approval{}
	_ rest.Updater = &approval{}
)

// invoker sends an action the typed clientset has no method for (the
// approval subresource) to the Sim.
type invoker interface {
	Invokes(action clienttesting.Action, defaultReturnObj runtime.Object) (runtime.Object, error)
}

// approval serves packagerevisions/approval: how a person publishes a
// Proposed revision (spec.lifecycle: Published) or proposes the deletion of
// a Published one. The Sim decides what is allowed.
type approval struct {
	client porchclient.PackageRevisionsGetter
	sim    invoker
}

func (r *approval) New() runtime.Object { return &porchv1alpha1.PackageRevision{} }
func (r *approval) Destroy()            {}

func (r *approval) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.client.PackageRevisions(namespaceOf(ctx)).Get(ctx, name, *opts)
}

func (r *approval) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	validate rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if err := refuseDryRun(opts.DryRun); err != nil {
		return nil, false, err
	}
	ns := namespaceOf(ctx)
	client := r.client.PackageRevisions(ns)
	out, err := updateThrough(ctx, objInfo, validate,
		func() (*porchv1alpha1.PackageRevision, error) { return client.Get(ctx, name, metav1.GetOptions{}) },
		func(pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
			// Porch records who approved: the authenticated user.
			if u, ok := request.UserFrom(ctx); ok {
				pr.Status.PublishedBy = u.GetName()
			}
			obj, err := r.sim.Invokes(clienttesting.NewUpdateSubresourceAction(
				porchv1alpha1.SchemeGroupVersion.WithResource("packagerevisions"), "approval", ns, pr), &porchv1alpha1.PackageRevision{})
			if err != nil {
				return nil, err
			}
			return obj.(*porchv1alpha1.PackageRevision), nil
		})
	return out, false, err
}
