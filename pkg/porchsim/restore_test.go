package porchsim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

const (
	setUID     = types.UID("5e7a0000-0000-4000-8000-00000000a001")
	variantUID = types.UID("5e7a0000-0000-4000-8000-00000000b001")
)

// liveSet is a PackageVariantSet as a cluster holds it: server metadata,
// several spec changes behind it, a finalizer and a status.
func liveSet() *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              "fleet",
			UID:               setUID,
			ResourceVersion:   "987654",
			Generation:        4,
			CreationTimestamp: metav1.NewTime(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)),
			Labels:            map[string]string{"team": "edge"},
			Annotations:       map[string]string{"note": "live"},
			Finalizers:        []string{"example.com/hold"},
		},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets:  []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "deploy"}}}},
		},
		Status: configv1alpha2.PackageVariantSetStatus{
			ObservedGeneration: 4,
			Conditions:         []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "UpToDate", LastTransitionTime: metav1.NewTime(time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC))}},
		},
	}
}

// liveVariant is a PackageVariant the set of liveSet generated: owned by the
// set and labelled with its uid.
func liveVariant() *configv1alpha1.PackageVariant {
	pv := newVariant("fleet-deploy-app")
	pv.UID = variantUID
	pv.ResourceVersion = "987600"
	pv.Generation = 2
	pv.CreationTimestamp = metav1.NewTime(time.Date(2024, 3, 1, 12, 0, 1, 0, time.UTC))
	pv.Labels = map[string]string{configv1alpha2.SetLabel: string(setUID)}
	pv.Finalizers = []string{configv1alpha1.Finalizer}
	pv.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "fleet", UID: setUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	pv.Status = configv1alpha1.PackageVariantStatus{ObservedGeneration: 2}
	return pv
}

// identity is what Restore keeps: everything but resourceVersion (the
// Sim's) and the type metadata (never stored).
var identity = cmp.Options{
	cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion"),
	cmpopts.IgnoreFields(metav1.TypeMeta{}, "APIVersion", "Kind"),
}

// TestRestoreKeepsIdentity: a restored set and its variant keep uid,
// generation, labels, annotations, owner references, finalizers,
// creationTimestamp and status; the Sim assigns a resourceVersion of its
// own and emits ADDED; the clientset serves them as restored.
func TestRestoreKeepsIdentity(t *testing.T) {
	s, c := fixture(t)
	var added []string
	s.Observe(func(ch Change) {
		if ch.Type == watch.Added && ch.Resource != resPackageRevisions {
			added = append(added, ch.Resource+" "+store.MustAccessor(ch.Object).GetName())
		}
	})
	ctx := context.Background()
	set, pv := liveSet(), liveVariant()
	for _, in := range []runtime.Object{set, pv} {
		got, err := s.Restore(in)
		if err != nil {
			t.Fatal(err)
		}
		m := store.MustAccessor(got)
		if d := cmp.Diff(in, got, identity); d != "" {
			t.Errorf("Restore changed %s (-given +stored):\n%s", m.GetName(), d)
		}
		if rv := m.GetResourceVersion(); rv == store.MustAccessor(in).GetResourceVersion() || s.Sequence(rv) == 0 {
			t.Errorf("%s: resourceVersion %q, want one of the Sim's sequence", m.GetName(), rv)
		}
	}
	if want := []string{"packagevariantsets fleet", "packagevariants fleet-deploy-app"}; !cmp.Equal(added, want) {
		t.Errorf("ADDED events %v, want %v", added, want)
	}

	gotSet := mustGet(t, c.ConfigV1alpha2().PackageVariantSets(ns), "fleet")
	if d := cmp.Diff(set, gotSet, identity); d != "" {
		t.Errorf("Get of the restored set (-restored +served):\n%s", d)
	}
	list := mustList(t, c.ConfigV1alpha1().PackageVariants(ns), metav1.ListOptions{LabelSelector: configv1alpha2.SetLabel + "=" + string(setUID)})
	if len(list.Items) != 1 {
		t.Fatalf("List by the set label: %d variants, want the restored one", len(list.Items))
	}
	if d := cmp.Diff(pv, &list.Items[0], identity); d != "" {
		t.Errorf("List of the restored variant (-restored +served):\n%s", d)
	}

	// A Repository too, and the update that follows works from the
	// restored resourceVersion and generation.
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live-repo", UID: "5e7a0000-0000-4000-8000-00000000c001", Generation: 9},
		Spec:       configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit, Git: &configv1alpha1.GitRepository{Repo: "https://example.com/live.git"}},
		Status:     configv1alpha1.RepositoryStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}},
	}
	if _, err := s.Restore(repo); err != nil {
		t.Fatal(err)
	}
	gotRepo := mustGet(t, c.ConfigV1alpha1().Repositories(ns), "live-repo")
	if gotRepo.UID != repo.UID || gotRepo.Generation != 9 || len(gotRepo.Status.Conditions) != 1 || gotRepo.CreationTimestamp.IsZero() {
		t.Errorf("restored repository served as %+v", gotRepo.ObjectMeta)
	}
	gotRepo.Spec.Deployment = true
	updated, err := c.ConfigV1alpha1().Repositories(ns).Update(ctx, gotRepo, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 10 || updated.UID != repo.UID {
		t.Errorf("after a spec update: generation %d uid %q, want 10 and the restored uid", updated.Generation, updated.UID)
	}
}

