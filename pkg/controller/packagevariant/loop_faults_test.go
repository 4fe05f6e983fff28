package packagevariant_test

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// Defects the soak (test/soak) found under combined faults, each staged
// here deterministically.

// publishV2AndWait publishes upstream revision 2 and waits until the
// controller's cache shows it, so that the next sync upgrades.
func (h *harness) publishV2AndWait() {
	h.T.Helper()
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "app", 2, blueprintFiles(3, "v2\n")); err != nil {
		h.T.Fatal(err)
	}
	h.Eventually("upstream v2 in the cache", func() bool {
		_, err := h.ctrl.PRLister().PackageRevisions(testNS).Get("blueprints.app.v2")
		return err == nil
	})
}

// expectUnverifiedOnceUpstreamMoves publishes upstream v2 once the
// variant is Ready and checks that the variant keeps its draft and says
// DraftUnverified, never DraftEdited: nobody edited the draft.
func (h *harness) expectUnverifiedOnceUpstreamMoves() {
	h.T.Helper()
	h.waitReady("app")
	h.Settle()
	h.publishV2AndWait()
	h.waitUnverifiedKept()
}

// waitUnverifiedKept waits until the variant says DraftUnverified and
// checks that it kept its draft and never said DraftEdited.
func (h *harness) waitUnverifiedKept() {
	h.T.Helper()
	h.waitNotReady("app", packagevariant.ReasonDraftUnverified)
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Draft")
	if ev := h.EventsMatching("DraftEdited"); len(ev) > 0 {
		h.T.Errorf("a draft nobody edited was reported as edited: %v", ev)
	}
}

// TestLoopEditedDraftStaysEditedAfterTheVariantWritesIt: a person edits
// the draft, then the variant changes and the controller writes its change
// into the edited draft (keeping the edit). When upstream then moves, the
// draft is still the person's: it is kept, not replaced. The controller
// used to record the files it wrote as its own, edit included, and then
// deleted the draft as unedited.
func TestLoopEditedDraftStaysEditedAfterTheVariantWritesIt(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	h.personEdits(draft)
	h.Settle()
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	})
	h.Eventually("the variant's change in the edited draft", func() bool {
		return strings.Contains(h.Files(draft)["package-context.yaml"], "tier: gold")
	})
	h.Settle()
	expectPersonEdits(t, h.Files(draft))

	h.publishV2AndWait()
	h.waitNotReady("app", packagevariant.ReasonDraftEdited)
	h.expectEditedDraftKept(draft)
}

// TestLoopLostCreateAnswerMakesNoSecondDraft: the answer to the create of
// a replacement draft is lost (the draft was made) while the cache lags
// behind; the controller must ask Porch before creating again. It used to
// number the next draft from the cache, which no longer showed the
// deleted draft and did not show the new one yet, and made a second draft.
func TestLoopLostCreateAnswerMakesNoSecondDraft(t *testing.T) {
	h := newHarness(t)
	h.createReady(newVariant("app", "app"))
	h.expectRevisions("app", "packagevariant-1:Draft")
	h.Sim.ResetRequests()
	replacement := helper.PackageRevisionName("deploy", "app", "packagevariant-2")
	h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions", Name: replacement, Times: 1,
		Err: porchsim.TimeoutError("the answer was lost"), AfterEffect: true})
	var once sync.Once
	h.Sim.OnWrite(func(_, _, what string) {
		if what == "create packagerevisions "+replacement {
			// From the replacement on, the cache shows nothing new.
			once.Do(h.Sim.HoldWatchEvents)
		}
	})
	h.publishV2AndWait()
	h.Eventually("a sync after the lost answer", func() bool {
		if h.Sim.Requests()["create packagerevisions"] >= 2 {
			return true // a second create: the defect
		}
		uid := h.Variant("app").UID
		name, _ := h.ctrl.Expectations().Waiting(uid, func(string) bool { return false })
		_, unconfirmed := h.ctrl.Expectations().Unconfirmed(uid)
		return name == replacement && !unconfirmed
	})
	h.Sim.ReleaseWatchEvents()
	h.waitReady("app")
	h.Settle()
	h.expectRevisions("app", "packagevariant-2:Draft")
	if n := h.Sim.Requests()["create packagerevisions"]; n != 1 {
		t.Errorf("%d creates of PackageRevisions after the lost answer, want 1", n)
	}
}

