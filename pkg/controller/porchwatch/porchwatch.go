// Package porchwatch keeps informers of PackageRevisions true to Porch. A
// watch of PackageRevisions in Porch ignores the resourceVersion it is
// asked to resume from and starts with every existing revision as ADDED,
// without the revisions deleted in the gap: a reflector that resumes a
// broken watch, or whose watch starts a moment after its list, would keep
// those in its cache for ever (a variant then takes its own deleted draft
// for a stranger's). So each list is followed by one watch, whose replay
// reports the listed revisions it no longer holds as deleted, and any other
// watch makes the reflector list again.
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
// served. The one watch reports the listed revisions deleted before it
// started (see gapWatch).
func RelistOnResume(client versioned.Interface) versioned.Interface {
	return clientset{Interface: client, lists: &lists{unwatched: map[string]map[string]*porchv1alpha1.PackageRevision{}}}
}

// lists holds, by namespace, the revisions of the last list of
// PackageRevisions until its watch starts.
type lists struct {
	mu        sync.Mutex
	unwatched map[string]map[string]*porchv1alpha1.PackageRevision // by name
}

func (l *lists) listed(namespace string, list *porchv1alpha1.PackageRevisionList) {
	byName := make(map[string]*porchv1alpha1.PackageRevision, len(list.Items))
	for i := range list.Items {
		pr := &list.Items[i]
		byName[pr.Namespace+"/"+pr.Name] = pr
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unwatched[namespace] = byName
}

// watch returns the revisions of the list a watch follows, and whether it
// may start: only the first watch since a list may.
func (l *lists) watch(namespace string) (map[string]*porchv1alpha1.PackageRevision, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	listed, ok := l.unwatched[namespace]
	delete(l.unwatched, namespace)
	return listed, ok
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
		r.lists.listed(r.namespace, list)
	}
	return list, err
}

func (r revisions) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return r.PackageRevisionInterface.Watch(ctx, opts)
	}
	listed, ok := r.lists.watch(r.namespace)
	if !ok {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf(
			"a PackageRevision watch cannot resume from resourceVersion %q (Porch does not report the deletions since): list again", opts.ResourceVersion))
	}
	w, err := r.PackageRevisionInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newGapWatch(w, listed), nil
}

// gapWatch closes the gap between a list and its watch: Porch starts a
// watch of PackageRevisions by replaying every revision that exists as
// ADDED, then a BOOKMARK marked k8s.io/initial-events-end; a revision that
// was listed and is not replayed was deleted in between, and gapWatch
// reports it DELETED just before that bookmark (at the bookmark's
// resourceVersion). Without the bookmark nothing is added.
type gapWatch struct {
	inner  watch.Interface
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
	listed map[string]*porchv1alpha1.PackageRevision
}

func newGapWatch(inner watch.Interface, listed map[string]*porchv1alpha1.PackageRevision) *gapWatch {
	g := &gapWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{}), listed: listed}
	go g.run()
	return g
}

func (g *gapWatch) ResultChan() <-chan watch.Event { return g.out }

func (g *gapWatch) Stop() {
	g.once.Do(func() {
		close(g.stop)
		g.inner.Stop()
	})
}

func (g *gapWatch) run() {
	defer close(g.out)
	replaying := true
	for ev := range g.inner.ResultChan() {
		if pr, ok := ev.Object.(*porchv1alpha1.PackageRevision); ok && replaying {
			switch {
			case ev.Type == watch.Added:
				delete(g.listed, pr.Namespace+"/"+pr.Name)
			case ev.Type == watch.Bookmark && pr.Annotations[metav1.InitialEventsAnnotationKey] == "true":
				replaying = false
				for _, gone := range g.listed {
					gone = gone.DeepCopy()
					gone.ResourceVersion = pr.ResourceVersion
					if !g.send(watch.Event{Type: watch.Deleted, Object: gone}) {
						return
					}
				}
				g.listed = nil
			}
		}
		if !g.send(ev) {
			return
		}
	}
}

func (g *gapWatch) send(ev watch.Event) bool {
	select {
	case g.out <- ev:
		return true
	case <-g.stop:
		return false
	}
}