// TestRestoreDefaults: what a snapshot may lack is filled in as for a
// create: a uid, generation 1, a creationTimestamp.
func TestRestoreDefaults(t *testing.T) {
	s, _ := fixture(t)
	pv := newVariant("bare")
	got, err := s.Restore(pv)
	if err != nil {
		t.Fatal(err)
	}
	m := store.MustAccessor(got)
	if m.GetUID() == "" || m.GetGeneration() != 1 {
		t.Errorf("uid %q generation %d, want a uid and generation 1", m.GetUID(), m.GetGeneration())
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		t.Error("no creationTimestamp")
	}
}

// liveVariantWith is liveVariant changed by change.
func liveVariantWith(change func(pv *configv1alpha1.PackageVariant)) func(*Sim) runtime.Object {
	return func(*Sim) runtime.Object {
		pv := liveVariant()
		change(pv)
		return pv
	}
}

// TestRestoreRefusals: each refusal stores nothing.
func TestRestoreRefusals(t *testing.T) {
	cases := map[string]struct {
		obj  func(s *Sim) runtime.Object
		want string
	}{
		"a PackageRevision": {obj: func(*Sim) runtime.Object { return snapshotRevision() }, want: "restored with Import"},
		"another type":      {obj: func(*Sim) runtime.Object { return &porchv1alpha1.PackageRevisionResources{} }, want: "is not restorable"},
		"a nil variant":     {obj: func(*Sim) runtime.Object { return (*configv1alpha1.PackageVariant)(nil) }, want: "no PackageVariant given"},
		"no namespace":      {obj: liveVariantWith(func(pv *configv1alpha1.PackageVariant) { pv.Namespace = "" }), want: "metadata.namespace is required"},
		"invalid namespace": {obj: liveVariantWith(func(pv *configv1alpha1.PackageVariant) { pv.Namespace = "Not_A_Namespace" }), want: "metadata.namespace: "},
		"no name":           {obj: liveVariantWith(func(pv *configv1alpha1.PackageVariant) { pv.Name = "" }), want: "metadata.name is required"},
		"invalid name":      {obj: liveVariantWith(func(pv *configv1alpha1.PackageVariant) { pv.Name = "Bad Name" }), want: "metadata.name: "},
		"name taken": {obj: func(s *Sim) runtime.Object {
			if _, err := s.Restore(liveVariant()); err != nil {
				panic(err)
			}
			pv := liveVariant()
			pv.UID = "another-uid"
			return pv
		}, want: "already exists"},
		"uid of another kind": {obj: func(s *Sim) runtime.Object {
			pv := liveVariant()
			pv.UID = s.AddRepository(ns, "uid-holder", false, nil).UID
			return pv
		}, want: "already the uid of repositories ns/uid-holder"},
		"uid of a deleted object": {obj: func(s *Sim) runtime.Object {
			c := s.Clientset().ConfigV1alpha1().PackageVariants(ns)
			gone, err := c.Create(context.Background(), newVariant("gone"), metav1.CreateOptions{})
			if err != nil {
				panic(err)
			}
			if err := c.Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
				panic(err)
			}
			pv := liveVariant()
			pv.UID = gone.UID
			return pv
		}, want: "uid of an object the Sim deleted"},
		"being deleted without finalizers": {obj: liveVariantWith(func(pv *configv1alpha1.PackageVariant) {
			pv.Finalizers = nil
			pv.DeletionTimestamp = ptr.To(metav1.Now())
		}), want: "no finalizers"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := fixture(t)
			obj := tc.obj(s)
			before := len(s.PackageVariants(""))
			_, err := s.Restore(obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Restore error = %v, want one containing %q", err, tc.want)
			}
			if name == "name taken" && !apierrors.IsAlreadyExists(err) {
				t.Errorf("name taken: %v is not an AlreadyExists error", err)
			}
			if after := len(s.PackageVariants("")); after != before {
				t.Errorf("a refused Restore stored a variant (%d -> %d)", before, after)
			}
		})
	}
}

