package packagevariant

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// prWrite is what a test sees of a write to a PackageRevision. Deletes
// carry no preconditions: Porch ignores them.
type prWrite struct {
	Verb      string
	Name      string
	Lifecycle porchv1alpha1.PackageRevisionLifecycle
	Owners    []metav1.OwnerReference
}

func prWrites(t *testing.T, actions []core.Action) []prWrite {
	t.Helper()
	var out []prWrite
	for _, a := range actions {
		// Reads are not writes; release reads live before deleting.
		if a.GetResource().Resource != "packagerevisions" || a.GetVerb() == "get" {
			continue
		}
		switch a := a.(type) {
		case core.DeleteAction:
			if a.GetDeleteOptions().Preconditions != nil {
				t.Errorf("delete of %s sent preconditions %+v, which Porch ignores", a.GetName(), a.GetDeleteOptions().Preconditions)
			}
			out = append(out, prWrite{Verb: "delete", Name: a.GetName()})
		case core.UpdateAction:
			pr := a.GetObject().(*porchv1alpha1.PackageRevision)
			out = append(out, prWrite{Verb: "update", Name: pr.Name, Lifecycle: pr.Spec.Lifecycle, Owners: pr.OwnerReferences})
		default:
			t.Errorf("unexpected PackageRevision call %v", a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// keeper is an owner reference of someone else, which release must keep.
var keeper = metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "uid-keeper"}

// ownedRev is a revision of deploy/app owned by pv (controller) and keeper.
func ownedRev(pv *configv1alpha1.PackageVariant, ws string, lifecycle porchv1alpha1.PackageRevisionLifecycle) *porchv1alpha1.PackageRevision {
	pr := revision("ns", "deploy", "app", ws, pv)
	pr.UID = types.UID("uid-" + ws)
	pr.Spec.Lifecycle = lifecycle
	pr.OwnerReferences = append([]metav1.OwnerReference{keeper}, pr.OwnerReferences...)
	return pr
}

func TestRelease(t *testing.T) {
	const (
		draft            = porchv1alpha1.PackageRevisionLifecycleDraft
		proposed         = porchv1alpha1.PackageRevisionLifecycleProposed
		published        = porchv1alpha1.PackageRevisionLifecyclePublished
		deletionProposed = porchv1alpha1.PackageRevisionLifecycleDeletionProposed
	)
	deleted := prWrite{Verb: "delete", Name: "deploy.app.ws"}
	// released is the update that leaves the revision at lifecycle with
	// only the other owners.
	released := func(lifecycle porchv1alpha1.PackageRevisionLifecycle) prWrite {
		return prWrite{Verb: "update", Name: "deploy.app.ws", Lifecycle: lifecycle, Owners: []metav1.OwnerReference{keeper}}
	}
	del, orphan := configv1alpha1.DeletionPolicyDelete, configv1alpha1.DeletionPolicyOrphan
	cases := map[string]struct {
		reason    string
		policy    configv1alpha1.DeletionPolicy
		lifecycle porchv1alpha1.PackageRevisionLifecycle
		want      prWrite
	}{
		"DeleteDraft":            {"delete policy deletes a Draft", del, draft, deleted},
		"DeleteProposed":         {"delete policy deletes a Proposed revision", del, proposed, deleted},
		"DefaultPolicyIsDelete":  {"an empty deletion policy deletes", "", draft, deleted},
		"DeletePublished":        {"delete policy proposes deletion of a Published revision and lets go of it, other owners kept", del, published, released(deletionProposed)},
		"DeleteDeletionProposed": {"delete policy only lets go of a revision already proposed for deletion", del, deletionProposed, released(deletionProposed)},
		"OrphanDraft":            {"orphan policy removes only our owner reference from a Draft", orphan, draft, released(draft)},
		"OrphanProposed":         {"orphan policy keeps a Proposed revision as it is", orphan, proposed, released(proposed)},
		"OrphanPublished":        {"orphan policy keeps a Published revision Published", orphan, published, released(published)},
		"OrphanDeletionProposed": {"orphan policy keeps a DeletionProposed revision as it is", orphan, deletionProposed, released(deletionProposed)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
			pv.Spec.DeletionPolicy = tc.policy
			pr := ownedRev(pv, "ws", tc.lifecycle)
			f := newFixture(t)
			f.revs = []*porchv1alpha1.PackageRevision{pr}
			f.Objects = []runtime.Object{pr}
			c, _ := f.newController(ctx)
			before := pr.DeepCopy()
			if err := c.release(ctx, pv, pr, "test"); err != nil {
				t.Fatalf("release: %v", err)
			}
			if diff := cmp.Diff([]prWrite{tc.want}, prWrites(t, f.WriteActions())); diff != "" {
				t.Errorf("%s: API writes (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(before, pr); diff != "" {
				t.Errorf("release modified the cached revision (-before +after):\n%s", diff)
			}
		})
	}
}

// TestReleaseReadsLiveBeforeDeleting: the cache says Draft, but Porch
// knows better. Porch ignores delete preconditions, so release reads the
// revision live and acts on what it is now: a revision published meanwhile
// is proposed for deletion, never deleted; one the variant no longer owns is
// left alone.
func TestReleaseReadsLiveBeforeDeleting(t *testing.T) {
	published := porchv1alpha1.PackageRevisionLifecyclePublished
	cases := map[string]struct {
		reason string
		live   func(pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision)
		want   []prWrite
	}{
		"PublishedMeanwhile": {
			reason: "a cached Draft that a person published meanwhile is proposed for deletion, not deleted",
			live: func(_ *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision) {
				pr.Spec.Lifecycle = published
			},
			want: []prWrite{{Verb: "update", Name: "deploy.app.ws", Lifecycle: porchv1alpha1.PackageRevisionLifecycleDeletionProposed,
				Owners: []metav1.OwnerReference{keeper}}},
		},
		"ReleasedMeanwhile": {
			reason: "a revision no longer owned by the variant is left alone",
			live: func(pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision) {
				pr.OwnerReferences = withoutOwner(pr.OwnerReferences, pv.UID)
			},
		},
		"Unchanged": {
			reason: "a revision that is still the variant's Draft is deleted",
			live:   func(*configv1alpha1.PackageVariant, *porchv1alpha1.PackageRevision) {},
			want:   []prWrite{{Verb: "delete", Name: "deploy.app.ws"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
			cached := ownedRev(pv, "ws", porchv1alpha1.PackageRevisionLifecycleDraft)
			live := cached.DeepCopy()
			tc.live(pv, live)
			f := newFixture(t)
			f.revs = []*porchv1alpha1.PackageRevision{cached}
			f.Objects = []runtime.Object{live}
			c, _ := f.newController(ctx)
			if err := c.release(ctx, pv, cached, "test"); err != nil {
				t.Fatalf("release: %v", err)
			}
			if diff := cmp.Diff(tc.want, prWrites(t, f.WriteActions())); diff != "" {
				t.Errorf("%s: API writes (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReleaseOfVanishedRevision(t *testing.T) {
	for _, policy := range []configv1alpha1.DeletionPolicy{configv1alpha1.DeletionPolicyDelete, configv1alpha1.DeletionPolicyOrphan} {
		t.Run(string(policy), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
			pv.Spec.DeletionPolicy = policy
			f := newFixture(t)
			c, _ := f.newController(ctx)
			// Only the cache still has it: NotFound from the API means done.
			if err := c.release(ctx, pv, ownedRev(pv, "ws", porchv1alpha1.PackageRevisionLifecycleDraft), "test"); err != nil {
				t.Errorf("release of a revision that is already gone: %v, want nil", err)
			}
		})
	}
}

// deletingVariant is being deleted and still holds our finalizer and
// someone else's.
func deletingVariant() *configv1alpha1.PackageVariant {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	pv.Generation = 3
	now := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	pv.DeletionTimestamp = &now
	pv.Finalizers = []string{configv1alpha1.Finalizer, "example.com/other"}
	return pv
}

func TestCleanup(t *testing.T) {
	pv := deletingVariant()
	d1 := ownedRev(pv, "packagevariant-1", porchv1alpha1.PackageRevisionLifecycleDraft)
	d2 := ownedRev(pv, "packagevariant-2", porchv1alpha1.PackageRevisionLifecycleDraft)
	p1 := ownedRev(pv, "v1", porchv1alpha1.PackageRevisionLifecyclePublished)
	elsewhere := revision("ns", "deploy-old", "app", "packagevariant-1", pv) // left over from an earlier downstream
	elsewhere.UID = "uid-elsewhere"
	notOurs := revision("ns", "deploy", "app", "hand-made", nil)
	otherNS := revision("other", "deploy", "app", "packagevariant-1", pv)

	allDone := []prWrite{
		{Verb: "delete", Name: "deploy-old.app.packagevariant-1"},
		{Verb: "delete", Name: "deploy.app.packagevariant-1"},
		{Verb: "delete", Name: "deploy.app.packagevariant-2"},
		{Verb: "update", Name: "deploy.app.v1", Lifecycle: porchv1alpha1.PackageRevisionLifecycleDeletionProposed, Owners: []metav1.OwnerReference{keeper}},
	}
	type outcome struct {
		Writes []prWrite
		// Finalizers written by a variant update; nil when there was none.
		Finalizers []string
		Ready      *metav1.Condition
		Err        string
	}
	cases := map[string]struct {
		reason string
		pv     *configv1alpha1.PackageVariant
		failOn string // name of the revision whose delete fails
		want   outcome
	}{
		"AllSucceed": {
			reason: "every owned revision in the namespace goes through the policy, then only our finalizer is removed",
			pv:     pv,
			want:   outcome{Writes: allDone, Finalizers: []string{"example.com/other"}},
		},
		"OneFails": {
			reason: "a failed delete keeps the finalizer, returns the error and says so in Ready; the other revisions are still released",
			pv:     pv,
			failOn: "deploy.app.packagevariant-2",
			want: outcome{
				Writes: allDone,
				Ready: &metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonDeleting, ObservedGeneration: 3,
					Message: "cleanup of downstream revisions deploy.app.packagevariant-2 failed; the controller keeps retrying and keeps the finalizer until it succeeds: " +
						"delete deploy.app.packagevariant-2: porch is down"},
				Err: "clean up downstream revisions of ns/pv: delete deploy.app.packagevariant-2: porch is down",
			},
		},
		"NoFinalizer": {
			reason: "a variant without our finalizer has nothing left to clean up",
			pv: func() *configv1alpha1.PackageVariant {
				pv := deletingVariant()
				pv.Finalizers = []string{"example.com/other"}
				return pv
			}(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			f.pvs = []*configv1alpha1.PackageVariant{tc.pv}
			f.revs = []*porchv1alpha1.PackageRevision{d1, d2, p1, elsewhere, notOurs, otherNS}
			f.Objects = []runtime.Object{tc.pv}
			for _, pr := range f.revs {
				f.Objects = append(f.Objects, pr)
			}
			c, _ := f.newController(ctx)
			if tc.failOn != "" {
				f.Client.PrependReactor("delete", "packagerevisions", func(a core.Action) (bool, runtime.Object, error) {
					if a.(core.DeleteAction).GetName() == tc.failOn {
						return true, nil, errors.New("porch is down")
					}
					return false, nil, nil
				})
			}

			var got outcome
			if err := c.sync(ctx, cache.MetaObjectToName(tc.pv)); err != nil {
				got.Err = err.Error()
			}
			actions := f.WriteActions()
			got.Writes = prWrites(t, actions)
			for _, a := range actions {
				if a.GetResource().Resource != "packagevariants" {
					continue
				}
				written := a.(core.UpdateAction).GetObject().(*configv1alpha1.PackageVariant)
				switch a.GetSubresource() {
				case "":
					got.Finalizers = written.Finalizers
					if got.Finalizers == nil {
						got.Finalizers = []string{}
					}
				case "status":
					got.Ready = meta.FindStatusCondition(written.Status.Conditions, ConditionReady)
					if got.Ready != nil {
						got.Ready.LastTransitionTime = metav1.Time{}
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: outcome (-want +got):\n%s", tc.reason, diff)
			}
			if tc.want.Finalizers != nil {
				if last := actions[len(actions)-1]; last.GetResource().Resource != "packagevariants" {
					t.Errorf("%s: the finalizer must be removed after every revision was released; last call was %v", tc.reason, last)
				}
			}
		})
	}
}

// TestCleanupFailureIsReportedOnce checks that a cleanup failing the same
// way twice writes its status only the first time.
func TestCleanupFailureIsReportedOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := deletingVariant()
	d1 := ownedRev(pv, "packagevariant-1", porchv1alpha1.PackageRevisionLifecycleDraft)
	f := newFixture(t)
	f.revs = []*porchv1alpha1.PackageRevision{d1}
	f.Objects = []runtime.Object{pv, d1}
	c, _ := f.newController(ctx)
	f.Client.PrependReactor("delete", "packagerevisions", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("porch is down")
	})
	if err := c.cleanup(ctx, pv); err == nil {
		t.Fatal("cleanup: want an error")
	}
	var reported *configv1alpha1.PackageVariant
	for _, a := range f.WriteActions() {
		if a.GetSubresource() == "status" {
			reported = a.(core.UpdateAction).GetObject().(*configv1alpha1.PackageVariant)
		}
	}
	if reported == nil {
		t.Fatal("the first failure must be reported in status")
	}
	f.Client.ClearActions()
	if err := c.cleanup(ctx, reported); err == nil {
		t.Fatal("cleanup: want an error")
	}
	var statusWrites []string
	for _, a := range f.WriteActions() {
		if a.GetSubresource() == "status" {
			statusWrites = append(statusWrites, a.GetVerb())
		}
	}
	if len(statusWrites) != 0 {
		t.Errorf("the same failure again must not rewrite the status, got %d writes", len(statusWrites))
	}
	if !strings.Contains(meta.FindStatusCondition(reported.Status.Conditions, ConditionReady).Message, "deploy.app.packagevariant-1") {
		t.Errorf("the Ready message must name the revision that could not be cleaned up")
	}
}

// TestCleanupConfirmsLiveBeforeRemovingFinalizer: the cache shows no
// revision of the variant (its adoption of a draft has not reached the
// cache), the server does. Cleanup must not drop the finalizer on the
// cache's word, or the garbage collector would delete the draft whatever
// the policy: it lists the downstream package live, releases what it finds
// (orphan: the owner reference goes), keeps the finalizer, and drops it on
// the next sync when the live list shows nothing left.
func TestCleanupConfirmsLiveBeforeRemovingFinalizer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := deletingVariant()
	pv.Spec.DeletionPolicy = configv1alpha1.DeletionPolicyOrphan
	adopted := ownedRev(pv, "packagevariant-1", porchv1alpha1.PackageRevisionLifecycleDraft)
	cached := adopted.DeepCopy()
	cached.OwnerReferences = []metav1.OwnerReference{keeper} // before the adoption
	f := newFixture(t)
	f.revs = []*porchv1alpha1.PackageRevision{cached}
	f.Objects = []runtime.Object{pv, adopted}
	c, _ := f.newController(ctx)

	err := c.cleanup(ctx, pv)
	if err == nil || !strings.Contains(err.Error(), adopted.Name) {
		t.Fatalf("first cleanup: %v, want an error naming %s (the finalizer stays)", err, adopted.Name)
	}
	var finalizerRemoved bool
	for _, a := range f.WriteActions() {
		if a.GetResource().Resource == "packagevariants" && a.GetVerb() == "update" && a.GetSubresource() == "" {
			finalizerRemoved = true
		}
	}
	if finalizerRemoved {
		t.Error("the finalizer was removed while the server showed a revision the variant owns")
	}
	want := []prWrite{{Verb: "update", Name: adopted.Name, Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft, Owners: []metav1.OwnerReference{keeper}}}
	if diff := cmp.Diff(want, prWrites(t, f.WriteActions())); diff != "" {
		t.Errorf("revision writes (-want +got):\n%s", diff)
	}

	f.Client.ClearActions()
	if err := c.cleanup(ctx, pv); err != nil {
		t.Fatalf("second cleanup: %v", err)
	}
	var finalizers []string
	for _, a := range f.WriteActions() {
		if a.GetResource().Resource == "packagevariants" && a.GetVerb() == "update" && a.GetSubresource() == "" {
			finalizers = a.(core.UpdateAction).GetObject().(*configv1alpha1.PackageVariant).Finalizers
		}
	}
	if diff := cmp.Diff([]string{"example.com/other"}, finalizers); diff != "" {
		t.Errorf("finalizers after the live list showed nothing left (-want +got):\n%s", diff)
	}
}
