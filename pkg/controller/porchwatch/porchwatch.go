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
// to use: each list of PackageRevisions is followed by one watch, and
// every other watch fails at once with 410 Gone, which makes a reflector
// list again. A reflector watches again from its last resourceVersion when
// a watch ends; that is the list's own resourceVersion when the watch
// delivered nothing that moved it (it broke before its first event, or its
// replay ended on the revision changed last), so a watch is served once
// per list, not by the resourceVersion it asks for. A watch-list request
// (sendInitialEvents) starts from the full state, as a list does, and is
// served.
func RelistOnResume(client versioned.Interface) versioned.Interface {
	return clientset{Interface: client, lists: &lists{unwatched: map[string]bool{}}}
}

// lists records, by namespace, whether the last list of PackageRevisions
// has had its watch.
type lists struct {
	mu        sync.Mutex
	unwatched map[string]bool
}

func (l *lists) listed(namespace string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unwatched[namespace] = true
}

// watch reports whether a watch may start: the first since a list.
func (l *lists) watch(namespace string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := l.unwatched[namespace]
	delete(l.unwatched, namespace)
	return ok
}

type clientset struct {
	versioned.Interface
	lists *lists
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
	lists *lists
}

func (g group) PackageRevisions(namespace string) porchclient.PackageRevisionInterface {
	return revisions{g.PorchV1alpha1Interface.PackageRevisions(namespace), namespace, g.lists}
}

type revisions struct {
	porchclient.PackageRevisionInterface
	namespace string
	lists     *lists
}

func (r revisions) List(ctx context.Context, opts metav1.ListOptions) (*porchv1alpha1.PackageRevisionList, error) {
	list, err := r.PackageRevisionInterface.List(ctx, opts)
	if err == nil {
		r.lists.listed(r.namespace)
	}
	return list, err
}

func (r revisions) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	watchList := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if !watchList && !r.lists.watch(r.namespace) {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf(
			"a PackageRevision watch cannot resume from resourceVersion %q (Porch does not report the deletions since): list again", opts.ResourceVersion))
	}
	return r.PackageRevisionInterface.Watch(ctx, opts)
}
