package packagevariant_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// TestLoopWritesIntoOneRepositoryNeverOverlap: two variants whose
// downstreams are in one repository sync at the same time on two workers.
// Real Porch loses one of two overlapping writes into a repository (a
// created draft vanishes, or comes back without its metadata), so the
// first create is held until the other variant's write has either reached
// the controller's repository lock (and waits there) or reached Porch (an
// overlap, which porchsim records and the harness fails on). Both drafts
// are made, one after the other.
func TestLoopWritesIntoOneRepositoryNeverOverlap(t *testing.T) {
	h := newHarness(t)
	var once sync.Once
	h.Sim.OnWrite(func(_, repo, what string) {
		if repo != "deploy" || !strings.HasPrefix(what, "create ") {
			return
		}
		once.Do(func() {
			h.Eventually("the other variant's write to wait for the repository, or to overlap", func() bool {
				return h.ctrl.RepoLocks().Waiting(testNS, "deploy") > 0 || h.Sim.WritesInProgress(testNS, "deploy") > 1
			})
		})
	})
	h.CreateVariant(newVariant("a", "a"))
	h.CreateVariant(newVariant("b", "b"))
	h.waitReady("a")
	h.waitReady("b")
	h.Settle()
	h.expectRevisions("a", "packagevariant-1:Draft")
	h.expectRevisions("b", "packagevariant-1:Draft")
	if o := h.Sim.Overlaps(); len(o) > 0 {
		t.Errorf("writes overlapped: %v", o)
	}
}

// brokenStarlark is a built-in function whose script does not parse: it
// runs, and fails, in every render.
var brokenStarlark = kptfilev1.Function{
	Name:      "broken",
	Image:     "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5",
	ConfigMap: map[string]string{"source": "def broken(:"},
}

// TestLoopRenderFailure: a variant whose pipeline cannot render is not
// Ready (RenderFailed) and says which function failed and what it said; a
// Warning event is recorded once; status.downstreamTargets[].renderStatus
// tells the truth; the draft holds the variant's changes (Porch stores
// them, push-on-render-failure) with Rendered=False, so Porch refuses to
// propose it; retries are paced, not one per event; and once the variant is
// fixed the draft renders and the variant is Ready.
func TestLoopRenderFailure(t *testing.T) {
	h := newHarness(t)
	// No retry falls due during the test: any second write would come from
	// the events of the first.
	h.ctrl.SetRenderRetryBackoff(time.Hour, time.Hour)
	pv := goldVariant()
	pv.Spec.Pipeline = &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{brokenStarlark}}
	h.CreateVariant(pv)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonRenderFailed)
	for _, want := range []string{"the pipeline of deploy.app.packagevariant-1 failed to render", "PackageVariant.app.broken.0 (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5): ",
		"got ':', want ')'", "Porch refuses to propose it until it renders"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Ready message lacks %q:\n%s", want, cond.Message)
		}
	}
	draft := h.revisions("app")[0].Name
	files := h.Files(draft)
	mustContain(t, "package-context.yaml", files["package-context.yaml"], "tier: gold")
	mustContain(t, "Kptfile", files["Kptfile"], "reason: RenderFailed")
	if err := h.Sim.Propose(testNS, draft); err == nil {
		t.Error("the draft that does not render was proposed")
	}
	h.Eventually("the render status in downstreamTargets", func() bool {
		v := h.Variant("app")
		return len(v.Status.DownstreamTargets) == 1 && v.Status.DownstreamTargets[0].RenderStatus.Err != "" &&
			v.Status.DownstreamTargets[0].RenderStatus.Result.ExitCode != 0 && len(v.Status.DownstreamTargets[0].RenderStatus.Result.Items) > 0
	})
	// Each failed write stores files, and so an event; the retry still
	// waits for its backoff, so this stays at the first write.
	if n := h.Sim.Requests()["update packagerevisionresources"]; n != 1 {
		t.Errorf("%d resource updates soon after the failure, want 1 (retries are paced)", n)
	}
	if n := len(h.EventsMatching("RenderFailed")); n != 1 {
		t.Errorf("%d RenderFailed events, want 1: %v", n, h.EventsMatching("RenderFailed"))
	}

	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.Pipeline = nil })
	h.waitReady("app")
	h.Settle()
	files = h.Files(draft)
	mustContain(t, "Kptfile", files["Kptfile"], "reason: RenderSuccess")
	mustContain(t, "package-context.yaml", files["package-context.yaml"], "tier: gold")
	if v := h.Variant("app"); v.Status.DownstreamTargets[0].RenderStatus.Err != "" {
		t.Errorf("renderStatus after the fix: %+v", v.Status.DownstreamTargets[0].RenderStatus)
	}
	h.expectRevisions("app", "packagevariant-1:Draft")
}

