package packagevariant_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// actionName is the name of the object a fake client action is about.
func actionName(a clienttesting.Action) string {
	switch a := a.(type) {
	case clienttesting.GetAction:
		return a.GetName()
	case clienttesting.DeleteAction:
		return a.GetName()
	case clienttesting.UpdateAction:
		if o, ok := a.GetObject().(metav1.Object); ok {
			return o.GetName()
		}
	case clienttesting.PatchAction:
		return a.GetName()
	}
	return ""
}

// editedFiles is a person's edit of a draft's files (as personEdits).
func editedFiles(files map[string]string) map[string]string {
	files["notes.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  owner: alice\n"
	files["deployment.yaml"] = strings.Replace(files["deployment.yaml"], "name: app # the app", "name: app # the app\n  labels:\n    tuned: by-alice # keep", 1)
	return files
}

// marked reports whether a revision carries the replacement mark.
func marked(pr *porchv1alpha1.PackageRevision) bool {
	_, ok := pr.Annotations[configv1alpha1.ReplacingAnnotation]
	return ok
}

// stuckProposedForReplacement moves the upstream of the variant "app" on
// while every delete of its draft fails, and returns the draft once the
// controller has proposed it, marked, on the way to replacing it.
func (h *harness) stuckProposedForReplacement() string {
	h.T.Helper()
	draft := h.revisions("app")[0].Name
	h.Sim.InjectFault(porchsim.Fault{Verb: "delete", Resource: "packagerevisions", Name: draft})
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "app", 2, blueprintFiles(3, "v2\n")); err != nil {
		h.T.Fatal(err)
	}
	h.Eventually("the stale draft proposed for its replacement", func() bool {
		pr := h.Revision(draft)
		return pr != nil && pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed && marked(pr)
	})
	return draft
}

// publishV2ExpectingEditKept arms a test's person for draft, moves the
// upstream on (v2) and expects the draft kept with the person's edit
// (DraftEdited), after the controller did what checked records: it
// "never <check>" otherwise.
func (h *harness) publishV2ExpectingEditKept(armed *atomic.Pointer[string], draft string, checked *atomic.Bool, check string) {
	h.T.Helper()
	armed.Store(&draft)
	publishV2(h.T, h.Sim)
	h.waitNotReady("app", packagevariant.ReasonDraftEdited)
	if !checked.Load() {
		h.T.Fatal("the controller never " + check)
	}
	h.expectEditedDraftKept(draft)
}

// TestLoopEditDuringReplacementIsKept: the upstream moves, and a person
// saves an edit into the controller's stale, unedited draft in the round
// trip between the controller's live check of the draft and its next
// request. Porch ignores delete preconditions, so the controller used to
// delete the draft with the edit (the chaos soak found it). It now
// proposes the draft at the resourceVersion it checked before it deletes
// it: Porch refuses that proposal, and the draft is kept (DraftEdited).
func TestLoopEditDuringReplacementIsKept(t *testing.T) {
	// The reactor goes in before the harness starts the informers and acts
	// once armed: after the controller's live read of the draft, before
	// the controller's next request about it is served.
	var (
		armed   atomic.Pointer[string]
		checked atomic.Bool
		once    sync.Once
	)
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		prependReactor(s, "*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			draft := armed.Load()
			if draft == nil || actionName(a) != *draft {
				return false, nil, nil
			}
			switch {
			case a.GetVerb() == "get" && a.GetResource().Resource == "packagerevisions":
				checked.Store(true)
			case checked.Load() && a.GetVerb() != "get":
				once.Do(func() {
					// The Sim's helpers take only the Sim's lock.
					files, err := s.Resources(testNS, *draft)
					if err == nil {
						err = s.SetResources(testNS, *draft, editedFiles(files))
					}
					if err != nil {
						t.Errorf("person's edit of %s: %v", *draft, err)
					}
				})
			}
			return false, nil, nil
		})
	}))
	draft := h.readyAppDraft()
	h.publishV2ExpectingEditKept(&armed, draft, &checked, "read the draft live before replacing it")
	if pr := h.Revision(draft); marked(pr) {
		t.Errorf("the kept draft carries the replacement mark: %v", pr.Annotations)
	}
	h.expectEvents("Replaced", 0)
}

