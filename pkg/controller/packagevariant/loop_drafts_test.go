package packagevariant_test

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// personEdits changes a draft as a person would: a new file and a changed
// field with a comment.
func (h *harness) personEdits(name string) {
	h.T.Helper()
	files := h.Files(name)
	files["notes.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  owner: alice\n"
	files["deployment.yaml"] = strings.Replace(files["deployment.yaml"], "name: app # the app", "name: app # the app\n  labels:\n    tuned: by-alice # keep", 1)
	if err := h.Sim.SetResources(testNS, name, files); err != nil {
		h.T.Fatalf("person's edit of %s: %v", name, err)
	}
}

func expectPersonEdits(t *testing.T, files map[string]string) {
	t.Helper()
	mustContain(t, "notes.yaml", files["notes.yaml"], "owner: alice")
	mustContain(t, "deployment.yaml", files["deployment.yaml"], "tuned: by-alice # keep")
}

// expectCloneOf checks that a draft was cloned from the upstream revision
// named.
func expectCloneOf(t *testing.T, pr *porchv1alpha1.PackageRevision, upstream string) {
	t.Helper()
	if task := pr.Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeClone || task.Clone.Upstream.UpstreamRef.Name != upstream {
		t.Errorf("%s: task %+v, want a clone of %s", pr.Name, task, upstream)
	}
}

// TestLoopStaleUneditedDraftIsReplaced: a draft the controller made from
// upstream v1 that nobody touched is replaced by a draft of v2 (Porch
// cannot upgrade a draft in place).
func TestLoopStaleUneditedDraftIsReplaced(t *testing.T) {
	h := newHarness(t)
	h.createReady(newVariant("app", "app"))
	publishV2(t, h.Sim)
	revs := h.settleRevisions("app", "packagevariant-2:Draft")
	expectCloneOf(t, &revs[0], "blueprints.app.v2")
	mustContain(t, "deployment.yaml", h.Files(revs[0].Name)["deployment.yaml"], "replicas: 3")
	h.expectEvents("Replaced", 1)
}

// TestLoopEditedStaleDraftIsKept: a draft a person edited is never
// replaced; the variant says why nothing happens, and once the person
// publishes it the upgrade follows with their edits merged.
func TestLoopEditedStaleDraftIsKept(t *testing.T) {
	h := newHarness(t)
	draft := h.readyAppDraft()
	h.personEdits(draft)
	h.Settle()
	publishV2(t, h.Sim)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonDraftEdited)
	mustContain(t, "DraftEdited message", cond.Message, draft, "blueprints.app.v2", "publish it", "delete it")
	// The log tells when, and from which record, the draft was taken for
	// a person's.
	if !slices.ContainsFunc(strings.Split(h.Logs(), "\n"), func(l string) bool {
		return strings.Contains(l, "taking them for a person's edit") && strings.Contains(l, draft) && strings.Contains(l, "recorded=")
	}) {
		t.Errorf("no log line says that %s was taken for a person's edit", draft)
	}
	h.Settle()
	h.expectEditedDraftKept(draft)

	h.publish(draft)
	revs := h.waitRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	h.waitReady("app")
	h.Settle()
	if task := revs[1].Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeUpgrade || task.Upgrade.LocalPackageRevisionRef.Name != draft {
		t.Errorf("task %+v, want an upgrade of %s", task, draft)
	}
	files := h.Files(revs[1].Name)
	expectPersonEdits(t, files)
	mustContain(t, "deployment.yaml", files["deployment.yaml"], "replicas: 3")
}

// TestLoopPersonsEditSurvivesSpecChange: the variant's changes are applied
// on top of a person's edits to the draft, never instead of them.
func TestLoopPersonsEditSurvivesSpecChange(t *testing.T) {
	h := newHarness(t)
	h.createReady(goldVariant())
	draft := h.revisions("app")[0].Name
	h.personEdits(draft)
	h.Settle()
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.PackageContext.Data["tier"] = "silver" })
	h.waitReady("app")
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Draft")
	files := h.Files(draft)
	expectPersonEdits(t, files)
	mustContain(t, "package-context.yaml", files["package-context.yaml"], "tier: silver")
}

