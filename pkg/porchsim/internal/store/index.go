package store

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// The store keeps two indexes so that the cost of a write does not grow
// with the store (a fleet benchmark holds 10,000 objects of each kind);
// only LIST requests and the first events of a watch look at it all:
//
//   - groups: the objects of each group of a kind with a Group (Porch: the
//     PackageRevisions of each package, for its per-package rules:
//     workspace uniqueness, revision numbering, the latest-revision label,
//     the placeholder's files);
//   - dependents: the objects whose owner references name a UID, for the
//     garbage collector.
//
// Both are maintained where objects are stored, replaced and removed
// (StoreNewLocked, ReplaceLocked, removeLocked) and nowhere else. They are
// sets, so a caller that needs an order sorts the (small) set it gets.

// groupKey is a group of a resource: the key its Kind's Group returns.
type groupKey struct {
	resource string
	key      any
}

// groupOf is the group of a stored object; ok is false when its kind groups
// nothing or the object is in no group.
func (s *Store) groupOf(resource string, obj runtime.Object) (groupKey, bool) {
	k := s.kindsByResource[resource]
	if k.Group == nil {
		return groupKey{}, false
	}
	key := k.Group(obj)
	return groupKey{resource, key}, key != nil
}

// indexLocked adds a stored object to the indexes.
func (s *Store) indexLocked(ref Ref, obj runtime.Object) {
	if g, ok := s.groupOf(ref.Resource, obj); ok {
		addToSet(s.groups, g, ref.Key)
	}
	for _, r := range MustAccessor(obj).GetOwnerReferences() {
		addToSet(s.dependents, r.UID, ref)
	}
}

// unindexLocked removes a stored object from the indexes.
func (s *Store) unindexLocked(ref Ref, obj runtime.Object) {
	if g, ok := s.groupOf(ref.Resource, obj); ok {
		removeFromSet(s.groups, g, ref.Key)
	}
	for _, r := range MustAccessor(obj).GetOwnerReferences() {
		removeFromSet(s.dependents, r.UID, ref)
	}
}

// reindexLocked moves a stored object from its old state's index entries to
// its new state's. Most replacements (status, labels, files) change neither
// the group nor the owners, and then leave the indexes alone.
func (s *Store) reindexLocked(ref Ref, old, obj runtime.Object) {
	oldGroup, _ := s.groupOf(ref.Resource, old)
	newGroup, _ := s.groupOf(ref.Resource, obj)
	sameOwners := slices.EqualFunc(MustAccessor(old).GetOwnerReferences(), MustAccessor(obj).GetOwnerReferences(),
		func(a, b metav1.OwnerReference) bool { return a.UID == b.UID })
	if oldGroup == newGroup && sameOwners {
		return
	}
	s.unindexLocked(ref, old)
	s.indexLocked(ref, obj)
}

func addToSet[K comparable, V comparable](index map[K]map[V]struct{}, k K, v V) {
	set, ok := index[k]
	if !ok {
		set = map[V]struct{}{}
		index[k] = set
	}
	set[v] = struct{}{}
}

// removeFromSet drops v from the set of k, and the set once it is empty, so
// that the indexes do not grow with objects long gone.
func removeFromSet[K comparable, V comparable](index map[K]map[V]struct{}, k K, v V) {
	set := index[k]
	delete(set, v)
	if len(set) == 0 {
		delete(index, k)
	}
}

// dependentsLocked lists the objects of a namespace whose owner references
// name owner, in the order the garbage collector visits them: by kind in
// the order of kinds, then by name.
func (s *Store) dependentsLocked(namespace string, owner types.UID) []Ref {
	var out []Ref
	for ref := range s.dependents[owner] {
		// Owner references resolve within the dependent's namespace, so
		// only dependents in the owner's namespace are its own.
		if ref.Namespace == namespace {
			out = append(out, ref)
		}
	}
	slices.SortFunc(out, func(a, b Ref) int {
		if a.Resource != b.Resource {
			return s.kindOrder(a.Resource) - s.kindOrder(b.Resource)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// kindOrder is the position of a resource in kinds.
func (s *Store) kindOrder(resource string) int {
	return slices.IndexFunc(s.kinds, func(k *Kind) bool { return k.Resource == resource })
}

// GroupLocked lists the objects of resource in the group key (see
// Kind.Group), by namespace and name, from the group index.
func (s *Store) GroupLocked(resource string, key any) []*Entry {
	keys := slices.SortedFunc(maps.Keys(s.groups[groupKey{resource, key}]), CompareKeys)
	out := make([]*Entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objects[resource][k])
	}
	return out
}

// CompareKeys orders keys by namespace, then name.
func CompareKeys(a, b Key) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// CheckIndexes is for tests: it compares the indexes with what a scan of
// the whole store finds, and the garbage collector's visiting order and
// GroupLocked's order with the order of a scan (kind, then namespace and
// name), and says how they differ. An index update missed on any path (a
// create, an owner reference change, a finalizer removal that deletes, a
// cascade) makes it fail.
func (s *Store) CheckIndexes() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	groups := map[groupKey]map[Key]struct{}{}
	dependents := map[types.UID]map[Ref]struct{}{}
	// members are each group's objects in scan order; scanOrder is, by
	// owner and namespace, the dependents in the order a scan of every
	// kind (in the order of kinds) by name finds them.
	members := map[groupKey][]*Entry{}
	scanOrder := map[types.UID]map[string][]Ref{}
	for _, k := range s.kinds {
		for _, key := range s.SortedKeysLocked(k.Resource, "") {
			e := s.objects[k.Resource][key]
			ref := Ref{k.Resource, key}
			if g, ok := s.groupOf(k.Resource, e.obj); ok {
				addToSet(groups, g, key)
				members[g] = append(members[g], e)
			}
			for _, r := range MustAccessor(e.obj).GetOwnerReferences() {
				if _, seen := dependents[r.UID][ref]; seen {
					continue
				}
				addToSet(dependents, r.UID, ref)
				if scanOrder[r.UID] == nil {
					scanOrder[r.UID] = map[string][]Ref{}
				}
				scanOrder[r.UID][key.Namespace] = append(scanOrder[r.UID][key.Namespace], ref)
			}
		}
	}
	if !reflect.DeepEqual(groups, s.groups) {
		return fmt.Errorf("group index differs from a scan:\nscan:  %v\nindex: %v", groups, s.groups)
	}
	if !reflect.DeepEqual(dependents, s.dependents) {
		return fmt.Errorf("dependents index differs from a scan:\nscan:  %v\nindex: %v", dependents, s.dependents)
	}
	for uid, byNamespace := range scanOrder {
		for namespace, want := range byNamespace {
			if got := s.dependentsLocked(namespace, uid); !slices.Equal(got, want) {
				return fmt.Errorf("dependents of %s in %s not in scan order:\nscan: %v\ngot:  %v", uid, namespace, want, got)
			}
		}
	}
	for g, want := range members {
		if got := s.GroupLocked(g.resource, g.key); !slices.Equal(got, want) {
			return fmt.Errorf("the objects of group %v of %s are not those a scan finds, in name order", g.key, g.resource)
		}
	}
	return nil
}

// Len is for tests: the number of stored objects.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.uids)
}

// LastUID is for tests: the sequence number of the last UID the store made
// (see NewUIDLocked).
func (s *Store) LastUID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uidSeq
}
