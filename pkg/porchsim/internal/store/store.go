// Package store is what kube-apiserver does for porchsim: typed objects
// with resourceVersions, generation, the status subresource, finalizers and
// deletion timestamps, garbage collection through owner references, label
// and field selectors, and an event log that watches resume from. It knows
// nothing of Porch: the server on top (package porchsim) registers the
// kinds (Kind) and hooks its rules in (Rules), and may keep data of its own
// on an entry (Entry.Data).
package store

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Store holds the objects. All state lives behind one mutex (Lock,
// Unlock): every request is one atomic step, as it is for an API server
// backed by a single etcd revision counter. Methods named ...Locked expect
// the caller to hold it. Stored objects are never mutated after they are
// stored (a change stores a new copy), so watch events can share them;
// everything handed out is a deep copy.
type Store struct {
	mu sync.Mutex
	// rules are the server's decisions the store asks for (see Rules).
	rules Rules
	// kinds are the stored resources in the order garbage collection
	// visits them; kindsByResource finds them.
	kinds           []*Kind
	kindsByResource map[string]*Kind
	// rv is the last change's sequence number; one counter for every
	// resource, like etcd's revision. It is the resourceVersion of the
	// kinds with plain versions; the others get an opaque one, and seqOf
	// maps those back.
	rv      int64
	seqOf   map[string]int64
	uidSeq  int64
	objects map[string]map[Key]*Entry // by resource
	uids    map[types.UID]Ref
	// groups and dependents index objects (see index.go).
	groups     map[groupKey]map[Key]struct{}
	dependents map[types.UID]map[Ref]struct{}
	// deletedUIDs are the UIDs of the objects the store removed: owners
	// known to be gone (see CollectIfOwnersGoneLocked).
	deletedUIDs map[types.UID]struct{}

	// observers hear of every change (see ObserveLocked).
	observers []func(Change)
	// watchers are the open watches (see BreakWatchesLocked).
	watchers map[*watcher]struct{}
	logs     map[string]*eventLog // watch event log by resource
	// watermark is the resourceVersion up to which events are delivered;
	// it stays put while events are held.
	watermark int64
	held      bool
	// changed is closed (and replaced) whenever watchers may have something
	// new to deliver.
	changed chan struct{}
}

// Rules are the decisions of the server on top of the store (Porch's,
// for PackageRevisions) that the store's own machinery needs. Each may be
// nil.
type Rules struct {
	// Stamp fills in what the server computes of an object about to be
	// stored (new or changed), after its resourceVersion is set.
	Stamp func(obj runtime.Object)
	// Removed hears of an object removed, before its dependents are
	// collected.
	Removed func(obj runtime.Object)
	// Keep tells the garbage collector to leave a dependent it would
	// delete (the server refuses to delete it).
	Keep func(obj runtime.Object) bool
}

// Key names an object of a resource.
type Key struct {
	Namespace, Name string
}

// Ref names a stored object.
type Ref struct {
	Resource string
	Key
}

// Entry is one stored object.
type Entry struct {
	obj runtime.Object
	// Data is what the server keeps with the object (Porch: a
	// PackageRevision's files). The store never looks at it; an entry
	// keeps it while the object is replaced.
	Data any
	// orphan records a delete with propagationPolicy Orphan that is waiting
	// for finalizers: when the object goes, its dependents are orphaned.
	orphan bool
}

// Object is the stored object. It must not be modified: a change stores a
// new copy (ReplaceLocked).
func (e *Entry) Object() runtime.Object {
	return e.obj
}

// New returns an empty store of kinds, listed in the order garbage
// collection visits them.
func New(kinds ...*Kind) *Store {
	s := &Store{
		kinds:           kinds,
		kindsByResource: map[string]*Kind{},
		objects:         map[string]map[Key]*Entry{},
		seqOf:           map[string]int64{},
		uids:            map[types.UID]Ref{},
		groups:          map[groupKey]map[Key]struct{}{},
		dependents:      map[types.UID]map[Ref]struct{}{},
		deletedUIDs:     map[types.UID]struct{}{},
		logs:            map[string]*eventLog{},
		watchers:        map[*watcher]struct{}{},
		changed:         make(chan struct{}),
	}
	for _, k := range kinds {
		s.kindsByResource[k.Resource] = k
		s.objects[k.Resource] = map[Key]*Entry{}
	}
	return s
}

// KindOf is the stored kind of resource (see New). The kinds never change:
// it needs no lock.
func (s *Store) KindOf(resource string) (*Kind, bool) {
	k, ok := s.kindsByResource[resource]
	return k, ok
}

// SetRules hooks the server's rules in.
func (s *Store) SetRules(r Rules) {
	s.rules = r
}

// Lock takes the store's lock.
func (s *Store) Lock() {
	s.mu.Lock()
}

// Unlock releases the store's lock.
func (s *Store) Unlock() {
	s.mu.Unlock()
}

// nextRVLocked counts a change of an object of resource and returns its
// new resourceVersion: the sequence number for most kinds (as etcd's
// revision), an opaque string for those with an OpaqueVersion, as Porch
// hands out git commit SHAs, which a client cannot order or parse.
func (s *Store) nextRVLocked(resource string) string {
	s.rv++
	opaque := s.kindsByResource[resource].OpaqueVersion
	if opaque == nil {
		return strconv.FormatInt(s.rv, 10)
	}
	rv := opaque(s.rv)
	s.seqOf[rv] = s.rv
	return rv
}

// SequenceLocked is the change number behind a resourceVersion the store
// handed out (0 if it handed out no such version).
func (s *Store) SequenceLocked(resourceVersion string) int64 {
	if n, ok := s.seqOf[resourceVersion]; ok {
		return n
	}
	n, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// NewUIDLocked makes the UID of a new object: the kind's own when it
// derives one (Porch derives a PackageRevision's from its namespace and
// name, so a revision deleted and made again has the same UID), otherwise
// the next UID of the store's sequence that no object held: objects the
// server restores (porchsim's Restore) bring their own UIDs, which may come
// from another store's sequence.
func (s *Store) NewUIDLocked(resource, namespace, name string) types.UID {
	if uid := s.kindsByResource[resource].UID; uid != nil {
		return uid(namespace, name)
	}
	for {
		s.uidSeq++
		uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.uidSeq))
		if !s.uidHeldLocked(uid) {
			return uid
		}
	}
}

