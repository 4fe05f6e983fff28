// Package porchwatch makes informers of PackageRevisions list again
// whenever their watch ends. A watch of PackageRevisions in Porch ignores
// the resourceVersion it is asked to resume from and starts with every
// existing revision as ADDED, without the revisions deleted in the gap: a
// reflector that resumes a broken watch would keep those in its cache for
// ever (a variant then takes its own deleted draft for a stranger's). A
// list replaces the cache, deletions included.
package porchwatch

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

// RelistOnResume returns client with one change, for the informer factory
// to use: a watch of PackageRevisions that resumes from a resourceVersion
// fails at once with 410 Gone, which makes a reflector list again. A watch
// that starts from a list (resourceVersion "" or "0", as after Porch's
// lists, which carry none, or the resourceVersion of the last list) is
// served.
func RelistOnResume(client versioned.Interface) versioned.Interface {
	return clientset{Interface: client, lists: &sync.Map{}}
}

type clientset struct {
	versioned.Interface
	// lists holds the resourceVersion of the last list, by namespace.
	lists *sync.Map
}

// IsWatchListSemanticsUnSupported passes on what the wrapped client tells
// reflectors (client-go's fake clientsets cannot serve watch-lists); a
// wrapper that hid it would make them wait for a bookmark that never comes.
func (c clientset) IsWatchListSemanticsUnSupported() bool {
	u, ok := c.Interface.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

func (c clientset) PorchV1alpha1() porchclient.PorchV1alpha1Interface {
	return group{c.Interface.PorchV1alpha1(), c.lists}
}

type group struct {
	porchclient.PorchV1alpha1Interface
	lists *sync.Map
}

func (g group) PackageRevisions(namespace string) porchclient.PackageRevisionInterface {
	return revisions{g.PorchV1alpha1Interface.PackageRevisions(namespace), namespace, g.lists}
}

type revisions struct {
	porchclient.PackageRevisionInterface
	namespace string
	lists     *sync.Map
}

func (r revisions) List(ctx context.Context, opts metav1.ListOptions) (*porchv1alpha1.PackageRevisionList, error) {
	list, err := r.PackageRevisionInterface.List(ctx, opts)
	if err == nil {
		r.lists.Store(r.namespace, list.ResourceVersion)
	}
	return list, err
}

func (r revisions) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	listed, _ := r.lists.Load(r.namespace)
	if rv := opts.ResourceVersion; rv != "" && rv != "0" && rv != listed {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf(
			"a PackageRevision watch cannot resume from resourceVersion %s (Porch does not report the deletions since): list again", rv))
	}
	return r.PackageRevisionInterface.Watch(ctx, opts)
}