// TestLoopPersonsEditRacingTheControllerIsKept: a person saves the draft
// between the controller's read and its write. Porch refuses the stale
// write (resourceVersion), the controller reads again, and both changes end
// up in the draft.
func TestLoopPersonsEditRacingTheControllerIsKept(t *testing.T) {
	// The reactor goes in before the harness starts the informers (adding
	// one to a clientset in use races with its readers) and acts once armed.
	var (
		h     *harness
		once  sync.Once
		armed atomic.Pointer[string]
	)
	h = newHarness(t, withSim(func(s *porchsim.Sim) {
		prependReactor(s, "update", "packagerevisionresources", func(clienttesting.Action) (bool, runtime.Object, error) {
			if draft := armed.Load(); draft != nil {
				once.Do(func() { h.personEdits(*draft) })
			}
			return false, nil, nil // on to the Sim, which sees a stale resourceVersion
		})
	}))
	h.createReady(goldVariant())
	draft := h.revisions("app")[0].Name
	armed.Store(&draft)
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.PackageContext.Data["tier"] = "silver" })
	h.waitReady("app")
	h.Settle()
	if got := h.Sim.Requests()["update packagerevisionresources"]; got < 2 {
		t.Errorf("%d resource updates, want the refused one and a retry", got)
	}
	files := h.Files(draft)
	expectPersonEdits(t, files)
	mustContain(t, "package-context.yaml", files["package-context.yaml"], "tier: silver")
	h.expectRevisions("app", "packagevariant-1:Draft")
}

// TestLoopUpstreamRevisionPin: spec.upstream.revision is honoured even
// when a newer revision exists, and moving the pin moves the downstream.
func TestLoopUpstreamRevisionPin(t *testing.T) {
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		publishV2(t, s)
	}))
	pv := newVariant("app", "app")
	pv.Spec.Upstream.Revision = 1
	h.createReady(pv)
	revs := h.waitRevisions("app", "packagevariant-1:Draft")
	if up := revs[0].Spec.Tasks[0].Clone.Upstream.UpstreamRef.Name; up != "blueprints.app.v1" {
		t.Errorf("cloned from %s, want the pinned blueprints.app.v1", up)
	}
	h.publish(revs[0].Name)
	h.waitRevisions("app", "packagevariant-1:Published")
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Published")

	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.Upstream.Revision = 2 })
	revs = h.waitRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	h.waitReady("app")
	if task := revs[1].Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeUpgrade || task.Upgrade.NewUpstream.Name != "blueprints.app.v2" {
		t.Errorf("task %+v, want an upgrade to v2", task)
	}
}

// TestLoopUpstreamWorkspacePin: spec.upstream.workspaceName selects a
// revision; with revision it must agree.
func TestLoopUpstreamWorkspacePin(t *testing.T) {
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		publishV2(t, s)
	}))
	pv := newVariant("app", "app")
	pv.Spec.Upstream.WorkspaceName = "v1"
	h.CreateVariant(pv)
	h.waitReady("app")
	revs := h.waitRevisions("app", "packagevariant-1:Draft")
	if up := revs[0].Spec.Tasks[0].Clone.Upstream.UpstreamRef.Name; up != "blueprints.app.v1" {
		t.Errorf("cloned from %s, want blueprints.app.v1", up)
	}

	bad := newVariant("disagree", "other")
	bad.Spec.Upstream.WorkspaceName = "v1"
	bad.Spec.Upstream.Revision = 2
	h.CreateVariant(bad)
	cond := h.WaitVariantCondition("disagree", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonValidationError)
	mustContain(t, "Stalled message", cond.Message, "v1", "2")
	h.Settle()
	h.expectRevisions("other")
}

// TestLoopNeverClonesPlaceholder: a package with only its main placeholder
// cannot be cloned; the status says so and nothing is created.
func TestLoopNeverClonesPlaceholder(t *testing.T) {
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		if _, err := s.AddPlaceholder(testNS, "blueprints", "empty"); err != nil {
			t.Fatal(err)
		}
	}))
	pv := newVariant("empty", "empty")
	pv.Spec.Upstream.Package = "empty"
	h.CreateVariant(pv)
	cond := h.WaitVariantCondition("empty", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonValidationError)
	mustContain(t, "Stalled message", cond.Message, "placeholder", "main", "publish")
	h.Settle()
	h.expectRevisions("empty")

	// Publishing the upstream is all it takes.
	if _, err := h.Sim.AddPublished(testNS, "blueprints", "empty", 1, blueprintFiles(1, "v1\n")); err != nil {
		t.Fatal(err)
	}
	h.waitReady("empty")
	h.waitRevisions("empty", "packagevariant-1:Draft")
}