// TestLoopLostCreateAnswerIsNoPersonsEdit: the answer to the create of
// the variant's first draft is lost (the draft was made). The controller
// learns from Porch that it exists, but not whether a person edited it
// before that read, so it keeps the draft when upstream moves; it says so
// as DraftUnverified, not DraftEdited: no person edited it, and the soak
// counted such claims as untrue.
func TestLoopLostCreateAnswerIsNoPersonsEdit(t *testing.T) {
	h := newHarness(t)
	first := helper.PackageRevisionName("deploy", "app", "packagevariant-1")
	h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions", Name: first, Times: 1,
		Err: porchsim.TimeoutError("the answer was lost"), AfterEffect: true})
	h.createReady(newVariant("app", "app"))
	h.expectRevisions("app", "packagevariant-1:Draft")
	h.publishV2AndWait()
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonDraftUnverified)
	mustContain(t, "DraftUnverified message", cond.Message, first, "cannot tell", "blueprints.app.v2", "publish it", "delete it")
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Draft")
	if ev := h.EventsMatching("DraftEdited"); len(ev) > 0 {
		t.Errorf("a draft nobody edited was reported as edited: %v", ev)
	}
}

// TestLoopLostCreateOfARecreatedDraftIsNoPersonsEdit: a person deletes the
// variant's draft; the variant makes it again under the same name (Porch
// names drafts by workspace, and the deleted one's comes back), and the
// answer to that create is lost. The variant's record still names the
// deleted draft, whose inputs are the new draft's: the variant took the
// fresh clone for up to date and never applied itself to it, then, when
// upstream moved, for a person's edit (the soak's seed 134: DraftEdited).
func TestLoopLostCreateOfARecreatedDraftIsNoPersonsEdit(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	applied := h.Files(draft)
	h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions", Name: draft, Times: 1,
		Err: porchsim.TimeoutError("the answer was lost"), AfterEffect: true})
	if err := h.Sim.ClientsetAs("person").PorchV1alpha1().PackageRevisions(testNS).Delete(h.Ctx, draft, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Eventually("the draft made again", func() bool {
		_, unconfirmed := h.ctrl.Expectations().Unconfirmed(h.Variant("app").UID)
		return h.Sim.Requests()["create packagerevisions"] >= 2 && !unconfirmed
	})
	h.waitReady("app")
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Draft")
	if diff := cmp.Diff(applied, h.Files(draft)); diff != "" {
		t.Errorf("the draft made again does not hold the variant's changes (-first draft +second):\n%s", diff)
	}
	h.publishV2AndWait()
	h.waitNotReady("app", packagevariant.ReasonDraftUnverified)
	h.expectRevisions("app", "packagevariant-1:Draft")
}

