package porchsim

import (
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// The Sim keeps two indexes over its store so that the cost of a write does
// not grow with the store (a fleet benchmark holds 10,000 objects of each
// kind); only LIST requests and the first events of a watch look at it all:
//
//   - packages: the names of the PackageRevisions of each package, for
//     Porch's per-package rules (workspace uniqueness, revision numbering,
//     the latest-revision label, the placeholder's files);
//   - dependents: the objects whose owner references name a UID, for the
//     garbage collector.
//
// Both are maintained where objects are stored, replaced and removed
// (insertLocked, replaceLocked, removeLocked) and nowhere else. They are sets,
// so a caller that needs an order sorts the (small) set it gets.

// packageKey identifies a package: the revisions of one package share the
// namespace, the repository and the package name.
type packageKey struct {
	namespace, repository, pkg string
}

// packageKeyOf is the package of a PackageRevision; ok is false for other
// objects.
func packageKeyOf(obj runtime.Object) (key packageKey, ok bool) {
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return packageKey{}, false
	}
	return packageKey{pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName}, true
}

// indexLocked adds a stored object to the indexes.
func (s *store) indexLocked(ref objectRef, obj runtime.Object) {
	if pk, ok := packageKeyOf(obj); ok {
		addToSet(s.packages, pk, ref.key.name)
	}
	for _, r := range mustAccessor(obj).GetOwnerReferences() {
		addToSet(s.dependents, r.UID, ref)
	}
}

// unindexLocked removes a stored object from the indexes.
func (s *store) unindexLocked(ref objectRef, obj runtime.Object) {
	if pk, ok := packageKeyOf(obj); ok {
		removeFromSet(s.packages, pk, ref.key.name)
	}
	for _, r := range mustAccessor(obj).GetOwnerReferences() {
		removeFromSet(s.dependents, r.UID, ref)
	}
}

// reindexLocked moves a stored object from its old state's index entries to
// its new state's. Most replacements (status, labels, files) change neither
// the package nor the owners, and then leave the indexes alone.
func (s *store) reindexLocked(ref objectRef, old, obj runtime.Object) {
	oldPK, _ := packageKeyOf(old)
	newPK, _ := packageKeyOf(obj)
	sameOwners := slices.EqualFunc(mustAccessor(old).GetOwnerReferences(), mustAccessor(obj).GetOwnerReferences(),
		func(a, b metav1.OwnerReference) bool { return a.UID == b.UID })
	if oldPK == newPK && sameOwners {
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
func (s *store) dependentsLocked(namespace string, owner types.UID) []objectRef {
	var out []objectRef
	for ref := range s.dependents[owner] {
		// Owner references resolve within the dependent's namespace, so
		// only dependents in the owner's namespace are its own.
		if ref.key.namespace == namespace {
			out = append(out, ref)
		}
	}
	slices.SortFunc(out, func(a, b objectRef) int {
		if a.resource != b.resource {
			return kindOrder(a.resource) - kindOrder(b.resource)
		}
		return strings.Compare(a.key.name, b.key.name)
	})
	return out
}

// kindOrder is the position of a resource in kinds.
func kindOrder(resource string) int {
	return slices.IndexFunc(kinds, func(k *kind) bool { return k.resource == resource })
}

// packageEntriesLocked lists the revisions of one package, by name, from
// the package index (see index.go).
func (s *store) packageEntriesLocked(ns, repo, pkg string) []*entry {
	names := slices.Sorted(maps.Keys(s.packages[packageKey{ns, repo, pkg}]))
	out := make([]*entry, 0, len(names))
	for _, name := range names {
		out = append(out, s.objects[resPackageRevisions][objectKey{ns, name}])
	}
	return out
}
