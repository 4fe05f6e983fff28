package store

import (
	"fmt"
	"sort"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

// maxLogEvents bounds the event log of one resource; older events are
// compacted away and a watch that needs them gets "410 Gone", after which a
// reflector relists, as it does against a real API server.
const maxLogEvents = 10000

// watchBatch is how many events a watcher takes per lock acquisition.
const watchBatch = 256

// event is one change in the log of a resource.
type event struct {
	rv  int64
	typ watch.EventType
	// obj is the state after the change (the last state for DELETED); old
	// is the state before a MODIFIED. Both are stored objects: immutable.
	obj, old runtime.Object
}

type eventLog struct {
	events []event
	// compacted is the resourceVersion of the newest dropped event.
	compacted int64
}

// emitLocked records a change in the resource's event log. Unless events are
// held, watchers are woken to deliver it.
func (s *Store) emitLocked(resource string, typ watch.EventType, obj, old runtime.Object) {
	l := s.logs[resource]
	if l == nil {
		l = &eventLog{}
		s.logs[resource] = l
	}
	l.events = append(l.events, event{rv: s.rv, typ: typ, obj: obj, old: old})
	for _, f := range s.observers {
		f(Change{Resource: resource, Type: typ, Object: obj, Sequence: s.rv})
	}
	if len(l.events) > maxLogEvents {
		// Drop the older half, but never events that were not delivered yet.
		n := sort.Search(len(l.events)/2, func(i int) bool { return l.events[i].rv > s.watermark })
		if n > 0 {
			l.compacted = l.events[n-1].rv
			l.events = append([]event(nil), l.events[n:]...)
		}
	}
	if !s.held {
		s.watermark = s.rv
		s.notifyLocked()
	}
}

func (s *Store) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Change is one change of a stored object, as ObserveLocked reports it.
type Change struct {
	// Resource is the plural, such as "packagerevisions".
	Resource string
	Type     watch.EventType
	// Object is the state after the change (the last state for DELETED).
	// It is the stored object: it must not be modified.
	Object runtime.Object
	// Sequence orders the changes of every resource.
	Sequence int64
}

// ObserveLocked makes f hear of every change, in order, at the moment it
// is made (whether or not watch events are held).
func (s *Store) ObserveLocked(f func(Change)) {
	s.observers = append(s.observers, f)
}

// HoldLocked makes watches stop delivering events (they queue) until
// ReleaseLocked.
func (s *Store) HoldLocked() {
	s.held = true
}

// ReleaseLocked delivers the held events, in order, and lets later events
// flow again.
func (s *Store) ReleaseLocked() {
	s.held = false
	s.watermark = s.rv
	s.notifyLocked()
}

// BreakWatchesLocked ends every open watch and returns how many ended.
func (s *Store) BreakWatchesLocked() int {
	n := 0
	for w := range s.watchers {
		w.breakOnce.Do(func() { close(w.broken) })
		delete(s.watchers, w)
		n++
	}
	return n
}

// WatchLocked serves a watch request: the events of the resource from the
// resourceVersion asked for (the current state as ADDED when none), and
// every later change that matches the selectors.
func (s *Store) WatchLocked(action clienttesting.Action) (watch.Interface, error) {
	resource := action.GetResource().Resource
	k, ok := s.kindsByResource[resource]
	if !ok || action.GetSubresource() != "" {
		// Only stored kinds are watchable (Porch's PackageRevisionResources
		// are not).
		return nil, NotServed(action)
	}
	var r clienttesting.WatchRestrictions
	if a, ok := action.(clienttesting.WatchAction); ok {
		r = a.GetWatchRestrictions()
	}
	if err := CheckFieldSelector(r.Fields, k.FieldLabels); err != nil {
		return nil, err
	}
	w := &watcher{
		broken:   make(chan struct{}),
		s:        s,
		kind:     k,
		ns:       action.GetNamespace(),
		labels:   r.Labels,
		fields:   r.Fields,
		result:   make(chan watch.Event),
		stop:     make(chan struct{}),
		resource: resource,
	}
	var initial []watch.Event
	rv := r.ResourceVersion
	if k.ReplaysWatches {
		// Replay every object as ADDED, whatever resourceVersion the
		// client asks to resume from (Porch does).
		rv = ""
	}
	switch rv {
	case "", "0":
		// Like the API server: start with the current state as ADDED events.
		for _, key := range s.SortedKeysLocked(resource, w.ns) {
			if ev, ok := w.translate(event{typ: watch.Added, obj: s.objects[resource][key].obj}); ok {
				initial = append(initial, ev)
			}
		}
		w.cursor = s.rv
		if k.ReplaysWatches {
			initial = append(initial, initialEventsEnd(k, initial))
		}
	default:
		from, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", rv))
		}
		if l := s.logs[resource]; l != nil && from < l.compacted {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, l.compacted))
		}
		w.cursor = from
	}
	s.watchers[w] = struct{}{}
	go w.run(initial)
	return w, nil
}

