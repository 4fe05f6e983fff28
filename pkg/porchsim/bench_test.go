package porchsim

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// storeSizes are the numbers of downstream objects the benchmarks start
// with. A request must cost the same at every size: the fleet benchmark has
// 10,000 of each kind, and a per-request cost that grows with the store makes
// it quadratic.
var storeSizes = []int{1000, 10000}

// benchFleet is the fixture with n downstream packages in repository
// "deploy", each with one published revision owned by a PackageVariant of the
// same name. The objects are stored directly: setting up through requests
// would make the benchmark's setup, not its loop, the thing measured.
func benchFleet(b *testing.B, n int) *Sim {
	b.Helper()
	s := New()
	s.AddRepository(ns, "blueprints", false, nil)
	s.AddRepository(ns, "deploy", true, nil)
	if _, err := s.AddPublished(ns, "blueprints", "app", 1, blueprint(1, "app:v1", "readme\n")); err != nil {
		b.Fatal(err)
	}
	s.store.Lock()
	defer s.store.Unlock()
	for i := range n {
		name := fmt.Sprintf("site-%05d", i)
		pv := s.store.InsertLocked(resPackageVariants, newVariant(name), nil)
		s.store.InsertLocked(resPackageRevisions, benchRevision(name, porchv1alpha1.PackageRevisionLifecyclePublished, pv.Object()), nil)
	}
	return s
}

// benchRevision is a revision of the downstream package pkg owned by owner.
func benchRevision(pkg string, lc porchv1alpha1.PackageRevisionLifecycle, owner runtime.Object) *porchv1alpha1.PackageRevision {
	m := store.MustAccessor(owner)
	revision := 0
	if lc == porchv1alpha1.PackageRevisionLifecyclePublished {
		revision = 1
	}
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      helper.PackageRevisionName("deploy", pkg, "packagevariant-1"),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: configv1alpha1.SchemeGroupVersion.String(),
				Kind:       "PackageVariant",
				Name:       m.GetName(),
				UID:        m.GetUID(),
				Controller: ptr.To(true),
			}},
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    pkg,
			RepositoryName: "deploy",
			WorkspaceName:  "packagevariant-1",
			Revision:       revision,
			Lifecycle:      lc,
		},
	}
}

// BenchmarkCreateClone measures a PackageRevision create (a clone into a new
// downstream package), which applies Porch's per-package rules: workspace
// uniqueness and "clone only creates a package".
func BenchmarkCreateClone(b *testing.B) {
	benchSizes(b, "revisions", func(s *Sim) func(b *testing.B, i int) {
		prs := s.Clientset().PorchV1alpha1().PackageRevisions(ns)
		ctx := context.Background()
		return func(b *testing.B, i int) {
			in := newDraft("deploy", fmt.Sprintf("new-%07d", i), "packagevariant-1", cloneTask(upstreamV1))
			if _, err := prs.Create(ctx, in, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGarbageCollection measures deleting an owner whose dependent is
// collected: each op creates a PackageVariant owning a Draft, then deletes
// the variant, which removes the Draft through garbage collection (two
// owners removed, so two collector runs).
func BenchmarkGarbageCollection(b *testing.B) {
	benchSizes(b, "owners", func(s *Sim) func(b *testing.B, i int) {
		pvs := s.Clientset().ConfigV1alpha1().PackageVariants(ns)
		ctx := context.Background()
		return func(b *testing.B, i int) {
			name := fmt.Sprintf("gone-%07d", i)
			pv, err := pvs.Create(ctx, newVariant(name), metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			s.store.Lock()
			draft := s.store.InsertLocked(resPackageRevisions, benchRevision(name, porchv1alpha1.PackageRevisionLifecycleDraft, pv), nil)
			s.store.Unlock()
			if err := pvs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.PackageRevision(ns, store.MustAccessor(draft.Object()).GetName()); err == nil {
				b.Fatalf("the draft owned by %s was not collected", name)
			}
		}
	})
}

// benchSizes runs a benchmark at every store size (label=size): setup gets
// the fleet and returns the operation measured, called with its count.
func benchSizes(b *testing.B, label string, setup func(s *Sim) func(b *testing.B, i int)) {
	for _, n := range storeSizes {
		b.Run(fmt.Sprintf("%s=%d", label, n), func(b *testing.B) {
			op := setup(benchFleet(b, n))
			for i := 0; b.Loop(); i++ {
				op(b, i)
			}
		})
	}
}