// TestLoopReplacementFinishesAfterAFailedDelete: the delete of a stale
// draft the controller has just proposed fails; the next sync finds its
// marked proposal and deletes it, and the replacement follows. Nothing
// stays Proposed waiting for an approval nobody asked for.
func TestLoopReplacementFinishesAfterAFailedDelete(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	h.Sim.InjectFault(porchsim.Fault{Verb: "delete", Resource: "packagerevisions", Name: draft, Times: 1})
	publishV2(t, h.Sim)
	revs := h.settleRevisions("app", "packagevariant-2:Draft")
	expectCloneOf(t, &revs[0], "blueprints.app.v2")
	if n := h.Sim.Requests()["delete packagerevisions"]; n != 2 {
		t.Errorf("%d deletes of package revisions, want 2 (the failed one and its retry)", n)
	}
	h.expectEvents("Replaced", 1)
}

// TestLoopRejectedReplacementIsThePersons: while the controller's delete
// of its proposed stale draft keeps failing, a person sets the proposal
// back to Draft and edits it. The draft is theirs: the controller takes
// its mark off and keeps it (DraftEdited), and when the person proposes it
// later, that proposal stands.
func TestLoopRejectedReplacementIsThePersons(t *testing.T) {
	h := newHarness(t)
	h.createReady(newVariant("app", "app"))
	draft := h.stuckProposedForReplacement()
	// The person rejects the proposal (keeping the annotations, as kubectl
	// edit would) and edits the draft; the controller's reads of the files
	// fail meanwhile, so that it acts only once the person is done.
	reads := h.Sim.Requests()["get packagerevisionresources"]
	h.Sim.InjectFault(porchsim.Fault{Verb: "get", Resource: "packagerevisionresources", Name: draft})
	// A read that failed shows that no sync past its read of the files is
	// still in flight (one key syncs at a time): the sync that retries
	// the delete checks the files first. (A sync already past that check
	// when the person acts races with the person in the cluster too; it
	// proposes again at the resourceVersion it read, so it only loses to
	// a person who rejects and edits within its next request.)
	h.Eventually("the controller's read of the files to fail", func() bool {
		return h.Sim.Requests()["get packagerevisionresources"] > reads
	})
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		pr := h.Revision(draft)
		pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDraft
		_, err := h.Client.PorchV1alpha1().PackageRevisions(testNS).Update(h.Ctx, pr, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set %s back to Draft: %v", draft, err)
	}
	h.personEdits(draft)
	h.Sim.ClearFaults()
	h.waitNotReady("app", packagevariant.ReasonDraftEdited)
	h.expectEditedDraftKept(draft)
	if pr := h.Revision(draft); marked(pr) {
		t.Errorf("the person's draft still carries the replacement mark: %v", pr.Annotations)
	}

	h.moveTo(draft, porchv1alpha1.PackageRevisionLifecycleProposed)
	h.waitNotReady("app", packagevariant.ReasonWaitingForApproval)
	h.expectRevisions("app", "packagevariant-1:Proposed")
	expectPersonEdits(t, h.Files(draft))
}

// TestLoopOrphanedReplacementGoesBackToDraft: a variant whose deletion
// policy is orphan is deleted while its stale draft is proposed for
// replacement (the delete failing): the draft is released as the Draft it
// was, without the mark, not left Proposed.
func TestLoopOrphanedReplacementGoesBackToDraft(t *testing.T) {
	h := newHarness(t)
	pv := newVariant("app", "app")
	pv.Spec.DeletionPolicy = configv1alpha1.DeletionPolicyOrphan
	h.createReady(pv)
	draft := h.stuckProposedForReplacement()
	h.deleteVariant("app")
	h.Eventually("the variant gone", func() bool { return h.Variant("app") == nil })
	pr := h.Revision(draft)
	if pr == nil {
		t.Fatalf("%s was deleted; the orphan policy keeps it", draft)
	}
	if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft || marked(pr) || metav1.GetControllerOf(pr) != nil {
		t.Errorf("released %s: lifecycle %s, annotations %v, owners %v; want an unowned Draft without the mark",
			draft, pr.Spec.Lifecycle, pr.Annotations, pr.OwnerReferences)
	}
}

