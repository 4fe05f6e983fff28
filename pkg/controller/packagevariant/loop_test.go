package packagevariant_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
)

// TestLoopClonesCustomisedDraft: a new variant gets one clone draft of the
// latest upstream, owned by the variant, with its labels, annotations,
// package context, prepended function and injected ConfigMap; its status
// says Ready and names the draft.
func TestLoopClonesCustomisedDraft(t *testing.T) {
	h := newHarness(t, withConfigMap("eu-west", map[string]string{"region": "eu-west-1"}))
	pv := h.createReady(customised("app-eu", "app-eu"))

	revs := h.waitRevisions("app-eu", "packagevariant-1:Draft")
	draft := &revs[0]
	if draft.Name != "deploy.app-eu.packagevariant-1" {
		t.Errorf("draft name %q", draft.Name)
	}
	if task := draft.Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeClone || task.Clone.Upstream.UpstreamRef.Name != "blueprints.app.v1" {
		t.Errorf("first task %+v, want a clone of blueprints.app.v1", task)
	}
	if ref := metav1.GetControllerOf(draft); ref == nil || ref.UID != pv.UID || controllerOwners(draft) != 1 {
		t.Errorf("owner references %+v, want one controller reference to the variant", draft.OwnerReferences)
	}
	if draft.Labels["team"] != "a" || draft.Annotations["owner"] != "platform" {
		t.Errorf("labels %v annotations %v, want the variant's", draft.Labels, draft.Annotations)
	}
	files := h.Files(draft.Name)
	mustContain(t, "package-context.yaml", files["package-context.yaml"], "name: app-eu", "cluster: eu-1")
	mustContain(t, "Kptfile", files["Kptfile"], "name: PackageVariant.app-eu.set-ns.0", "set-namespace:v0.4",
		"config.injection.ConfigMap.region-config", "conditionType: config.injection.ConfigMap.region-config")
	mustContain(t, "region.yaml", files["region.yaml"], "region: eu-west-1", "kpt.dev/injected-resource: eu-west")
	mustContain(t, "deployment.yaml", files["deployment.yaml"], "name: app # the app")

	got := h.Variant("app-eu")
	if !packagevariant.HasFinalizer(got) {
		t.Errorf("finalizers %v, want %s", got.Finalizers, configv1alpha1.Finalizer)
	}
	if len(got.Status.DownstreamTargets) != 1 || got.Status.DownstreamTargets[0].Name != draft.Name {
		t.Errorf("downstreamTargets %+v, want [%s]", got.Status.DownstreamTargets, draft.Name)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	stalled := h.condition("app-eu", packagevariant.ConditionStalled)
	if stalled == nil || stalled.Status != metav1.ConditionFalse || stalled.Reason != packagevariant.ReasonValid {
		t.Errorf("Stalled %+v, want False/Valid", stalled)
	}
	if ev := h.EventsMatching("Created draft deploy.app-eu.packagevariant-1"); len(ev) != 1 {
		t.Errorf("Created events %v, want one", ev)
	}
}

// TestLoopUpToDateVariantMakesNoRequests: once a variant is up to date, a
// sync (a resync, an unrelated event) reads only the caches.
func TestLoopUpToDateVariantMakesNoRequests(t *testing.T) {
	h := newHarness(t, withConfigMap("eu-west", map[string]string{"region": "eu-west-1"}))
	h.createReady(customised("app-eu", "app-eu"))

	h.Sim.ResetRequests()
	for range 3 {
		h.resync("app-eu")
	}
	h.Settle()
	if reqs := h.Sim.Requests(); len(reqs) != 0 {
		t.Errorf("an up-to-date variant made requests: %v", reqs)
	}

	// The same once its draft is published.
	name := h.revisions("app-eu")[0].Name
	h.publish(name)
	h.waitRevisions("app-eu", "packagevariant-1:Published")
	h.Settle()
	h.Sim.ResetRequests()
	h.resync("app-eu")
	h.Settle()
	if reqs := h.Sim.Requests(); len(reqs) != 0 {
		t.Errorf("an up-to-date variant with a published downstream made requests: %v", reqs)
	}
	h.expectRevisions("app-eu", "packagevariant-1:Published")
}

// TestLoopPublishedRevisionIsNotWrittenForARenderFailureOnRecord: the
// variant's status still names a failed render of a revision that has
// since been published (a person fixed the draft and published it before
// the variant synced again). A failed render is retried by writing the
// draft again; a published revision takes no files, so the variant, which
// has nothing to change in it, only records it.
func TestLoopPublishedRevisionIsNotWrittenForARenderFailureOnRecord(t *testing.T) {
	h := newHarness(t)
	published := h.publishedGold()
	h.Sim.ResetRequests()
	pv := h.Variant("app")
	pv.Status.DownstreamTargets = []configv1alpha1.DownstreamTarget{{Name: published, RenderStatus: porchv1alpha1.RenderStatus{Err: "render failed"}}}
	if _, err := h.Client.ConfigV1alpha1().PackageVariants(testNS).UpdateStatus(h.Ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.resync("app")
	h.Settle()
	if n := h.Sim.Requests()["update packagerevisionresources"]; n != 0 {
		t.Errorf("%d resource updates of the published revision, want none", n)
	}
	h.waitReady("app")
	h.expectRevisions("app", "packagevariant-1:Published")
}

// TestLoopSpecChangeEditsDraftInPlace: a changed spec is applied to the
// open draft, no second draft is made.
func TestLoopSpecChangeEditsDraftInPlace(t *testing.T) {
	h := newHarness(t)
	h.CreateVariant(goldVariant())
	h.waitReady("app")
	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext.Data["tier"] = "silver"
	})
	h.waitReady("app")
	h.Settle()
	revs := h.waitRevisions("app", "packagevariant-1:Draft")
	mustContain(t, "package-context.yaml", h.Files(revs[0].Name)["package-context.yaml"], "tier: silver")
}

