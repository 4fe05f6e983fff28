package packagevariantset_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/test/kit"
)

// kustomization is a Flux Kustomization named name in the test namespace,
// with status as Flux writes it: the revision it applied (or attempted)
// and its Ready condition ("" for no status yet).
func kustomization(name, applied, attempted, ready string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": name, "namespace": testNS},
		"spec":     map[string]any{"interval": "1m", "path": "./", "prune": true},
	}}
	if ready != "" {
		u.Object["status"] = map[string]any{
			"lastAppliedRevision": applied, "lastAttemptedRevision": attempted,
			"conditions": []any{map[string]any{"type": "Ready", "status": ready, "reason": "ReconciliationSucceeded", "message": "Applied revision: " + attempted}},
		}
	}
	return u
}

// fluxHealth is a health check over Flux Kustomizations named after the
// variants' Repositories, tying each to the revision just published.
func fluxHealth() *configv1alpha2.RolloutHealth {
	return &configv1alpha2.RolloutHealth{
		APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization",
		NameExpr: "repository.name",
		Current:  "object.?status.?lastAppliedRevision.orValue('') == revision.name && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		Failed:   "object.?status.?lastAttemptedRevision.orValue('') == revision.name && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')",
	}
}

// publishedRevision is the name of the latest Published revision of the
// variant's downstream package.
func (h *harness) publishedRevision(variant string) string {
	h.T.Helper()
	pv := h.Variant(variant)
	var best porchv1alpha1.PackageRevision
	for _, pr := range h.Revisions(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package) {
		if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished && pr.Spec.Revision > best.Spec.Revision {
			best = pr
		}
	}
	if best.Name == "" {
		h.T.Fatalf("%s has no published revision", variant)
	}
	return best.Name
}

// TestRolloutWaitsForHealth: with spec.rollout.health, a wave finishes only
// once each variant's Kustomization reports the revision it published as
// applied and Ready; one that reports it failed halts the rollout; fixed,
// the rollout completes.
func TestRolloutWaitsForHealth(t *testing.T) {
	h := newHarness(t, fleet(2, "prod"), kustomization("edge-00", "", "", ""), kustomization("edge-01", "", "", ""))
	pvs := rolloutSet()
	pvs.Spec.Rollout.Waves[1].Approval = ""
	pvs.Spec.Rollout.Health = fluxHealth()
	h.createAndPublish(pvs, "edge-edge-00-app", "edge-edge-01-app")

	h.Eventually("RolledOut to wait for edge-00's health", func() bool {
		cond := meta.FindStatusCondition(h.Set("edge").Status.Conditions, rollout.ConditionRolledOut)
		return cond != nil && cond.Reason == rollout.ReasonWaveProgressing && strings.Contains(cond.Message, "1 blocked (edge-edge-00-app (not healthy yet: Kustomization fleet/edge-00: ")
	})
	h.Settle()
	if st := h.Set("edge").Status.Rollout; st.Waves[0].Phase != configv1alpha2.WaveProgressing || st.Waves[0].Finished != 0 {
		t.Errorf("wave eu before edge-00 is healthy: %+v", st.Waves[0])
	}

	// Applied an older revision and Ready: not this revision, still waits.
	h.UpdateObject(kustomization("edge-00", "older", "older", "True"))
	h.Settle()
	if st := h.Set("edge").Status.Rollout; st.Waves[0].Finished != 0 {
		t.Errorf("a Kustomization Ready on another revision finished edge-00: %+v", st.Waves[0])
	}
	rev0, rev1 := h.publishedRevision("edge-edge-00-app"), h.publishedRevision("edge-edge-01-app")
	h.UpdateObject(kustomization("edge-00", rev0, rev0, "True"))
	h.UpdateObject(kustomization("edge-01", "", rev1, "False"))
	st := h.waitRollout(rollout.ReasonHalted, "eu:Finished us:Halted")
	if cond := meta.FindStatusCondition(st.Status.Conditions, rollout.ConditionRolledOut); !strings.Contains(cond.Message, "edge-edge-01-app (Unhealthy: Kustomization fleet/edge-01: failed is true)") {
		t.Errorf("RolledOut message %q does not name the unhealthy variant", cond.Message)
	}

	h.UpdateObject(kustomization("edge-01", rev1, rev1, "True"))
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")
}

// TestRolloutHealthAddedToAFinishedRollout: spec.rollout.health added to a
// live set whose rollout finished leaves that rollout finished (what the
// clusters run was not asked when it finished, and asking now re-opens
// nothing: RolledOut stays True) and gates the next one: with revision 2,
// the first wave finishes only once its cluster runs the new revision
// healthy, and only then does the next wave open.
func TestRolloutHealthAddedToAFinishedRollout(t *testing.T) {
	h := newHarness(t, fleet(2, "prod"), kustomization("edge-00", "", "", ""), kustomization("edge-01", "", "", ""))
	pvs := rolloutSet()
	pvs.Spec.Rollout.Waves[1].Approval = ""
	h.createAndPublish(pvs, "edge-edge-00-app", "edge-edge-01-app")
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")

	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout.Health = fluxHealth() })
	h.Settle()
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")

	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	h.waitOpen("edge-edge-00-app")
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen("edge-edge-00-app")
	h.Eventually("the eu wave to wait for edge-00's health", func() bool {
		cond := meta.FindStatusCondition(h.Set("edge").Status.Conditions, rollout.ConditionRolledOut)
		return cond != nil && cond.Reason == rollout.ReasonWaveProgressing && strings.Contains(cond.Message, "1 blocked (edge-edge-00-app (not healthy yet: ")
	})
	h.Settle()
	if got := h.pins(); got["edge-edge-01-app"] != 1 {
		t.Errorf("the us wave opened before the eu wave's cluster ran revision 2 healthy: pins %v", got)
	}
	if st := h.Set("edge").Status.Rollout; st.Waves[0].VariantStates[0].State != configv1alpha2.VariantBlocked {
		t.Errorf("wave eu lists %+v, want edge-edge-00-app Blocked", st.Waves[0].VariantStates)
	}

	rev0 := h.publishedRevision("edge-edge-00-app")
	h.UpdateObject(kustomization("edge-00", rev0, rev0, "True"))
	h.waitOpen("edge-edge-01-app")
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen("edge-edge-01-app")
	rev1 := h.publishedRevision("edge-edge-01-app")
	h.UpdateObject(kustomization("edge-01", rev1, rev1, "True"))
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")
}
