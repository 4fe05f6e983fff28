package apiserver

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watchThrough serves a watch from the Sim's watch.
//
// The Sim's watch has the legacy semantics: resourceVersion "" or "0" starts
// with the current state as ADDED events, any other resourceVersion resumes
// after it. The API server defaults a watch without resourceVersion to a
// watch list (sendInitialEvents=true), which informers of client-go also ask
// for: the initial events must then end with a BOOKMARK annotated
// k8s.io/initial-events-end, so the client knows when it has the whole state.
// The Sim cannot mark that end, so a watch with sendInitialEvents is served
// as a list followed by a watch from the list's resourceVersion; the Sim
// resumes exactly there, so no change is lost or repeated.
func watchThrough(ctx context.Context, opts metav1.ListOptions,
	list func(metav1.ListOptions) (runtime.Object, string, error),
	watchFrom func(metav1.ListOptions) (watch.Interface, error),
	newObject func() object) (watch.Interface, error) {
	if opts.SendInitialEvents == nil {
		return watchFrom(opts)
	}
	send := *opts.SendInitialEvents
	watchOpts := opts
	watchOpts.SendInitialEvents = nil
	watchOpts.ResourceVersionMatch = ""
	if !send && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		// No initial state wanted and a point to resume from given.
		return watchFrom(watchOpts)
	}

	listOpts := metav1.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector}
	l, rv, err := list(listOpts)
	if err != nil {
		return nil, err
	}
	watchOpts.ResourceVersion = rv
	w, err := watchFrom(watchOpts)
	if err != nil {
		return nil, err
	}
	if !send {
		return w, nil
	}
	var initial []watch.Event
	if err := meta.EachListItem(l, func(obj runtime.Object) error {
		initial = append(initial, watch.Event{Type: watch.Added, Object: obj})
		return nil
	}); err != nil {
		w.Stop()
		return nil, err
	}
	if opts.AllowWatchBookmarks {
		end := newObject()
		end.SetResourceVersion(rv)
		end.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		initial = append(initial, watch.Event{Type: watch.Bookmark, Object: end})
	}
	return newPrependWatch(ctx, initial, w), nil
}

// prependWatch delivers some events, then those of another watch.
type prependWatch struct {
	inner watch.Interface
	// keep, when set, drops the events of inner it does not accept.
	keep     func(watch.Event) bool
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func newPrependWatch(ctx context.Context, initial []watch.Event, inner watch.Interface) *prependWatch {
	w := &prependWatch{inner: inner, result: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(ctx, initial)
	return w
}

// Stop ends the watch; ResultChan is closed soon after.
func (w *prependWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
}

// ResultChan returns the channel of events.
func (w *prependWatch) ResultChan() <-chan watch.Event {
	return w.result
}

func (w *prependWatch) run(ctx context.Context, initial []watch.Event) {
	defer close(w.result)
	defer w.inner.Stop()
	send := func(ev watch.Event) bool {
		select {
		case w.result <- ev:
			return true
		case <-w.stop:
		case <-ctx.Done():
		}
		return false
	}
	for _, ev := range initial {
		if !send(ev) {
			return
		}
	}
	for {
		select {
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			if w.keep != nil && !w.keep(ev) {
				continue
			}
			if !send(ev) {
				return
			}
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// newFilterWatch delivers the events of inner that keep accepts.
func newFilterWatch(ctx context.Context, inner watch.Interface, keep func(watch.Event) bool) watch.Interface {
	w := &prependWatch{inner: inner, result: make(chan watch.Event), stop: make(chan struct{}), keep: keep}
	go w.run(ctx, nil)
	return w
}
