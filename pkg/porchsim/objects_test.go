package porchsim

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func readyCondition(status metav1.ConditionStatus) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: "Test", LastTransitionTime: metav1.Now().Rfc3339Copy()}}
}

func TestCustomResourceSemantics(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)

	in := newVariant("foo")
	in.Status.Conditions = readyCondition(metav1.ConditionTrue)
	created, err := pvs.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() || created.Generation != 1 {
		t.Errorf("create: server metadata missing: %+v", created.ObjectMeta)
	}
	if len(created.Status.Conditions) != 0 {
		t.Errorf("create kept the status; with a status subresource it is dropped")
	}
	if _, err := pvs.Create(ctx, newVariant("foo"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: got %v, want AlreadyExists", err)
	}
	withRV := newVariant("bar")
	withRV.ResourceVersion = "5"
	if _, err := pvs.Create(ctx, withRV, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("create with a resourceVersion: got %v, want BadRequest", err)
	}

	cases := []struct {
		name           string
		update         func(pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error)
		wantGeneration int64
		wantSameRV     bool
		check          func(t *testing.T, pv *configv1alpha1.PackageVariant)
	}{{
		name: "a spec change bumps generation",
		update: func(pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
			pv.Spec.Downstream.Package = "foo2"
			return pvs.Update(ctx, pv, metav1.UpdateOptions{})
		},
		wantGeneration: 2,
	}, {
		name: "a metadata change keeps generation",
		update: func(pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
			pv.Labels = map[string]string{"a": "b"}
			return pvs.Update(ctx, pv, metav1.UpdateOptions{})
		},
		wantGeneration: 2,
	}, {
		name: "update ignores status",
		update: func(pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
			pv.Status.Conditions = readyCondition(metav1.ConditionTrue)
			return pvs.Update(ctx, pv, metav1.UpdateOptions{})
		},
		wantGeneration: 2,
		wantSameRV:     true,
		check: func(t *testing.T, pv *configv1alpha1.PackageVariant) {
			if len(pv.Status.Conditions) != 0 {
				t.Errorf("update wrote status: %v", pv.Status.Conditions)
			}
		},
	}, {
		name: "update status changes only status",
		update: func(pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
			pv.Status.Conditions = readyCondition(metav1.ConditionTrue)
			pv.Spec.Downstream.Package = "ignored"
			pv.Labels = map[string]string{"ignored": "too"}
			return pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{})
		},
		wantGeneration: 2,
		check: func(t *testing.T, pv *configv1alpha1.PackageVariant) {
			if len(pv.Status.Conditions) != 1 || pv.Spec.Downstream.Package != "foo2" || pv.Labels["ignored"] != "" {
				t.Errorf("status update: status %v, downstream %q, labels %v", pv.Status.Conditions, pv.Spec.Downstream.Package, pv.Labels)
			}
		},
	}, {
		name: "an update that changes nothing is a no-op",
		update: func(pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
			return pvs.Update(ctx, pv, metav1.UpdateOptions{})
		},
		wantGeneration: 2,
		wantSameRV:     true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := mustGet(t, pvs, "foo")
			got, err := tc.update(before.DeepCopy())
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if got.Generation != tc.wantGeneration {
				t.Errorf("generation = %d, want %d", got.Generation, tc.wantGeneration)
			}
			if (got.ResourceVersion == before.ResourceVersion) != tc.wantSameRV {
				t.Errorf("resourceVersion %s -> %s, want unchanged: %v", before.ResourceVersion, got.ResourceVersion, tc.wantSameRV)
			}
			stored, _ := pvs.Get(ctx, "foo", metav1.GetOptions{})
			if diff := cmp.Diff(stored, got); diff != "" {
				t.Errorf("response differs from the stored object (-stored +response):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}

	pv, _ := pvs.Get(ctx, "foo", metav1.GetOptions{})
	pv.ResourceVersion = ""
	if _, err := pvs.Update(ctx, pv, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("update without resourceVersion: got %v, want Invalid", err)
	}
}

func TestFinalizerKeepsObjectUntilRemoved(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	in := newVariant("foo")
	in.Finalizers = []string{configv1alpha1.Finalizer}
	created, err := pvs.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := pvs.Delete(ctx, "foo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting, err := pvs.Get(ctx, "foo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("an object with finalizers must survive delete: %v", err)
	}
	if deleting.DeletionTimestamp == nil || deleting.Generation != created.Generation+1 {
		t.Errorf("deletionTimestamp %v, generation %d; want a timestamp and a generation bump", deleting.DeletionTimestamp, deleting.Generation)
	}
	if err := pvs.Delete(ctx, "foo", metav1.DeleteOptions{}); err != nil {
		t.Errorf("a second delete is accepted: %v", err)
	}
	again, _ := pvs.Get(ctx, "foo", metav1.GetOptions{})
	if !again.DeletionTimestamp.Equal(deleting.DeletionTimestamp) || again.ResourceVersion != deleting.ResourceVersion {
		t.Errorf("a second delete changed the object")
	}

	added := deleting.DeepCopy()
	added.Finalizers = append(added.Finalizers, "example.com/other")
	if _, err := pvs.Update(ctx, added, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("adding a finalizer while deleting: got %v, want Invalid", err)
	}
	cleared := deleting.DeepCopy()
	cleared.DeletionTimestamp = nil // clients cannot clear it
	cleared.Finalizers = nil
	if _, err := pvs.Update(ctx, cleared, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	if _, err := pvs.Get(ctx, "foo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("object still there after its last finalizer went: %v", err)
	}
}

func TestPackageRevisionFinalizer(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	in := newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1))
	in.Finalizers = []string{"example.com/f"}
	pr := create(t, c, in)
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, pr.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting := getPR(t, c, pr.Name)
	if deleting.DeletionTimestamp == nil {
		t.Fatalf("deletionTimestamp not set")
	}
	deleting.Finalizers = nil
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PackageRevision(ns, pr.Name); !apierrors.IsNotFound(err) {
		t.Errorf("revision still there after its last finalizer went: %v", err)
	}
}

func TestGarbageCollection(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)

	set, err := c.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownedBy := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha1", Kind: "PackageVariant", Name: name, UID: uid, Controller: ptr.To(true)}
	}
	mkPV := func(name string, finalizer bool, owners ...metav1.OwnerReference) *configv1alpha1.PackageVariant {
		in := newVariant(name)
		in.OwnerReferences = owners
		if finalizer {
			in.Finalizers = []string{configv1alpha1.Finalizer}
		}
		pv, err := pvs.Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pv
	}
	setRef := metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "set", UID: set.UID}
	generated := mkPV("generated", true, setRef)
	pv := mkPV("pv", false)
	other := mkPV("other", false)

	mkPR := func(pkg string, owners ...metav1.OwnerReference) string {
		in := newDraft("deploy", pkg, "packagevariant-1", cloneTask(upstreamV1))
		in.OwnerReferences = owners
		return create(t, c, in).Name
	}
	draft := mkPR("draft", ownedBy("pv", pv.UID))
	shared := mkPR("shared", ownedBy("pv", pv.UID), ownedBy("other", other.UID))
	published := mkPR("published", ownedBy("pv", pv.UID))
	if err := s.Publish(ns, published); err != nil {
		t.Fatal(err)
	}
	orphaned := mkPR("orphaned", ownedBy("other", other.UID))

	if err := pvs.Delete(ctx, "pv", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PackageRevision(ns, draft); !apierrors.IsNotFound(err) {
		t.Errorf("a draft owned only by the deleted variant must be collected: %v", err)
	}
	if pr := getPR(t, c, shared); len(pr.OwnerReferences) != 1 || pr.OwnerReferences[0].UID != other.UID {
		t.Errorf("a revision with another owner must only lose the dangling reference, got %+v", pr.OwnerReferences)
	}
	if pr := getPR(t, c, published); pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		t.Errorf("a published revision cannot be collected")
	}

	orphan := metav1.DeletePropagationOrphan
	if err := pvs.Delete(ctx, "other", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	if pr := getPR(t, c, orphaned); len(pr.OwnerReferences) != 0 {
		t.Errorf("propagationPolicy Orphan must orphan dependents, got owners %+v", pr.OwnerReferences)
	}

	if err := c.ConfigV1alpha2().PackageVariantSets(ns).Delete(ctx, "set", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pvs.Get(ctx, generated.Name, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Errorf("a variant with a finalizer owned by the deleted set must be terminating: %v, %+v", err, got.ObjectMeta)
	}
}

func TestListSelectors(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	for _, name := range []string{"a", "b", "c"} {
		pv := newVariant(name)
		pv.Labels = map[string]string{"set": "s1"}
		if name == "c" {
			pv.Labels["set"] = "s2"
		}
		if _, err := c.ConfigV1alpha1().PackageVariants(ns).Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		opts metav1.ListOptions
		want []string
	}{
		"label selector": {metav1.ListOptions{LabelSelector: "set=s1"}, []string{"a", "b"}},
		"field selector": {metav1.ListOptions{FieldSelector: "metadata.name=c"}, []string{"c"}},
		"everything":     {metav1.ListOptions{}, []string{"a", "b", "c"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			list := mustList(t, c.ConfigV1alpha1().PackageVariants(ns), tc.opts)
			checkDiff(t, tc.want, itemNames(t, list), "list")
			if list.ResourceVersion == "" {
				t.Errorf("a list carries a resourceVersion")
			}
		})
	}
	repos, err := c.ConfigV1alpha1().Repositories(ns).List(ctx, metav1.ListOptions{LabelSelector: "kind=blueprints"})
	if err != nil || len(repos.Items) != 1 || repos.Items[0].Name != "blueprints" {
		t.Errorf("repositories by label: %v, %+v", err, repos)
	}
}

func TestPatch(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	if _, err := pvs.Create(ctx, newVariant("foo"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pvs.Patch(ctx, "foo", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}},"status":{"conditions":[]}}`), metav1.PatchOptions{})
	if err != nil || got.Labels["a"] != "b" {
		t.Fatalf("merge patch: %v, %+v", err, got)
	}
	got, err = pvs.Patch(ctx, "foo", types.MergePatchType,
		[]byte(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"R","message":"","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}`),
		metav1.PatchOptions{}, "status")
	if err != nil || meta.FindStatusCondition(got.Status.Conditions, "Ready") == nil {
		t.Fatalf("status patch: %v, %+v", err, got)
	}
	stale := `{"metadata":{"resourceVersion":"1","labels":{"c":"d"}}}`
	if _, err := pvs.Patch(ctx, "foo", types.MergePatchType, []byte(stale), metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("patch with a stale resourceVersion: got %v, want Conflict", err)
	}
}