// TestLoopProposedMeansWaitingForApproval: a Proposed downstream blocks
// changes (Porch refuses them); the variant waits instead of failing or
// making another draft, and continues once the revision is published.
func TestLoopProposedMeansWaitingForApproval(t *testing.T) {
	h := newHarness(t)
	h.createReady(goldVariant())
	name := h.revisions("app")[0].Name
	if err := h.Sim.Propose(testNS, name); err != nil {
		t.Fatal(err)
	}
	h.waitRevisions("app", "packagevariant-1:Proposed")
	h.Settle()
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.PackageContext.Data["tier"] = "silver" })
	cond := h.WaitVariantCondition("app", packagevariant.ConditionReady, metav1.ConditionFalse, packagevariant.ReasonWaitingForApproval)
	mustContain(t, "Ready message", cond.Message, name, "Proposed", "approval")
	if st := h.condition("app", packagevariant.ConditionStalled); st == nil || st.Status != metav1.ConditionFalse {
		t.Errorf("Stalled %+v, want False: waiting is not an error", st)
	}
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Proposed")

	h.publish(name)
	revs := h.waitRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	h.waitReady("app")
	mustContain(t, "package-context.yaml", h.Files(revs[1].Name)["package-context.yaml"], "tier: silver")
}

// TestLoopManualUpgradePolicy: Manual never makes an upgrade draft by
// itself; UpgradeAvailable names the new revision until the user pins it.
func TestLoopManualUpgradePolicy(t *testing.T) {
	h := newHarness(t)
	pv := newVariant("app", "app")
	pv.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	h.CreateVariant(pv)
	h.waitReady("app")
	name := h.revisions("app")[0].Name
	h.publish(name)
	h.waitRevisions("app", "packagevariant-1:Published")
	h.Settle()

	publishV2(t, h.Sim)
	cond := h.WaitVariantCondition("app", packagevariant.ConditionUpgradeAvailable, metav1.ConditionTrue, packagevariant.ReasonNewRevision)
	mustContain(t, "UpgradeAvailable message", cond.Message, "revision 2", "blueprints.app.v2", "spec.upstream.revision")
	h.Settle()
	h.expectRevisions("app", "packagevariant-1:Published")
	if ready := h.condition("app", packagevariant.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v, want True: the downstream is what the user chose", ready)
	}

	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.Upstream.Revision = 2 })
	revs := h.waitRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	h.waitReady("app")
	h.Settle()
	if task := revs[1].Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeUpgrade {
		t.Errorf("task %+v, want an upgrade", task)
	}
	if c := h.condition("app", packagevariant.ConditionUpgradeAvailable); c != nil {
		t.Errorf("UpgradeAvailable %+v still set after the upgrade", c)
	}
}

// TestLoopManualKeepsADraftOnAGoneRevision: a Manual variant's draft ends
// up based on an upstream revision that is gone: the variant's edit draft
// of its published revision, after a person deleted that published
// revision and then the upstream revision it was cloned from (Porch
// refuses the latter while a clone of it exists). The variant keeps the
// draft, since moving it to the latest revision would be an upgrade by
// itself, and says what holds it and what moves it; pinning the variant
// ends the hold.
func TestLoopManualKeepsADraftOnAGoneRevision(t *testing.T) {
	h := newHarness(t)
	pv := newVariant("app", "app")
	pv.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	h.createReady(pv)
	h.publish(h.revisions("app")[0].Name)
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	})
	edit := h.waitRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")[1].Name
	h.waitReady("app")
	publishV2(t, h.Sim)
	h.WaitVariantCondition("app", packagevariant.ConditionUpgradeAvailable, metav1.ConditionTrue, packagevariant.ReasonNewRevision)

	for _, name := range []string{"deploy.app.packagevariant-1", "blueprints.app.v1"} {
		h.personDeletesPublished(name)
	}
	h.waitNotReady("app", packagevariant.ReasonError)
	h.Settle()
	h.expectRevisions("app", "packagevariant-2:Draft")
	mustContain(t, "Ready message", h.condition("app", packagevariant.ConditionReady).Message,
		"draft "+edit+" is based on upstream", "not a published revision of blueprints/app any more", "spec.upgradePolicy is Manual",
		"set spec.upstream.revision to 2")

	// Pinning lifts the hold: the unedited draft is replaced. Its
	// successor is a clone, which Porch refuses while the package lives on
	// in its main branch; the variant says so.
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) { s.Upstream.Revision = 2 })
	h.waitRevisions("app")
	h.waitNotReady("app", packagevariant.ReasonRefused)
	mustContain(t, "Ready message", h.condition("app", packagevariant.ConditionReady).Message, "the package still exists in the repository")
}

// personDeletesPublished deletes a published revision as a person does:
// proposes its deletion, then deletes it.
func (h *harness) personDeletesPublished(name string) {
	h.T.Helper()
	person := h.Sim.ClientsetAs("person").PorchV1alpha1().PackageRevisions(testNS)
	pr := h.Revision(name)
	pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDeletionProposed
	if _, err := person.Update(h.Ctx, pr, metav1.UpdateOptions{}); err != nil {
		h.T.Fatalf("propose deleting %s: %v", name, err)
	}
	if err := person.Delete(h.Ctx, name, metav1.DeleteOptions{}); err != nil {
		h.T.Fatalf("delete %s: %v", name, err)
	}
}