// TestLoopSpecChangeOfPublishedMakesEditDraft: when the downstream is
// published, a changed spec gives an edit draft of it.
func TestLoopSpecChangeOfPublishedMakesEditDraft(t *testing.T) {
	h := newHarness(t)
	published := h.publishedGold()
	h.expectRevisions("app", "packagevariant-1:Published")

	h.UpdateVariantSpec("app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext.Data["tier"] = "silver"
	})
	revs := h.settleRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	draft := revs[1]
	if task := draft.Spec.Tasks[0]; task.Type != porchv1alpha1.TaskTypeEdit || task.Edit.Source.Name != published {
		t.Errorf("task %+v, want an edit of %s", task, published)
	}
	mustContain(t, "package-context.yaml", h.Files(draft.Name)["package-context.yaml"], "tier: silver")
	mustContain(t, "published package-context.yaml", h.Files(published)["package-context.yaml"], "tier: gold")
	targets := h.Variant("app").Status.DownstreamTargets
	if len(targets) != 1 || targets[0].Name != draft.Name {
		t.Errorf("downstreamTargets %+v, want only the draft %s", targets, draft.Name)
	}
}

// TestLoopUpstreamMoveMakesUpgradeDraft: a published downstream gets an
// upgrade draft when a new upstream revision is published; Porch's
// three-way merge keeps the variant's changes and brings the upstream's.
func TestLoopUpstreamMoveMakesUpgradeDraft(t *testing.T) {
	h := newHarness(t)
	published := h.publishedGold()

	publishV2(t, h.Sim)
	revs := h.settleRevisions("app", "packagevariant-1:Published", "packagevariant-2:Draft")
	draft := revs[1]
	task := draft.Spec.Tasks[0]
	if task.Type != porchv1alpha1.TaskTypeUpgrade || task.Upgrade.OldUpstream.Name != "blueprints.app.v1" ||
		task.Upgrade.NewUpstream.Name != "blueprints.app.v2" || task.Upgrade.LocalPackageRevisionRef.Name != published ||
		task.Upgrade.Strategy != porchv1alpha1.ResourceMerge {
		t.Errorf("task %+v, want a resource-merge upgrade of %s from v1 to v2", task, published)
	}
	files := h.Files(draft.Name)
	mustContain(t, "deployment.yaml", files["deployment.yaml"], "replicas: 3")
	mustContain(t, "package-context.yaml", files["package-context.yaml"], "tier: gold")
	if files["README.md"] != "v2\n" {
		t.Errorf("README %q, want the upstream's v2", files["README.md"])
	}
	if lock := h.Revision(draft.Name).Status.UpstreamLock; lock == nil || lock.Git == nil || !strings.HasSuffix(lock.Git.Ref, "/v2") {
		t.Errorf("upstreamLock %+v, want a ref ending in v2", lock)
	}
}