// TestGarbageCollectionOfDependentsOfGoneOwners: as the Kubernetes garbage
// collector, the Sim collects an object whose owners are all gone when it
// is written, not only when an owner is deleted: a variant created for a set
// that was deleted before (a controller working from a stale cache) goes
// (through its finalizer), and one that still has a live owner only loses
// the dangling reference. An owner the Sim never held is not judged, and
// objects placed by helpers are left as given.
func TestGarbageCollectionOfDependentsOfGoneOwners(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	sets := c.ConfigV1alpha2().PackageVariantSets(ns)
	pvs := c.ConfigV1alpha1().PackageVariants(ns)
	gone, err := sets.Create(ctx, &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sets.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	live, err := sets.Create(ctx, &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(set *configv1alpha2.PackageVariantSet) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: set.Name, UID: set.UID, Controller: ptr.To(true)}
	}

	orphan := newVariant("orphan")
	orphan.OwnerReferences = []metav1.OwnerReference{ref(gone)}
	orphan.Finalizers = []string{configv1alpha1.Finalizer}
	if _, err := pvs.Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v (the API accepts it; the collector acts afterwards)", err)
	}
	got, err := pvs.Get(ctx, "orphan", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Errorf("variant created for a deleted set: %v, deletionTimestamp %v; want it being deleted", err, got.GetDeletionTimestamp())
	}

	both := newVariant("both")
	both.OwnerReferences = []metav1.OwnerReference{ref(gone), ref(live)}
	if _, err := pvs.Create(ctx, both, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = pvs.Get(ctx, "both", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != live.UID {
		t.Errorf("variant with one live owner: %v, owners %v; want it kept with only the live owner", err, got.GetOwnerReferences())
	}

	foreign := newVariant("foreign")
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Elsewhere", Name: "x", UID: "never-held-here"}}
	if _, err := pvs.Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := pvs.Get(ctx, "foreign", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil || len(got.OwnerReferences) != 1 {
		t.Errorf("variant owned by an object the Sim never held: %v; want it left alone (its owner lives elsewhere)", err)
	}

	if _, err := s.Import(&porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: helper.PackageRevisionName("deploy", "imported", "ws"),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "config.porch.kpt.dev/v1alpha1", Kind: "PackageVariant", Name: "later", UID: "not-yet"}}},
		Spec: porchv1alpha1.PackageRevisionSpec{RepositoryName: "deploy", PackageName: "imported", WorkspaceName: "ws",
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft},
	}, map[string]string{kptfileName: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: imported\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PackageRevision(ns, helper.PackageRevisionName("deploy", "imported", "ws")); err != nil {
		t.Errorf("a revision imported before its owner was collected: %v", err)
	}
}