// TestLoopDraftMadeAgainBeforeARestartIsNoPersonsEdit: a person deletes
// the variant's draft; the variant makes it again under the same name and
// the controller restarts before it writes into it or records it. The
// record the new controller finds is of the deleted draft, whose name and
// (Porch derives them from the name) UID the new one has: it took the
// fresh clone for up to date and never applied itself to it, then, when
// upstream moved, for a person's edit (the soak's seed 1 in CI:
// DraftEdited). The draft id the variant gives each draft it creates tells
// the two apart.
func TestLoopDraftMadeAgainBeforeARestartIsNoPersonsEdit(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	applied := h.Files(draft)
	h.Settle()
	prs := h.Client.PorchV1alpha1().PackageRevisions(testNS)
	first, err := prs.Get(h.Ctx, draft, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.restart(func() {
		if err := h.Sim.ClientsetAs("person").PorchV1alpha1().PackageRevisions(testNS).Delete(h.Ctx, draft, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// What the controller that went down had sent: the same draft
		// under the same name, with a draft id of its own.
		again := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{
			Name: draft, Namespace: testNS, OwnerReferences: first.OwnerReferences, Labels: first.Labels,
			Annotations: maps.Clone(first.Annotations),
		}, Spec: first.Spec}
		again.Annotations[configv1alpha1.DraftIDAnnotation] = "made-again"
		if _, err := prs.Create(h.Ctx, again, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	h.Eventually("the variant's changes in the draft made again", func() bool {
		return cmp.Equal(applied, h.Files(draft))
	})
	h.expectUnverifiedOnceUpstreamMoves()
}

// TestLoopWriteUnrecordedBeforeARestartIsNoPersonsEdit: the variant
// changes, the controller writes the change into its draft, and its status
// write (the record of that write) fails; the controller restarts before
// the retry, so the new one finds a record of the files before its own
// write. It took the draft for a person's edit and, when upstream moved,
// said DraftEdited (RELIABILITY.md had it as left open). The record is of
// before a write the variant owed, and the draft holds all the variant
// asks: the variant cannot tell, and says DraftUnverified. Upstream moves
// after the restart, or while the controllers are down (the stale draft is
// then judged on the way to its replacement).
func TestLoopWriteUnrecordedBeforeARestartIsNoPersonsEdit(t *testing.T) {
	for name, upstreamMovesWhileDown := range map[string]bool{"after the restart": false, "while the controllers are down": true} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			draft := h.readyAppDraft()
			h.Settle()
			var once sync.Once
			h.Sim.OnWrite(func(_, _, what string) {
				if what == "update packagerevisionresources "+draft {
					once.Do(func() { h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagevariants/status"}) })
				}
			})
			h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
				s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
			})
			h.Eventually("the variant's change in the draft", func() bool {
				return strings.Contains(h.Files(draft)["package-context.yaml"], "tier: gold")
			})
			h.restart(func() {
				h.Sim.ClearFaults()
				if upstreamMovesWhileDown {
					if _, err := h.Sim.AddPublished(testNS, "blueprints", "app", 2, blueprintFiles(3, "v2\n")); err != nil {
						t.Fatal(err)
					}
				}
			})
			if upstreamMovesWhileDown {
				h.waitUnverifiedKept()
			} else {
				h.expectUnverifiedOnceUpstreamMoves()
			}
			if c := h.condition("app", "Ready"); c.Reason != packagevariant.ReasonDraftUnverified {
				t.Errorf("Ready reason %s, want %s: %s", c.Reason, packagevariant.ReasonDraftUnverified, c.Message)
			}
		})
	}
}

// TestLoopFirstWriteUnrecordedBeforeARestartIsNoPersonsEdit: the first
// write into a new draft fails, and the variant records the draft as
// Porch made it (created@<resourceVersion>); the retry writes, its status
// write fails and the controller restarts. The new one found the draft at
// another resourceVersion than recorded and took it for a person's edit
// (CI's soak, seed 11). The record has no inputs: the variant owed the
// draft its changes, and the draft holds them: DraftUnverified.
func TestLoopFirstWriteUnrecordedBeforeARestartIsNoPersonsEdit(t *testing.T) {
	h := newHarness(t)
	draft := helper.PackageRevisionName("deploy", "app", "packagevariant-1")
	h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagerevisionresources", Name: draft, Times: 1})
	var writes atomic.Int32
	h.Sim.OnWrite(func(_, _, what string) {
		// The first write fails (the fault above); the second's status
		// write fails.
		if what == "update packagerevisionresources "+draft && writes.Add(1) == 2 {
			h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagevariants/status"})
		}
	})
	pv := newVariant("app", "app")
	pv.Spec.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	if _, err := h.Client.ConfigV1alpha1().PackageVariants(testNS).Create(h.Ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Eventually("the new draft recorded as Porch made it", func() bool {
		a := h.Variant("app").Status.Applied
		return a != nil && strings.HasPrefix(a.ResourcesDigest, "created@")
	})
	h.Eventually("the variant's changes in its new draft", func() bool {
		return strings.Contains(h.Files(draft)["package-context.yaml"], "tier: gold")
	})
	if a := h.Variant("app").Status.Applied; !strings.HasPrefix(a.ResourcesDigest, "created@") {
		t.Fatalf("the write into the draft was recorded (%s); the test needs it unrecorded", a.ResourcesDigest)
	}
	h.restart(h.Sim.ClearFaults)
	h.expectUnverifiedOnceUpstreamMoves()
}

// TestLoopLostWriteAnswerUnreadIsNoPersonsEdit: the answer to the
// variant's write into its draft is lost (the write was made) and the
// read that would tell fails too. The variant cannot know whose files the
// draft holds: when upstream moves, it keeps the draft and says
// DraftUnverified. It used to keep its record of the files before its own
// write and then said DraftEdited (the soak's seed 155).
func TestLoopLostWriteAnswerUnreadIsNoPersonsEdit(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	var once sync.Once
	h.Sim.OnWrite(func(_, _, what string) {
		if what == "update packagerevisionresources "+draft {
			once.Do(func() {
				h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagerevisionresources", Name: draft, Times: 1,
					Err: porchsim.TimeoutError("the answer was lost"), AfterEffect: true})
				h.Sim.InjectFault(porchsim.Fault{Verb: "get", Resource: "packagerevisionresources", Name: draft, Times: 1})
			})
		}
	})
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	})
	h.Eventually("the variant's change in the draft", func() bool {
		return strings.Contains(h.Files(draft)["package-context.yaml"], "tier: gold")
	})
	h.expectUnverifiedOnceUpstreamMoves()
}

// changeAndMoveUpstreamDuringTheWrite changes the variant so that the
// controller writes into its draft; while that write is in progress,
// during(draft) runs and upstream v2 is published (and in the cache). The
// draft then holds the controller's own files, so it must be replaced by a
// draft of v2, not reported as edited by a person.
func (h *harness) changeAndMoveUpstreamDuringTheWrite(during func(draft string)) {
	h.T.Helper()
	draft := h.readyAppDraft()
	var once sync.Once
	h.Sim.OnWrite(func(_, _, what string) {
		if what == "update packagerevisionresources "+draft {
			once.Do(func() {
				during(draft)
				h.publishV2AndWait()
			})
		}
	})
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	})
	h.settleRevisions("app", "packagevariant-2:Draft")
	if ev := h.EventsMatching("DraftEdited"); len(ev) > 0 {
		h.T.Errorf("the controller's own write was taken for a person's edit: %v", ev)
	}
}

