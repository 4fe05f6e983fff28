package porchsim

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// store is what kube-apiserver does for the Sim: typed objects with
// resourceVersions, generation, the status subresource, finalizers and
// deletion timestamps, garbage collection through owner references,
// label and field selectors, and an event log that watches resume from.
// It knows nothing of Porch beyond what its kinds (kinds.go) and its rules
// (storeRules) tell it.
//
// All state lives behind one mutex: every request is one atomic step, as it
// is for an API server backed by a single etcd revision counter. Methods
// named ...Locked expect the caller to hold it. Stored objects are never
// mutated after they are stored (a change stores a new copy), so watch
// events can share them; everything handed out is a deep copy.
type store struct {
	mu sync.Mutex
	// rules are the server's decisions the store asks for (see storeRules).
	rules storeRules
	// rv is the last change's sequence number; one counter for every
	// resource, like etcd's revision. It is the resourceVersion of the
	// kinds with plain versions; the others get an opaque one (a commit
	// SHA in Porch), and seqOf maps those back.
	rv      int64
	seqOf   map[string]int64
	uidSeq  int64
	objects map[string]map[objectKey]*entry // by resource
	uids    map[types.UID]objectRef
	// packages and dependents index objects (see store_index.go).
	packages   map[packageKey]map[string]struct{}
	dependents map[types.UID]map[objectRef]struct{}
	// deletedUIDs are the UIDs of the objects the store removed: owners
	// known to be gone (see collectIfOwnersGoneLocked).
	deletedUIDs map[types.UID]struct{}

	// observers hear of every change (see observeLocked).
	observers []func(Change)
	// watchers are the open watches (see breakWatchesLocked).
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

// storeRules are the decisions of the server on top of the store (Porch's,
// for PackageRevisions) that the store's own machinery needs. Each may be
// nil.
type storeRules struct {
	// stamp fills in what the server computes of an object about to be
	// stored (new or changed), after its resourceVersion is set.
	stamp func(obj runtime.Object)
	// removed hears of an object removed, before its dependents are
	// collected.
	removed func(obj runtime.Object)
	// keep tells the garbage collector to leave a dependent it would
	// delete (the server refuses to delete it).
	keep func(obj runtime.Object) bool
}

type objectKey struct {
	namespace, name string
}

type objectRef struct {
	resource string
	key      objectKey
}

// entry is one stored object.
type entry struct {
	obj runtime.Object
	// files are the package files of a PackageRevision. Read them through
	// porch.filesLocked: they are nil while lazy.
	files map[string]string
	// lazy marks a revision imported without its files: they are fetched
	// from the file source on first need (see SetFileSource). Storing
	// files clears it.
	lazy bool
	// fetchErr is the failure of the one fetch of a lazy revision; every
	// later need fails with it (see porch.filesLocked).
	fetchErr error
	// skipped are the pipeline functions the last render of the files
	// did not run (not built into Porch, and the Sim runs none other).
	skipped []string
	// orphan records a delete with propagationPolicy Orphan that is waiting
	// for finalizers: when the object goes, its dependents are orphaned.
	orphan bool
}

func newStore() *store {
	s := &store{
		objects:     map[string]map[objectKey]*entry{},
		seqOf:       map[string]int64{},
		uids:        map[types.UID]objectRef{},
		packages:    map[packageKey]map[string]struct{}{},
		dependents:  map[types.UID]map[objectRef]struct{}{},
		deletedUIDs: map[types.UID]struct{}{},
		logs:        map[string]*eventLog{},
		watchers:    map[*watcher]struct{}{},
		changed:     make(chan struct{}),
	}
	for _, k := range kinds {
		s.objects[k.resource] = map[objectKey]*entry{}
	}
	return s
}

// nextRVLocked counts a change of an object of resource and returns its
// new resourceVersion: the sequence number for most kinds (as etcd's
// revision), an opaque commit-like string for those with opaqueVersions, as
// Porch hands out git commit SHAs, which a client cannot order or parse.
func (s *store) nextRVLocked(resource string) string {
	s.rv++
	if !kindsByResource[resource].opaqueVersions {
		return strconv.FormatInt(s.rv, 10)
	}
	rv := fakeCommit("porchsim-change", strconv.FormatInt(s.rv, 10))
	s.seqOf[rv] = s.rv
	return rv
}

// sequenceLocked is the change number behind a resourceVersion the store
// handed out (0 if it handed out no such version).
func (s *store) sequenceLocked(resourceVersion string) int64 {
	if n, ok := s.seqOf[resourceVersion]; ok {
		return n
	}
	n, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// newUIDLocked makes the UID of a new object: the kind's own when it
// derives one (Porch derives a PackageRevision's from its namespace and
// name, so a revision deleted and made again has the same UID), otherwise
// the next UID of the store's sequence that no object held: restored
// objects (Restore) bring their own UIDs, which may come from another
// Sim's sequence.
func (s *store) newUIDLocked(resource, namespace, name string) types.UID {
	if uid := kindsByResource[resource].uid; uid != nil {
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
func (s *store) uidHeldLocked(uid types.UID) bool {
	_, held := s.holderLocked(uid)
	return held || s.removedLocked(uid)
}

// holderLocked is the object that has uid.
func (s *store) holderLocked(uid types.UID) (objectRef, bool) {
	ref, ok := s.uids[uid]
	return ref, ok
}

// removedLocked tells whether the store removed an object that had uid.
func (s *store) removedLocked(uid types.UID) bool {
	_, ok := s.deletedUIDs[uid]
	return ok
}

// now is the API server's clock: timestamps travel with second precision.
func now() metav1.Time {
	return metav1.NewTime(time.Now().Truncate(time.Second))
}

// insertLocked stores a new object: it fills in uid, creationTimestamp,
// generation and resourceVersion and emits ADDED.
func (s *store) insertLocked(resource string, obj runtime.Object, files map[string]string) *entry {
	m := mustAccessor(obj)
	m.SetUID(s.newUIDLocked(resource, m.GetNamespace(), m.GetName()))
	m.SetCreationTimestamp(now())
	if !kindsByResource[resource].noGeneration {
		m.SetGeneration(1)
	}
	return s.storeNewLocked(resource, obj, files)
}

// storeNewLocked stores a new object whose uid, creationTimestamp and
// generation are set (by insertLocked, or kept from a snapshot by Restore
// and Import): it assigns the resourceVersion, indexes the object and emits
// ADDED. It is the one place where objects enter the store, so the indexes
// and s.uids stay consistent whichever way they came.
func (s *store) storeNewLocked(resource string, obj runtime.Object, files map[string]string) *entry {
	m := mustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	s.stamp(obj)
	e := &entry{obj: obj, files: files}
	ref := objectRef{resource, objectKey{m.GetNamespace(), m.GetName()}}
	s.objects[resource][ref.key] = e
	s.uids[m.GetUID()] = ref
	s.indexLocked(ref, obj)
	s.emitLocked(resource, watch.Added, obj, nil)
	return e
}

// replaceLocked stores a changed copy of an entry's object with a new
// resourceVersion and emits MODIFIED. The caller has already adjusted
// generation (a kind without one keeps 0).
func (s *store) replaceLocked(resource string, e *entry, obj runtime.Object) {
	old := e.obj
	m := mustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	if kindsByResource[resource].noGeneration {
		m.SetGeneration(0)
	}
	s.stamp(obj)
	e.obj = obj
	s.reindexLocked(objectRef{resource, objectKey{m.GetNamespace(), m.GetName()}}, old, obj)
	s.emitLocked(resource, watch.Modified, obj, old)
}

func (s *store) stamp(obj runtime.Object) {
	if s.rules.stamp != nil {
		s.rules.stamp(obj)
	}
}

// removeLocked drops an object (its final state is obj) and collects the
// garbage it leaves: dependents that no other existing owner holds.
func (s *store) removeLocked(resource string, e *entry, obj runtime.Object) {
	m := mustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	ref := objectRef{resource, objectKey{m.GetNamespace(), m.GetName()}}
	delete(s.objects[resource], ref.key)
	delete(s.uids, m.GetUID())
	s.deletedUIDs[m.GetUID()] = struct{}{}
	// The index entries are those of the stored state, which obj (the
	// final state) may differ from.
	s.unindexLocked(ref, e.obj)
	s.emitLocked(resource, watch.Deleted, obj, nil)
	if s.rules.removed != nil {
		s.rules.removed(obj)
	}
	s.collectGarbageLocked(m.GetNamespace(), m.GetUID(), e.orphan)
}

// entryLocked is the stored entry of resource namespace/name.
func (s *store) entryLocked(resource, namespace, name string) (*entry, bool) {
	e, ok := s.objects[resource][objectKey{namespace, name}]
	return e, ok
}

// sortedKeysLocked lists the keys of a resource in a namespace ("" for all)
// in namespace/name order, so lists and cascades are deterministic.
func (s *store) sortedKeysLocked(resource, namespace string) []objectKey {
	var keys []objectKey
	for k := range s.objects[resource] {
		if namespace == "" || k.namespace == namespace {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	return keys
}

// sortedEntriesLocked lists the entries of a resource in a namespace (""
// for all) in namespace/name order.
func (s *store) sortedEntriesLocked(resource, namespace string) []*entry {
	keys := s.sortedKeysLocked(resource, namespace)
	out := make([]*entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objects[resource][k])
	}
	return out
}

// storedCopies returns copies of the stored objects of a resource in a
// namespace ("" for all namespaces), ordered by namespace and name.
func storedCopies[T any, PT interface {
	*T
	runtime.Object
}](s *store, resource, namespace string) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, e := range s.sortedEntriesLocked(resource, namespace) {
		out = append(out, *e.obj.DeepCopyObject().(PT))
	}
	return out
}

func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("porchsim: %T has no object metadata: %v", obj, err))
	}
	return m
}