// initialEventsEnd is the BOOKMARK real Porch sends after the ADDED events
// that start every watch of PackageRevisions (kinds that replay watches): it carries the last replayed
// resourceVersion ("0" when there was none) and the annotation
// k8s.io/initial-events-end, which a watch-list client (sendInitialEvents)
// waits for. Other clients take it as a plain bookmark.
func initialEventsEnd(k *Kind, replayed []watch.Event) watch.Event {
	rv := "0"
	if n := len(replayed); n > 0 {
		rv = MustAccessor(replayed[n-1].Object).GetResourceVersion()
	}
	bookmark := k.NewObj()
	m := MustAccessor(bookmark)
	m.SetResourceVersion(rv)
	m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return watch.Event{Type: watch.Bookmark, Object: bookmark}
}

// watcher delivers the events of one watch request from the log, in order.
type watcher struct {
	s        *Store
	kind     *Kind
	resource string
	ns       string
	labels   labels.Selector
	fields   fields.Selector
	// cursor is the resourceVersion of the last event looked at.
	cursor int64

	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
	// broken is closed by BreakWatches: the server ends the watch.
	broken    chan struct{}
	breakOnce sync.Once
}

// Stop ends the watch; ResultChan is closed soon after.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
}

// ResultChan returns the channel of events.
func (w *watcher) ResultChan() <-chan watch.Event {
	return w.result
}

func (w *watcher) run(initial []watch.Event) {
	defer func() {
		w.s.mu.Lock()
		delete(w.s.watchers, w)
		w.s.mu.Unlock()
		close(w.result)
	}()
	for _, ev := range initial {
		if !w.send(ev) {
			return
		}
	}
	for {
		batch, wait, err := w.s.pending(w)
		if err != nil {
			w.send(watch.Event{Type: watch.Error, Object: &err.(*apierrors.StatusError).ErrStatus})
			return
		}
		if len(batch) == 0 {
			select {
			case <-wait:
				continue
			case <-w.stop:
				return
			case <-w.broken:
				return
			}
		}
		for _, e := range batch {
			w.cursor = e.rv
			if ev, ok := w.translate(e); ok && !w.send(ev) {
				return
			}
		}
	}
}

// pending returns the deliverable events after the watcher's cursor, or a
// channel that is closed when there may be more.
func (s *Store) pending(w *watcher) ([]event, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[w.resource]
	if l == nil {
		return nil, s.changed, nil
	}
	if w.cursor < l.compacted {
		return nil, nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", w.cursor, l.compacted))
	}
	i := sort.Search(len(l.events), func(i int) bool { return l.events[i].rv > w.cursor })
	var batch []event
	for ; i < len(l.events) && len(batch) < watchBatch && l.events[i].rv <= s.watermark; i++ {
		batch = append(batch, l.events[i])
	}
	if len(batch) == 0 {
		return nil, s.changed, nil
	}
	return batch, nil, nil
}

// translate turns a logged event into what this watch sees: an object that
// starts or stops matching the selectors is ADDED or DELETED, as the API
// server's watch cache reports it. The object is a copy.
func (w *watcher) translate(e event) (watch.Event, bool) {
	matches := func(obj runtime.Object) bool {
		if obj == nil {
			return false
		}
		m := MustAccessor(obj)
		if w.ns != "" && m.GetNamespace() != w.ns {
			return false
		}
		return Selects(w.labels, w.fields, m.GetLabels(), w.kind.Fields(obj))
	}
	typ := e.typ
	now := matches(e.obj)
	if e.typ == watch.Modified {
		before := matches(e.old)
		switch {
		case before && !now:
			typ, now = watch.Deleted, true
		case !before && now:
			typ = watch.Added
		}
	}
	if !now {
		return watch.Event{}, false
	}
	return watch.Event{Type: typ, Object: e.obj.DeepCopyObject()}, true
}

func (w *watcher) send(ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.stop:
		return false
	case <-w.broken:
		return false
	}
}

// DeliveredLocked is the resourceVersion of the newest change of a
// resource that watches may deliver now, passing over the newest
// deletions of the objects unknown names (porchsim.Sim.DeliveredResourceVersion says why).
func (s *Store) DeliveredLocked(resource string, unknown func(namespace, name string) bool) int64 {
	l := s.logs[resource]
	if l == nil {
		return 0
	}
	// gone are the objects, deleted last, that the handler never knew:
	// their older changes are passed over too.
	var gone map[Key]bool
	for i := len(l.events) - 1; i >= 0; i-- {
		e := l.events[i]
		if e.rv > s.watermark {
			continue
		}
		if unknown != nil {
			m := MustAccessor(e.obj)
			key := Key{m.GetNamespace(), m.GetName()}
			if gone[key] {
				continue
			}
			if e.typ == watch.Deleted && unknown(key.Namespace, key.Name) {
				if gone == nil {
					gone = map[Key]bool{}
				}
				gone[key] = true
				continue
			}
		}
		return e.rv
	}
	return l.compacted
}
