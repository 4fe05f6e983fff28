package store

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// newTestStore is a store of Repositories grouped by their deployment flag
// and of PackageVariants, which the garbage collector visits first.
func newTestStore() *Store {
	repos := ObjectKind(configv1alpha1.SchemeGroupVersion, "repositories", "Repository",
		func() runtime.Object { return &configv1alpha1.Repository{} },
		func() runtime.Object { return &configv1alpha1.RepositoryList{} })
	repos.Group = func(o runtime.Object) any { return o.(*configv1alpha1.Repository).Spec.Deployment }
	variants := ObjectKind(configv1alpha1.SchemeGroupVersion, "packagevariants", "PackageVariant",
		func() runtime.Object { return &configv1alpha1.PackageVariant{} },
		func() runtime.Object { return &configv1alpha1.PackageVariantList{} })
	return New(variants, repos)
}

// TestCheckIndexesFindsWhatAScanDoesNot checks that CheckIndexes, which
// porchsim's random workloads run after every step, fails when an index
// misses an update.
func TestCheckIndexesFindsWhatAScanDoesNot(t *testing.T) {
	fill := func() (*Store, types.UID) {
		s := newTestStore()
		s.Lock()
		defer s.Unlock()
		owner := s.InsertLocked("repositories", &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner"}}, nil)
		uid := MustAccessor(owner.Object()).GetUID()
		refs := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Repository", Name: "owner", UID: uid}}
		for _, name := range []string{"b", "a"} {
			s.InsertLocked("repositories", &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: refs},
				Spec: configv1alpha1.RepositorySpec{Deployment: true}}, nil)
			s.InsertLocked("packagevariants", &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, OwnerReferences: refs}}, nil)
		}
		return s, uid
	}
	s, _ := fill()
	if err := s.CheckIndexes(); err != nil {
		t.Fatalf("consistent store: %v", err)
	}
	for _, tc := range []struct {
		name, want string
		spoil      func(s *Store, owner types.UID)
	}{
		{"group missed", "group index differs", func(s *Store, _ types.UID) {
			removeFromSet(s.groups, groupKey{"repositories", true}, Key{"ns", "a"})
		}},
		{"dependent missed", "dependents index differs", func(s *Store, owner types.UID) {
			removeFromSet(s.dependents, owner, Ref{"packagevariants", Key{"ns", "b"}})
		}},
		{"group of a gone object", "group index differs", func(s *Store, _ types.UID) {
			addToSet(s.groups, groupKey{"repositories", false}, Key{"ns", "gone"})
		}},
	} {
		s, owner := fill()
		tc.spoil(s, owner)
		if err := s.CheckIndexes(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckIndexes = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}