// TestLoopLiveCheckBeforeReplacingDraft: the cache still shows the draft
// as the controller wrote it, but a person has just edited it (the cache
// has not seen the edit). The upstream moves; Porch ignores delete
// preconditions, so the controller reads the draft live right before it
// would delete it, sees the edit, and keeps it (DraftEdited).
func TestLoopLiveCheckBeforeReplacingDraft(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	// The variant's next sync is woken by the new upstream revision only;
	// the person's edit reaches Porch but not the controller's cache.
	h.Sim.HoldWatchEvents()
	h.personEdits(draft)
	publishV2(t, h.Sim)
	h.Sim.ReleaseWatchEvents()
	h.waitNotReady("app", packagevariant.ReasonDraftEdited)
	h.expectEditedDraftKept(draft)
	if n := h.Sim.Requests()["delete packagerevisions"]; n != 0 {
		t.Errorf("%d deletes of package revisions, want none", n)
	}
}

// TestLoopRestoresLostMetadata: Porch hands back a new draft without its
// labels, annotations and owner references (as it does when writes into one
// repository overlap). The variant recognises its own draft and restores
// them, and warns; it does not take the draft for a stranger's.
func TestLoopRestoresLostMetadata(t *testing.T) {
	var once sync.Once
	// The reactor goes in before the harness starts the informers: adding
	// one to a clientset in use races with its readers.
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		prependReactor(s, "create", "packagerevisions", func(a clienttesting.Action) (bool, runtime.Object, error) {
			once.Do(func() {
				pr := a.(clienttesting.CreateAction).GetObject().(*porchv1alpha1.PackageRevision)
				pr.Labels, pr.Annotations, pr.OwnerReferences = nil, nil, nil
			})
			return false, nil, nil // on to the Sim, which stores it bare
		})
	}))
	pv := newVariant("app", "app")
	pv.Spec.Labels = map[string]string{"team": "a"}
	pv.Spec.Annotations = map[string]string{"note": "n"}
	h.createReady(pv)
	h.expectRevisions("app", "packagevariant-1:Draft")
	draft := h.revisions("app")[0]
	if ref := metav1.GetControllerOf(&draft); ref == nil || ref.Name != "app" {
		t.Errorf("draft owners %+v, want the variant as controller", draft.OwnerReferences)
	}
	if draft.Labels["team"] != "a" || draft.Annotations["note"] != "n" || draft.Annotations[porchv1alpha1.PushOnRenderFailureAnnotation] != "true" {
		t.Errorf("draft labels %v annotations %v, want the variant's restored", draft.Labels, draft.Annotations)
	}
	h.expectEvents("MetadataRestored", 1)
}

// TestLoopLiveCheckSeesProposal: a person proposes the controller's
// unedited draft just as the controller, the upstream having moved, reads
// it to replace it. Porch would delete a Proposed revision whatever
// resourceVersion the delete names, so the controller reads the revision
// live after its files, immediately before the delete: it is Proposed, so
// it waits for the approval instead of deleting it.
func TestLoopLiveCheckSeesProposal(t *testing.T) {
	// The reactor goes in before the harness starts the informers (adding
	// one to a clientset in use races with its readers) and acts once armed.
	var (
		once  sync.Once
		armed atomic.Pointer[string]
	)
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		prependReactor(s, "get", "packagerevisionresources", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if draft := armed.Load(); draft != nil && a.(clienttesting.GetAction).GetName() == *draft {
				// The Sim's helpers take only the Sim's lock: a person acts
				// while the controller's read is on its way.
				once.Do(func() {
					if err := s.Propose(testNS, *draft); err != nil {
						t.Errorf("propose: %v", err)
					}
				})
			}
			return false, nil, nil
		})
	}))
	draft := h.readyAppDraft()
	armed.Store(&draft)
	publishV2(t, h.Sim)
	h.waitNotReady("app", packagevariant.ReasonWaitingForApproval)
	h.expectRevisions("app", "packagevariant-1:Proposed")
	if n := h.Sim.Requests()["delete packagerevisions"]; n != 0 {
		t.Errorf("%d deletes of package revisions, want none: the Proposed revision is a person's decision", n)
	}
}

// brokenKptfile is the blueprint's Kptfile with a pipeline whose one
// function, built into Porch, runs and fails.
const brokenKptfile = kptfileV1 + `pipeline:
  mutators:
  - name: broken
    image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5
    configMap:
      source: "def broken(:"
`