// TestLoopDraftThatDoesNotRenderIsStillReplaced: Porch renders a Draft on
// every update, so it refuses to propose one whose pipeline fails; such a
// stale draft (stored by push-on-render-failure) is deleted right after
// the live check instead, and replaced.
func TestLoopDraftThatDoesNotRenderIsStillReplaced(t *testing.T) {
	h := newHarness(t)
	pv := newVariant("app", "app")
	pv.Spec.Pipeline = &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{brokenStarlark}}
	h.CreateVariant(pv)
	h.waitNotReady("app", packagevariant.ReasonRenderFailed)
	h.expectRevisions("app", "packagevariant-1:Draft")
	publishV2(t, h.Sim)
	revs := h.waitRevisions("app", "packagevariant-2:Draft")
	expectCloneOf(t, &revs[0], "blueprints.app.v2")
	h.expectEvents("Replaced", 1)
}

// TestLoopRejectionWhileFinishingIsKept: the controller's delete of its
// proposed stale draft failed; on the next sync it checks the proposal
// live, and right after its read a person sets it back to Draft and edits
// it. Porch ignores delete preconditions, so the
// controller used to delete the edit. It now marks the proposal again at
// the resourceVersion it checked before deleting: Porch refuses that, and
// the person's draft is kept (DraftEdited).
func TestLoopRejectionWhileFinishingIsKept(t *testing.T) {
	var (
		armed      atomic.Pointer[string]
		deleteSeen atomic.Bool
		checked    atomic.Bool
		once       sync.Once
	)
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		person := s.ClientsetAs("person").PorchV1alpha1().PackageRevisions(testNS)
		prependReactor(s, "*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			draft := armed.Load()
			if draft == nil || actionName(a) != *draft {
				return false, nil, nil
			}
			switch {
			case a.GetVerb() == "delete" && !deleteSeen.Load():
				deleteSeen.Store(true) // the one that fails
			case !deleteSeen.Load():
			case a.GetVerb() == "get" && a.GetResource().Resource == "packagerevisions":
				// The controller's check (files, then the revision) reads
				// the revision as it is now; the person acts before the
				// controller's next request (a write in flight would make
				// Porch refuse the person's).
				var served runtime.Object
				once.Do(func() {
					checked.Store(true)
					pr, err := s.ClientsetAs("reader").PorchV1alpha1().PackageRevisions(testNS).Get(context.Background(), *draft, metav1.GetOptions{})
					if err != nil {
						t.Errorf("read %s: %v", *draft, err)
						return
					}
					served = pr
					rejected := pr.DeepCopy()
					rejected.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDraft
					_, err = person.Update(context.Background(), rejected, metav1.UpdateOptions{})
					var files map[string]string
					if err == nil {
						files, err = s.Resources(testNS, *draft)
					}
					if err == nil {
						err = s.SetResources(testNS, *draft, editedFiles(files))
					}
					if err != nil {
						t.Errorf("person's rejection and edit of %s: %v", *draft, err)
					}
				})
				if served != nil {
					return true, served, nil
				}
			}
			return false, nil, nil
		})
	}))
	draft := h.readyAppDraft()
	h.Sim.InjectFault(porchsim.Fault{Verb: "delete", Resource: "packagerevisions", Name: draft, Times: 1})
	h.publishV2ExpectingEditKept(&armed, draft, &checked, "checked its proposal live after the failed delete")
}