// TestLoopInjectedConfigMapChange: a change to an injected ConfigMap in
// the cluster reaches the variant through the on-demand watch: the open
// draft is updated, and once published a new draft carries the new data.
func TestLoopInjectedConfigMapChange(t *testing.T) {
	h := newHarness(t, withConfigMap("eu-west", map[string]string{"region": "eu-west-1"}))
	h.createReady(customised("app-eu", "app-eu"))
	draft := h.revisions("app-eu")[0].Name

	h.updateConfigMap("eu-west", map[string]string{"region": "eu-west-2"})
	h.Eventually("the draft to carry the new region", func() bool {
		return strings.Contains(h.Files(draft)["region.yaml"], "region: eu-west-2")
	})
	h.Settle()
	h.expectRevisions("app-eu", "packagevariant-1:Draft")

	h.publish(draft)
	h.waitRevisions("app-eu", "packagevariant-1:Published")
	h.Settle()
	h.updateConfigMap("eu-west", map[string]string{"region": "eu-west-3"})
	revs := h.waitRevisions("app-eu", "packagevariant-1:Published", "packagevariant-2:Draft")
	h.waitReady("app-eu")
	h.Settle()
	if task := revs[1].Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeEdit {
		t.Errorf("task %+v, want an edit draft", task)
	}
	mustContain(t, "region.yaml", h.Files(revs[1].Name)["region.yaml"], "region: eu-west-3")
}

// TestLoopWatchesInjectedKindsOnDemand: ConfigMaps are listed and watched
// only once a variant's package has an injection point for them.
func TestLoopWatchesInjectedKindsOnDemand(t *testing.T) {
	h := newHarness(t, withConfigMap("eu-west", map[string]string{"region": "eu-west-1"}), withSim(func(s *porchsim.Sim) {
		files := blueprintFiles(1, "plain\n")
		delete(files, "region.yaml")
		if _, err := s.AddPublished(testNS, "blueprints", "plain", 1, files); err != nil {
			t.Fatal(err)
		}
	}))
	pv := customised("plain", "plain")
	pv.Spec.Upstream.Package = "plain"
	h.createReady(pv)
	for req := range h.Run.ObjectRequests() {
		t.Errorf("no injection point, but the controller called %s", req)
	}
	h.createReady(customised("app", "app"))
	if reqs := h.Run.ObjectRequests(); reqs["list configmaps"] == 0 || reqs["watch configmaps"] == 0 {
		t.Errorf("dynamic client calls %v, want a list and a watch of configmaps", reqs)
	}
}

// TestLoopNoDuplicateDraftWhileCacheLags: the response to the create is
// lost and the informer cache does not show the new draft; retries and
// further syncs must not make a second one.
func TestLoopNoDuplicateDraftWhileCacheLags(t *testing.T) {
	h := newHarness(t, withConfigMap("eu-west", map[string]string{"region": "eu-west-1"}))
	h.CreateVariant(customised("app-eu", "app-eu"))
	h.waitReady("app-eu")
	name := h.revisions("app-eu")[0].Name
	h.publish(name)
	h.waitRevisions("app-eu", "packagevariant-1:Published")
	h.Settle()

	h.Sim.HoldWatchEvents()
	h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions", Times: 1,
		Err: porchsim.TimeoutError("response lost"), AfterEffect: true})
	h.updateConfigMap("eu-west", map[string]string{"region": "eu-west-2"})
	h.Eventually("an edit draft to be created", func() bool { return len(h.revisions("app-eu")) == 2 })
	h.Eventually("the lost create to be retried", func() bool { return h.Sim.Requests()["create packagerevisions"] >= 2 })
	for range 5 {
		h.resync("app-eu")
	}
	h.expectRevisions("app-eu", "packagevariant-1:Published", "packagevariant-2:Draft")

	h.Sim.ReleaseWatchEvents()
	revs := h.waitRevisions("app-eu", "packagevariant-1:Published", "packagevariant-2:Draft")
	h.Eventually("the draft to carry the new region", func() bool {
		return strings.Contains(h.Files(revs[1].Name)["region.yaml"], "region: eu-west-2")
	})
	h.waitReady("app-eu")
	h.Settle()
	h.expectRevisions("app-eu", "packagevariant-1:Published", "packagevariant-2:Draft")
}