// TestLoopLostUpdateAnswerIsNoEdit: the answer to the controller's write
// into its draft is lost (the write was made) and upstream moves before
// the controller syncs again. The draft holds the controller's own files:
// it is replaced, not reported as edited by a person (DraftEdited).
func TestLoopLostUpdateAnswerIsNoEdit(t *testing.T) {
	h := newHarness(t)
	h.changeAndMoveUpstreamDuringTheWrite(func(draft string) {
		h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagerevisionresources", Name: draft, Times: 1,
			Err: porchsim.TimeoutError("the answer was lost"), AfterEffect: true})
	})
}

// TestLoopEditAfterALostAnswerIsKept: the answer to the controller's write
// into its draft is lost (the write was made), and a person edits the draft
// before the controller reads it back to learn the outcome: the soak's seed
// 8 on a busy machine, where the two writes landed in the same millisecond.
// The read shows a new resourceVersion, as the controller's own write would.
// When upstream then moves, the draft holds the person's edit: it is kept
// and the variant says DraftUnverified (the controller cannot tell the
// edit from what a function of the pipeline changed). The controller used
// to record the files it read back, edit included, as its own, and deleted
// the draft as unedited three seconds later.
func TestLoopEditAfterALostAnswerIsKept(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	var lost, edited atomic.Bool
	h.Sim.OnWrite(func(_, _, what string) {
		if what == "update packagerevisionresources "+draft && !lost.Swap(true) {
			h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagerevisionresources", Name: draft, Times: 1,
				Err: porchsim.TimeoutError("the answer was lost"), AfterEffect: true})
		}
	})
	// The first read of the draft after the lost answer: the person's edit
	// is saved just before it is served.
	prependReactor(h.Sim, "get", "packagerevisionresources", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if a, ok := action.(clienttesting.GetAction); ok && a.GetName() == draft && lost.Load() && !edited.Swap(true) {
			h.personEdits(draft)
		}
		return false, nil, nil
	})
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	})
	h.Eventually("the lost write read back", edited.Load)
	h.Settle()
	h.publishV2AndWait()
	h.waitNotReady("app", packagevariant.ReasonDraftUnverified)
	h.expectEditedDraftKept(draft)
	mustContain(t, "package-context.yaml", h.Files(draft)["package-context.yaml"], "tier: gold")
}

// TestLoopFailedStatusWriteIsNoEdit: the controller writes into its draft,
// then fails to record that in the variant's status; upstream moves before
// the next sync. The draft holds the controller's own files: it is
// replaced, not reported as edited.
func TestLoopFailedStatusWriteIsNoEdit(t *testing.T) {
	h := newHarness(t)
	h.changeAndMoveUpstreamDuringTheWrite(func(string) {
		h.Sim.InjectFault(porchsim.Fault{Verb: "update", Resource: "packagevariants/status", Name: "app", Times: 1})
	})
}

// TestLoopDraftDeletedBeforeTheCacheSawIt: a person deletes the variant's
// new draft before the controller's cache shows it, and the watch restarts
// in between, so the cache never hears of the draft (a restarted watch of
// PackageRevisions replays only what exists). The variant asks Porch after
// a short wait and makes a new draft; it used to wait for the draft for
// two minutes and then for some other event.
func TestLoopDraftDeletedBeforeTheCacheSawIt(t *testing.T) {
	h := newHarness(t)
	first := helper.PackageRevisionName("deploy", "app", "packagevariant-1")
	var once sync.Once
	h.Sim.OnWrite(func(_, _, what string) {
		if what == "create packagerevisions "+first {
			once.Do(h.Sim.HoldWatchEvents)
		}
	})
	pv := h.CreateVariant(newVariant("app", "app"))
	h.Eventually("the draft created", func() bool {
		name, _ := h.ctrl.Expectations().Waiting(pv.UID, func(string) bool { return false })
		return name == first
	})
	// The controller may still be writing into it (Porch refuses a second
	// request on a revision in progress): the person tries again.
	h.Eventually("the person's delete of the new draft", func() bool {
		err := h.Sim.ClientsetAs("person").PorchV1alpha1().PackageRevisions(testNS).Delete(h.Ctx, first, metav1.DeleteOptions{})
		return err == nil
	})
	h.Sim.BreakWatches()
	h.Sim.ReleaseWatchEvents()
	h.waitRevisions("app", "packagevariant-1:Draft")
	h.waitReady("app")
}