// TestRestoreOwnersAfterDependents: a variant restored before its set is
// not collected; once the set is restored, the owner index links them, and
// deleting the set collects the variant as for any owner and dependent.
// A variant whose owner the Sim never held is left alone.
func TestRestoreOwnersAfterDependents(t *testing.T) {
	s, c := fixture(t)
	ctx := context.Background()
	if _, err := s.Restore(liveVariant()); err != nil {
		t.Fatal(err)
	}
	stranger := newVariant("stranger")
	stranger.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Elsewhere", Name: "x", UID: "never-held-here"}}
	if _, err := s.Restore(stranger); err != nil {
		t.Fatal(err)
	}
	// A write of the dependent before its owner is here: still not
	// collected (the owner is not known to be gone).
	pv, err := c.ConfigV1alpha1().PackageVariants(ns).Get(ctx, "fleet-deploy-app", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("variant restored before its owner: %v", err)
	}
	pv.Annotations = map[string]string{"touched": "yes"}
	if _, err := c.ConfigV1alpha1().PackageVariants(ns).Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	set := liveSet()
	set.Finalizers = nil
	if _, err := s.Restore(set); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigV1alpha2().PackageVariantSets(ns).Delete(ctx, "fleet", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The variant has a finalizer: collected means being deleted.
	got, err := c.ConfigV1alpha1().PackageVariants(ns).Get(ctx, "fleet-deploy-app", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("variant of the deleted set: %v, deletionTimestamp %v; want it being deleted by the garbage collector", err, got.GetDeletionTimestamp())
	}
	got.Finalizers = nil
	if _, err := c.ConfigV1alpha1().PackageVariants(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfigV1alpha1().PackageVariants(ns).Get(ctx, "fleet-deploy-app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("variant after its finalizer went: %v, want NotFound", err)
	}
	if got, err := c.ConfigV1alpha1().PackageVariants(ns).Get(ctx, "stranger", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("variant owned elsewhere: %v; want it left alone", err)
	}
}

// TestRestoreBeingDeleted: a set restored while being deleted (deletion
// timestamp, a finalizer) is served so, a delete changes nothing, and the
// update that removes its last finalizer removes it and collects its
// restored variant.
func TestRestoreBeingDeleted(t *testing.T) {
	s, c := fixture(t)
	ctx := context.Background()
	set := liveSet()
	deleting := metav1.NewTime(time.Date(2024, 3, 3, 0, 0, 0, 0, time.UTC))
	set.DeletionTimestamp = &deleting
	set.DeletionGracePeriodSeconds = ptr.To(int64(0))
	if _, err := s.Restore(set); err != nil {
		t.Fatal(err)
	}
	pv := liveVariant()
	pv.Finalizers = nil
	if _, err := s.Restore(pv); err != nil {
		t.Fatal(err)
	}
	sets := c.ConfigV1alpha2().PackageVariantSets(ns)
	got, err := sets.Get(ctx, "fleet", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || !got.DeletionTimestamp.Equal(&deleting) {
		t.Fatalf("restored set being deleted: %v, deletionTimestamp %v, want %v", err, got.GetDeletionTimestamp(), deleting)
	}
	if err := sets.Delete(ctx, "fleet", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := sets.Get(ctx, "fleet", metav1.GetOptions{})
	if err != nil || again.ResourceVersion != got.ResourceVersion {
		t.Fatalf("a delete of a set already being deleted changed it: %v", err)
	}
	again.Finalizers = nil
	if _, err := sets.Update(ctx, again, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sets.Get(ctx, "fleet", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("set after its last finalizer went: %v, want NotFound", err)
	}
	if _, err := c.ConfigV1alpha1().PackageVariants(ns).Get(ctx, pv.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("variant of the removed set: %v, want it collected", err)
	}
}

// TestRestoredUIDsAreNotHandedOutAgain: a uid restored from another Sim's
// sequence is skipped when the Sim makes uids of its own.
func TestRestoredUIDsAreNotHandedOutAgain(t *testing.T) {
	s := New()
	next := types.UID("00000000-0000-4000-8000-000000000001") // the first uid New hands out
	pv := newVariant("restored")
	pv.UID = next
	if _, err := s.Restore(pv); err != nil {
		t.Fatal(err)
	}
	created, err := s.Clientset().ConfigV1alpha1().PackageVariants(ns).Create(context.Background(), newVariant("created"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == next {
		t.Errorf("a created variant got the uid %q of a restored one", created.UID)
	}
}
