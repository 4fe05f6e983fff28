package packagevariant_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// withLegacyDownstream puts a published package deploy/app in the Sim
// that no variant made (revision 1, workspace v1).
func withLegacyDownstream() harnessOption {
	return withSim(func(s *porchsim.Sim) {
		files := blueprintFiles(1, "legacy\n")
		files["package-context.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: app
`
		if _, err := s.AddPublished(testNS, "deploy", "app", 1, files); err != nil {
			panic(err)
		}
	})
}

func tiered(name, downstream, tier string) *configv1alpha1.PackageVariant {
	pv := newVariant(name, downstream)
	pv.Spec.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": tier}}
	return pv
}

// TestLoopAdoptNoneLeavesExistingPackageAlone: with the default
// adoptionPolicy an existing package is reported and not touched.
func TestLoopAdoptNoneLeavesExistingPackageAlone(t *testing.T) {
	h := newHarness(t, withLegacyDownstream())
	h.CreateVariant(tiered("app", "app", "gold"))
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonError)
	mustContain(t, "Ready message", cond.Message, "deploy/app already exists", "deploy.app.v1", "adoptionPolicy: adoptExisting")
	h.Settle()
	h.expectRevisions("app", "v1:Published")
	if refs := h.Revision("deploy.app.v1").OwnerReferences; len(refs) != 0 {
		t.Errorf("owner references %+v on a package the variant does not manage", refs)
	}
}

// TestLoopAdoptExisting: adoptExisting takes the package over with one
// controller reference and edits it; a revision controlled by someone else
// is never adopted.
func TestLoopAdoptExisting(t *testing.T) {
	h := newHarness(t, withLegacyDownstream())
	pv := tiered("app", "app", "gold")
	pv.Spec.AdoptionPolicy = configv1alpha1.AdoptionPolicyAdoptExisting
	pv.Spec.Labels = map[string]string{"team": "a"}
	created := h.CreateVariant(pv)
	revs := h.waitRevisions("app", "v1:Published", "packagevariant-1:Draft")
	h.waitReady("app")
	h.Settle()
	adopted := h.Revision("deploy.app.v1")
	if ref := metav1.GetControllerOf(adopted); ref == nil || ref.UID != created.UID || controllerOwners(adopted) != 1 {
		t.Errorf("owner references %+v, want one controller reference to the variant", adopted.OwnerReferences)
	}
	if adopted.Labels["team"] != "a" {
		t.Errorf("labels %v, want the variant's", adopted.Labels)
	}
	draft := byWorkspace(t, revs, "packagevariant-1")
	if task := draft.Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeEdit || task.Edit.Source.Name != "deploy.app.v1" {
		t.Errorf("task %+v, want an edit of the adopted revision", task)
	}
	mustContain(t, "package-context.yaml", h.Files(draft.Name)["package-context.yaml"], "tier: gold")
	h.expectEvents("Adopted", 1)
}

func TestLoopNeverAdoptsWhatAnotherControllerOwns(t *testing.T) {
	h := newHarness(t, withLegacyDownstream())
	pr := h.Revision("deploy.app.v1")
	pr.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Fleet", Name: "f", UID: "fleet-uid", Controller: ptr.To(true)}}
	if _, err := h.Client.PorchV1alpha1().PackageRevisions(testNS).Update(h.Ctx, pr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := tiered("app", "app", "gold")
	pv.Spec.AdoptionPolicy = configv1alpha1.AdoptionPolicyAdoptExisting
	h.CreateVariant(pv)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonError)
	mustContain(t, "Ready message", cond.Message, "controlled by another owner")
	h.Settle()
	h.expectRevisions("app", "v1:Published")
	if got := h.Revision("deploy.app.v1"); controllerOwners(got) != 1 || got.OwnerReferences[0].Kind != "Fleet" {
		t.Errorf("owner references %+v, want only the Fleet", got.OwnerReferences)
	}
}

// TestLoopNoDraftBesideAnotherOpenDraft: the variant's package is
// published, and a draft of it that another owner controls is open (as the
// chaos soak saw: a recreated variant's cache still showing its
// predecessor's draft under the predecessor). When the upstream moves, the
// variant used to make its upgrade draft beside it: two drafts of one
// package. It now waits, naming the other draft and its owner, and makes
// its draft once the other is gone.
func TestLoopNoDraftBesideAnotherOpenDraft(t *testing.T) {
	h := newHarness(t)
	h.createReady(newVariant("app", "app"))
	h.moveTo("deploy.app.packagevariant-1", porchv1alpha1.PackageRevisionLifecyclePublished)
	h.waitReady("app")
	h.Settle()
	other := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNS,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: configv1alpha1.SchemeGroupVersion.String(), Kind: "PackageVariant",
				Name: "old-app", UID: "old-app-uid", Controller: ptr.To(true)}},
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: "app", RepositoryName: "deploy", WorkspaceName: "by-hand",
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:     []porchv1alpha1.Task{packagevariant.EditTask(h.Revision("deploy.app.packagevariant-1"))},
		},
	}
	if _, err := h.Client.PorchV1alpha1().PackageRevisions(testNS).Create(h.Ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Settle()
	publishV2(t, h.Sim)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonOtherDraftOpen)
	mustContain(t, "Ready message", cond.Message, "deploy.app.by-hand (Draft)", "controlled by PackageVariant old-app", "no second draft")
	h.Settle()
	h.expectRevisions("app", "by-hand:Draft", "packagevariant-1:Published")

	if err := h.Client.PorchV1alpha1().PackageRevisions(testNS).Delete(h.Ctx, "deploy.app.by-hand", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	revs := h.waitRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	for _, pr := range revs {
		if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft && pr.Spec.Tasks[0].Type != porchv1alpha1.TaskTypeUpgrade {
			t.Errorf("%s task %+v, want an upgrade", pr.Name, pr.Spec.Tasks[0])
		}
	}
	h.waitReady("app")
}

// TestLoopConflictingVariants: two variants with one downstream: one wins,
// the other reports a Conflict naming it, once, and writes nothing. When
// the winner is deleted the other takes over.
func TestLoopConflictingVariants(t *testing.T) {
	h := newHarness(t)
	h.CreateVariant(tiered("first", "shared", "gold"))
	h.waitReady("first")
	h.Settle()
	h.CreateVariant(tiered("second", "shared", "silver"))
	cond := h.WaitVariantCondition("second", packagevariant.ConditionConflict, metav1.ConditionTrue, packagevariant.ReasonConflict)
	mustContain(t, "Conflict message", cond.Message, "deploy/shared", "PackageVariant team-a/first")
	if st := h.condition("second", packagevariant.ConditionStalled); st == nil || st.Status != metav1.ConditionTrue || st.Reason != packagevariant.ReasonConflict {
		t.Errorf("Stalled %+v, want True/Conflict", st)
	}
	if r := h.condition("second", packagevariant.ConditionReady); r == nil || r.Status != metav1.ConditionFalse {
		t.Errorf("Ready %+v, want False", r)
	}
	for range 3 {
		h.resync("second")
	}
	h.Settle()
	revs := h.waitRevisions("shared", "packagevariant-1:Draft")
	first := h.Variant("first")
	if ref := metav1.GetControllerOf(&revs[0]); ref == nil || ref.UID != first.UID {
		t.Errorf("draft controlled by %+v, want first", ref)
	}
	mustContain(t, "package-context.yaml", h.Files(revs[0].Name)["package-context.yaml"], "tier: gold")
	if ev := h.EventsMatching("Warning Conflict"); len(ev) != 1 {
		t.Errorf("Conflict events %v, want exactly one", ev)
	}

	h.deleteVariant("first")
	h.Eventually("first to be gone", func() bool { return h.Variant("first") == nil })
	h.waitReady("second")
	revs = h.waitRevisions("shared", "packagevariant-1:Draft")
	h.Settle()
	if ref := metav1.GetControllerOf(&revs[0]); ref == nil || ref.Name != "second" {
		t.Errorf("draft controlled by %+v, want second", ref)
	}
	mustContain(t, "package-context.yaml", h.Files(revs[0].Name)["package-context.yaml"], "tier: silver")
	if c := h.condition("second", packagevariant.ConditionConflict); c != nil {
		t.Errorf("Conflict %+v still set", c)
	}
}

// TestLoopDeletionPolicies: every deletion policy with every lifecycle of
// the variant's revisions. delete: Draft and Proposed are deleted, a
// Published revision is proposed for deletion and let go, a
// DeletionProposed one is let go. orphan: everything stays, let go.
func TestLoopDeletionPolicies(t *testing.T) {
	type want struct {
		gone      bool
		lifecycle porchv1alpha1.PackageRevisionLifecycle
	}
	cases := []struct {
		policy    configv1alpha1.DeletionPolicy
		lifecycle porchv1alpha1.PackageRevisionLifecycle
		want      want
	}{
		{configv1alpha1.DeletionPolicyDelete, porchv1alpha1.PackageRevisionLifecycleDraft, want{gone: true}},
		{configv1alpha1.DeletionPolicyDelete, porchv1alpha1.PackageRevisionLifecycleProposed, want{gone: true}},
		{configv1alpha1.DeletionPolicyDelete, porchv1alpha1.PackageRevisionLifecyclePublished, want{lifecycle: porchv1alpha1.PackageRevisionLifecycleDeletionProposed}},
		{configv1alpha1.DeletionPolicyDelete, porchv1alpha1.PackageRevisionLifecycleDeletionProposed, want{lifecycle: porchv1alpha1.PackageRevisionLifecycleDeletionProposed}},
		{"", porchv1alpha1.PackageRevisionLifecycleDraft, want{gone: true}},
		{configv1alpha1.DeletionPolicyOrphan, porchv1alpha1.PackageRevisionLifecycleDraft, want{lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft}},
		{configv1alpha1.DeletionPolicyOrphan, porchv1alpha1.PackageRevisionLifecycleProposed, want{lifecycle: porchv1alpha1.PackageRevisionLifecycleProposed}},
		{configv1alpha1.DeletionPolicyOrphan, porchv1alpha1.PackageRevisionLifecyclePublished, want{lifecycle: porchv1alpha1.PackageRevisionLifecyclePublished}},
		{configv1alpha1.DeletionPolicyOrphan, porchv1alpha1.PackageRevisionLifecycleDeletionProposed, want{lifecycle: porchv1alpha1.PackageRevisionLifecycleDeletionProposed}},
	}
	for _, tc := range cases {
		policy := tc.policy
		if policy == "" {
			policy = "default"
		}
		t.Run(fmt.Sprintf("%s/%s", policy, tc.lifecycle), func(t *testing.T) {
			h := newHarness(t)
			pv := newVariant("app", "app")
			pv.Spec.DeletionPolicy = tc.policy
			h.createReady(pv)
			name := h.revisions("app")[0].Name
			h.moveTo(name, tc.lifecycle)
			h.waitRevisions("app", "packagevariant-1:"+string(tc.lifecycle))
			h.Settle()

			h.deleteVariant("app")
			h.Eventually("the variant to be gone", func() bool { return h.Variant("app") == nil })
			h.Settle()
			revs := h.revisions("app")
			if tc.want.gone {
				if len(revs) != 0 {
					t.Fatalf("revisions %v, want none", summary(revs))
				}
				if ev := h.EventsMatching("Deleted " + string(tc.lifecycle) + " " + name); len(ev) != 1 {
					t.Errorf("Deleted events %v, want one", ev)
				}
				return
			}
			if len(revs) != 1 {
				t.Fatalf("revisions %v, want the one revision kept", summary(revs))
			}
			if revs[0].Spec.Lifecycle != tc.want.lifecycle {
				t.Errorf("lifecycle %s, want %s", revs[0].Spec.Lifecycle, tc.want.lifecycle)
			}
			if len(revs[0].OwnerReferences) != 0 {
				t.Errorf("owner references %+v left on a kept revision", revs[0].OwnerReferences)
			}
		})
	}
}

// moveTo takes a draft to a lifecycle as people would.
func (h *harness) moveTo(name string, lc porchv1alpha1.PackageRevisionLifecycle) {
	h.T.Helper()
	var err error
	switch lc {
	case porchv1alpha1.PackageRevisionLifecycleDraft:
	case porchv1alpha1.PackageRevisionLifecycleProposed:
		err = h.Sim.Propose(testNS, name)
	case porchv1alpha1.PackageRevisionLifecyclePublished:
		err = h.Sim.Publish(testNS, name)
	case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
		if err = h.Sim.Publish(testNS, name); err == nil {
			pr := h.Revision(name)
			pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDeletionProposed
			_, err = h.Client.PorchV1alpha1().PackageRevisions(testNS).Update(h.Ctx, pr, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		h.T.Fatalf("move %s to %s: %v", name, lc, err)
	}
}

// TestLoopFinalizerKeptUntilCleanupSucceeds: while the deletion policy
// cannot be carried out the variant stays, with its finalizer and a
// condition saying why; it goes once cleanup succeeds.
func TestLoopFinalizerKeptUntilCleanupSucceeds(t *testing.T) {
	h := newHarness(t)
	h.createReady(newVariant("app", "app"))
	h.Sim.InjectFault(porchsim.Fault{Verb: "delete", Resource: "packagerevisions", Err: porchsim.ServerError("porch is down")})
	h.deleteVariant("app")
	var msg string
	h.Eventually("a Deleting condition", func() bool {
		c := h.condition("app", packagevariant.ConditionReady)
		if c != nil && c.Reason == packagevariant.ReasonDeleting {
			msg = c.Message
			return true
		}
		return false
	})
	mustContain(t, "Deleting message", msg, "deploy.app.packagevariant-1", "porch is down", "keeps the finalizer")
	h.Eventually("a few retries", func() bool { return h.Sim.Requests()["delete packagerevisions"] >= 3 })
	pv := h.Variant("app")
	if pv == nil || !packagevariant.HasFinalizer(pv) {
		t.Fatalf("variant %v lost its finalizer before cleanup succeeded", pv)
	}
	h.expectRevisions("app", "packagevariant-1:Draft")

	h.Sim.ClearFaults()
	h.Eventually("the variant to be gone", func() bool { return h.Variant("app") == nil })
	h.Settle()
	h.expectRevisions("app")
}

// TestLoopChangedDownstreamReleasesOldPackage: moving spec.downstream
// applies the deletion policy to the old package and makes the new one.
func TestLoopChangedDownstreamReleasesOldPackage(t *testing.T) {
	h := newHarness(t)
	h.createReady(newVariant("app", "old"))
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.Downstream.Package = "new" })
	h.waitRevisions("new", "packagevariant-1:Draft")
	h.waitRevisions("old")
	h.waitReady("app")
	h.Settle()
}

// TestLoopConvergesThroughFaults: every kind of request the controller
// makes fails for a while (or succeeds with its response lost); once the
// faults stop the controller converges with no duplicate draft and no lost
// package. The scenario covers every write: finalizer, adoption, draft
// creation, resource update, status, and on deletion the draft's deletion,
// the published revision's DeletionProposed and the finalizer's removal.
func TestLoopConvergesThroughFaults(t *testing.T) {
	lost := porchsim.TimeoutError("response lost")
	cases := []porchsim.Fault{
		{Verb: "update", Resource: "packagevariants", Times: 2},
		{Verb: "update", Resource: "packagevariants", Times: 1, Err: lost, AfterEffect: true},
		{Verb: "update", Resource: "packagevariants/status", Times: 2, Err: porchsim.ConflictError("packagevariants/status", "app")},
		{Verb: "update", Resource: "packagevariants/status", Times: 1, Err: lost, AfterEffect: true},
		{Verb: "update", Resource: "packagerevisions", Times: 2},
		{Verb: "update", Resource: "packagerevisions", Times: 2, Err: lost, AfterEffect: true},
		{Verb: "create", Resource: "packagerevisions", Times: 2},
		{Verb: "create", Resource: "packagerevisions", Times: 1, Err: lost, AfterEffect: true},
		{Verb: "get", Resource: "packagerevisionresources", Times: 2, Err: porchsim.TimeoutError("slow")},
		{Verb: "update", Resource: "packagerevisionresources", Times: 2},
		{Verb: "update", Resource: "packagerevisionresources", Times: 1, Err: lost, AfterEffect: true},
		{Verb: "delete", Resource: "packagerevisions", Times: 2},
		{Verb: "delete", Resource: "packagerevisions", Times: 1, Err: lost, AfterEffect: true},
	}
	for _, f := range cases {
		name := f.Verb + " " + f.Resource
		if f.AfterEffect {
			name += " (response lost)"
		} else if f.Err != nil {
			name += " (" + strings.Fields(f.Err.Error())[0] + ")"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, withLegacyDownstream())
			h.Sim.InjectFault(f)
			pv := tiered("app", "app", "gold")
			pv.Spec.AdoptionPolicy = configv1alpha1.AdoptionPolicyAdoptExisting
			h.CreateVariant(pv)
			revs := h.settleRevisions("app", "v1:Published", "packagevariant-1:Draft")
			mustContain(t, "package-context.yaml", h.Files(byWorkspace(t, revs, "packagevariant-1").Name)["package-context.yaml"], "tier: gold")

			if f.Verb == "delete" {
				// This fault is for the deletion phase: start it afresh.
				h.Sim.ClearFaults()
				h.Sim.InjectFault(f)
			}
			h.deleteVariant("app")
			h.Eventually("the variant to be gone", func() bool { return h.Variant("app") == nil })
			h.Settle()
			h.expectRevisions("app", "v1:DeletionProposed")
			if refs := h.Revision("deploy.app.v1").OwnerReferences; len(refs) != 0 {
				t.Errorf("owner references %+v left on the published revision", refs)
			}
			// A failed request must have been retried; a lost response
			// need not be, but the fault must have been hit.
			wantAtLeast := f.Times + 1
			if f.AfterEffect {
				wantAtLeast = f.Times
			}
			if got := h.Sim.Requests()[f.Verb+" "+f.Resource]; got < wantAtLeast {
				t.Errorf("%d %s requests, want at least %d", got, f.Verb+" "+f.Resource, wantAtLeast)
			}
		})
	}
}

// TestLoopWaitsDoNotSpin: a variant stalled on a problem only a person can
// fix is not retried in a loop.
func TestLoopWaitsDoNotSpin(t *testing.T) {
	h := newHarness(t)
	pv := newVariant("app", "app")
	pv.Spec.Upstream.Package = "missing"
	h.CreateVariant(pv)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonValidationError)
	mustContain(t, "Stalled message", cond.Message, `"missing"`, `"blueprints"`, "check spec.upstream")
	h.Settle()
	before := h.syncCount("app")
	h.resync("app")
	h.Settle()
	if got := h.syncCount("app"); got != before+1 {
		t.Errorf("%d syncs after one resync, want 1", got-before)
	}
}

func byWorkspace(t *testing.T, revs []porchv1alpha1.PackageRevision, ws string) *porchv1alpha1.PackageRevision {
	t.Helper()
	for i := range revs {
		if string(revs[i].Spec.WorkspaceName) == ws {
			return &revs[i]
		}
	}
	t.Fatalf("no revision with workspace %s among %v", ws, summary(revs))
	return nil
}

// TestLoopRespectsProposedDeletion: when a person proposes deleting the
// variant's downstream, the variant neither restores it nor makes a new
// draft; it says what to do.
func TestLoopRespectsProposedDeletion(t *testing.T) {
	h := newHarness(t)
	h.CreateVariant(tiered("app", "app", "gold"))
	h.waitReady("app")
	h.Settle()
	name := h.revisions("app")[0].Name
	h.moveTo(name, porchv1alpha1.PackageRevisionLifecycleDeletionProposed)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonDeletionProposed)
	mustContain(t, "Ready message", cond.Message, name, "proposed for deletion", "set the revision back to Published")
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.PackageContext.Data["tier"] = "silver" })
	h.waitNotReady("app", packagevariant.ReasonDeletionProposed)
	h.expectRevisions("app", "packagevariant-1:DeletionProposed")
}