// brokenFiles are the blueprint's files with that pipeline.
func brokenFiles() map[string]string {
	files := blueprintFiles(1, "broken\n")
	files["Kptfile"] = brokenKptfile
	return files
}

// expectCreateRenderFailure waits for the variant to say, as RenderFailed,
// that Porch could not create its draft because the pipeline failed, made
// from what, which functions ran and what Porch said; one Warning event;
// no draft; the create tried once while its backoff runs.
func expectCreateRenderFailure(h *harness, name, draft, made string, functions ...string) {
	h.T.Helper()
	cond := h.WaitVariantCondition(name, packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonRenderFailed)
	want := append([]string{"Porch could not create draft " + draft + " (" + made + ")", "pipeline.run:", "Porch stored nothing"}, functions...)
	for _, w := range want {
		if !strings.Contains(cond.Message, w) {
			h.T.Errorf("Ready message lacks %q:\n%s", w, cond.Message)
		}
	}
	h.Settle()
	if _, err := h.Sim.PackageRevision(testNS, draft); err == nil {
		h.T.Errorf("draft %s exists; Porch stores nothing when a create fails to render", draft)
	}
	if n := len(h.EventsMatching("Porch could not create draft")); n != 1 {
		h.T.Errorf("%d RenderFailed events, want 1: %v", n, h.EventsMatching("RenderFailed"))
	}
	if n := h.Sim.Requests()["create packagerevisions"]; n != 1 {
		h.T.Errorf("%d creates, want 1: the retry waits for its backoff, not for the next event", n)
	}
}

// TestLoopCloneRenderFailure: the clone of a blueprint whose own pipeline
// fails is refused by Porch with the renderer's message. The variant says
// so as RenderFailed, naming the functions of the blueprint's pipeline and
// the ones it prepends (Porch does not say which failed), and retries on
// the render backoff; a new upstream revision is cloned at once.
func TestLoopCloneRenderFailure(t *testing.T) {
	h := newHarness(t)
	h.ctrl.SetRenderRetryBackoff(time.Hour, time.Hour)
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "bad", 1, brokenFiles()); err != nil {
		t.Fatal(err)
	}
	pv := customised("bad", "bad")
	pv.Spec.Upstream.Package = "bad"
	h.CreateVariant(pv)
	expectCreateRenderFailure(h, "bad", "deploy.bad.packagevariant-1", "clone of blueprints.bad.v1",
		"blueprints.bad.v1: broken (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5)",
		"prepended by the variant: set-ns (")

	if _, err := h.Sim.AddPublished(testNS, "blueprints", "bad", 2, blueprintFiles(2, "fixed\n")); err != nil {
		t.Fatal(err)
	}
	h.waitRevisions("bad", "packagevariant-1:Draft")
	h.waitReady("bad")
}

// TestLoopUpgradeRenderFailure: the upgrade of a published downstream to a
// new upstream revision whose pipeline fails is refused by Porch at the
// create; the variant says so, naming both sides' functions.
func TestLoopUpgradeRenderFailure(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	if err := h.Sim.Propose(testNS, draft); err != nil {
		t.Fatal(err)
	}
	h.publish(draft)
	h.waitReady("app")
	h.Settle()
	h.ctrl.SetRenderRetryBackoff(time.Hour, time.Hour)
	h.Sim.ResetRequests()
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "app", 2, brokenFiles()); err != nil {
		t.Fatal(err)
	}
	expectCreateRenderFailure(h, "app", "deploy.app.packagevariant-2",
		"upgrade of deploy.app.packagevariant-1 from blueprints.app.v1 to blueprints.app.v2",
		"blueprints.app.v2: broken (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5)")
	h.expectRevisions("app", "packagevariant-1:Published")
}

// TestLoopEditRenderFailure: a downstream revision pushed to git with a
// pipeline that fails, adopted by the variant: the edit that would apply
// the variant's changes is refused by Porch at the create.
func TestLoopEditRenderFailure(t *testing.T) {
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		files := brokenFiles()
		files["package-context.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: app\n"
		if _, err := s.AddPublished(testNS, "deploy", "app", 1, files); err != nil {
			panic(err)
		}
	}))
	h.ctrl.SetRenderRetryBackoff(time.Hour, time.Hour)
	pv := tiered("app", "app", "gold")
	pv.Spec.AdoptionPolicy = configv1alpha1.AdoptionPolicyAdoptExisting
	h.CreateVariant(pv)
	expectCreateRenderFailure(h, "app", "deploy.app.packagevariant-1", "edit of deploy.app.v1",
		"deploy.app.v1: broken (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5)")
}