// uidHeldLocked tells whether an object of the store has, or had, uid.
func (s *Store) uidHeldLocked(uid types.UID) bool {
	_, held := s.HolderLocked(uid)
	return held || s.RemovedLocked(uid)
}

// HolderLocked is the object that has uid.
func (s *Store) HolderLocked(uid types.UID) (Ref, bool) {
	ref, ok := s.uids[uid]
	return ref, ok
}

// RemovedLocked tells whether the store removed an object that had uid.
func (s *Store) RemovedLocked(uid types.UID) bool {
	_, ok := s.deletedUIDs[uid]
	return ok
}

// Now is the API server's clock: timestamps travel with second precision.
func Now() metav1.Time {
	return metav1.NewTime(time.Now().Truncate(time.Second))
}

// InsertLocked stores a new object: it fills in uid, creationTimestamp,
// generation and resourceVersion and emits ADDED.
func (s *Store) InsertLocked(resource string, obj runtime.Object, data any) *Entry {
	m := MustAccessor(obj)
	m.SetUID(s.NewUIDLocked(resource, m.GetNamespace(), m.GetName()))
	m.SetCreationTimestamp(Now())
	if !s.kindsByResource[resource].NoGeneration {
		m.SetGeneration(1)
	}
	return s.StoreNewLocked(resource, obj, data)
}

// StoreNewLocked stores a new object whose uid, creationTimestamp and
// generation are set (by InsertLocked, or kept from a snapshot by the
// server: porchsim's Restore and Import): it assigns the resourceVersion, indexes the object and emits
// ADDED. It is the one place where objects enter the store, so the indexes
// and s.uids stay consistent whichever way they came.
func (s *Store) StoreNewLocked(resource string, obj runtime.Object, data any) *Entry {
	m := MustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	s.stamp(obj)
	e := &Entry{obj: obj, Data: data}
	ref := Ref{resource, Key{m.GetNamespace(), m.GetName()}}
	s.objects[resource][ref.Key] = e
	s.uids[m.GetUID()] = ref
	s.indexLocked(ref, obj)
	s.emitLocked(resource, watch.Added, obj, nil)
	return e
}

// ReplaceLocked stores a changed copy of an entry's object with a new
// resourceVersion and emits MODIFIED. The caller has already adjusted
// generation (a kind without one keeps 0).
func (s *Store) ReplaceLocked(resource string, e *Entry, obj runtime.Object) {
	old := e.obj
	m := MustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	if s.kindsByResource[resource].NoGeneration {
		m.SetGeneration(0)
	}
	s.stamp(obj)
	e.obj = obj
	s.reindexLocked(Ref{resource, Key{m.GetNamespace(), m.GetName()}}, old, obj)
	s.emitLocked(resource, watch.Modified, obj, old)
}

func (s *Store) stamp(obj runtime.Object) {
	if s.rules.Stamp != nil {
		s.rules.Stamp(obj)
	}
}

// removeLocked drops an object (its final state is obj) and collects the
// garbage it leaves: dependents that no other existing owner holds.
func (s *Store) removeLocked(resource string, e *Entry, obj runtime.Object) {
	m := MustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	ref := Ref{resource, Key{m.GetNamespace(), m.GetName()}}
	delete(s.objects[resource], ref.Key)
	delete(s.uids, m.GetUID())
	s.deletedUIDs[m.GetUID()] = struct{}{}
	// The index entries are those of the stored state, which obj (the
	// final state) may differ from.
	s.unindexLocked(ref, e.obj)
	s.emitLocked(resource, watch.Deleted, obj, nil)
	if s.rules.Removed != nil {
		s.rules.Removed(obj)
	}
	s.collectGarbageLocked(m.GetNamespace(), m.GetUID(), e.orphan)
}

// EntryLocked is the stored entry of resource namespace/name.
func (s *Store) EntryLocked(resource, namespace, name string) (*Entry, bool) {
	e, ok := s.objects[resource][Key{namespace, name}]
	return e, ok
}

// SortedKeysLocked lists the keys of a resource in a namespace ("" for all)
// in namespace/name order, so lists and cascades are deterministic.
func (s *Store) SortedKeysLocked(resource, namespace string) []Key {
	var keys []Key
	for k := range s.objects[resource] {
		if namespace == "" || k.Namespace == namespace {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, CompareKeys)
	return keys
}

// SortedEntriesLocked lists the entries of a resource in a namespace (""
// for all) in namespace/name order.
func (s *Store) SortedEntriesLocked(resource, namespace string) []*Entry {
	keys := s.SortedKeysLocked(resource, namespace)
	out := make([]*Entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objects[resource][k])
	}
	return out
}

// StoredCopies returns copies of the stored objects of a resource in a
// namespace ("" for all namespaces), ordered by namespace and name.
func StoredCopies[T any, PT interface {
	*T
	runtime.Object
}](s *Store, resource, namespace string) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, e := range s.SortedEntriesLocked(resource, namespace) {
		out = append(out, *e.obj.DeepCopyObject().(PT))
	}
	return out
}

func MustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("porchsim: %T has no object metadata: %v", obj, err))
	}
	return m
}
