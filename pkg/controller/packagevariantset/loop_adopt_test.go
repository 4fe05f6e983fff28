package packagevariantset_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/test/kit"
)

// TestRolloutAdoptedByALiveSetHoldsEveryWave: a live set whose variants
// follow the latest upstream revision gets spec.rollout, its last wave
// Manual. The waves that open pin their variants to the revision they
// carry; the Manual wave's variants keep following the latest revision in
// their spec until it is approved. When revision 2 is published, only the
// canary wave takes it: the variant controller holds the upgrade of the
// Manual wave's variants (no draft; UpgradeAvailable names the set), so
// no variant takes a change its wave has not opened. Approved, the Manual
// wave takes revision 2 like any other.
func TestRolloutAdoptedByALiveSetHoldsEveryWave(t *testing.T) {
	repos, pvs := ringSet()
	waves := pvs.Spec.Rollout
	waves.Waves[2].Approval = configv1alpha2.WaveApprovalManual
	pvs.Spec.Rollout = nil
	h := startRing(t, repos, pvs)
	h.Settle()
	h.expectCarried(map[string]string{v0: "r0", v1: "r0", v2: "r0", v3: "r0", v4: "r0", v5: "r0"})

	// The rollout arrives: pinning a variant to the revision it carries
	// changes no package, so the automatic waves finish at once; the
	// Manual wave waits for its approval with its variants as they were.
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout = waves })
	h.waitRollout(rollout.ReasonWaitingForApproval, "canary:Finished early:Finished rest:WaitingForApproval")
	h.expectCarried(map[string]string{v0: "r1", v1: "r1", v2: "r1", v3: "r1", v4: "r0", v5: "r0"})
	waveLabels := func(want map[string]string) {
		t.Helper()
		h.Eventually(fmt.Sprintf("wave labels %v", want), func() bool {
			got := map[string]string{}
			for name, pv := range h.Variants() {
				got[name] = pv.Labels[configv1alpha2.WaveLabel]
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		})
	}
	// Every variant carries its wave as a label from the moment the set
	// has a rollout, whether its wave opened or not.
	waveLabels(map[string]string{v0: "canary", v1: "canary", v2: "early", v3: "early", v4: "rest", v5: "rest"})
	canary, err := h.Client.ConfigV1alpha1().PackageVariants(testNS).List(h.Ctx, metav1.ListOptions{LabelSelector: configv1alpha2.WaveLabel + "=canary"})
	if err != nil || len(canary.Items) != 2 {
		t.Errorf("kubectl get packagevariants -l %s=canary: %d variants (%v), want 2", configv1alpha2.WaveLabel, len(canary.Items), err)
	}

	// Revision 2: the canary wave takes it; the Manual wave's variants,
	// which follow the latest revision in their spec, are held.
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	h.waitRollout(rollout.ReasonWaveProgressing, "canary:Progressing early:Pending rest:Pending")
	h.expectCarried(map[string]string{v0: "r2 *@2", v1: "r2 *@2", v2: "r1", v3: "r1", v4: "r0", v5: "r0"})
	for _, name := range []string{v4, v5} {
		c := meta.FindStatusCondition(h.Variant(name).Status.Conditions, packagevariant.ConditionUpgradeAvailable)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "PackageVariantSet edge rolls upstream changes out in waves") {
			t.Errorf("%s: UpgradeAvailable %+v, want True naming the set's rollout", name, c)
		}
	}

	// Wave by wave: once approved, the Manual wave is pinned to revision 2
	// and takes it, and the hold has nothing left to hold.
	h.publishOpen(v0, v1)
	h.waitRollout(rollout.ReasonWaveProgressing, "canary:Finished early:Progressing rest:Pending")
	h.expectCarried(map[string]string{v0: "r2", v1: "r2", v2: "r2 *@2", v3: "r2 *@2", v4: "r0", v5: "r0"})
	h.publishOpen(v2, v3)
	h.waitRollout(rollout.ReasonWaitingForApproval, "canary:Finished early:Finished rest:WaitingForApproval")
	h.expectCarried(map[string]string{v0: "r2", v1: "r2", v2: "r2", v3: "r2", v4: "r0", v5: "r0"})
	h.approve("rest")
	h.expectCarried(map[string]string{v0: "r2", v1: "r2", v2: "r2", v3: "r2", v4: "r2 *@2", v5: "r2 *@2"})
	h.publishOpen(v4, v5)
	h.waitRollout(rollout.ReasonRolledOut, "canary:Finished early:Finished rest:Finished")
	for _, name := range ringVariants {
		if c := meta.FindStatusCondition(h.Variant(name).Status.Conditions, packagevariant.ConditionUpgradeAvailable); c != nil {
			t.Errorf("%s: UpgradeAvailable %+v once rolled out, want none", name, c)
		}
	}

	// Without spec.rollout the wave labels go, and the variants follow
	// the latest revision again (no spec.upstream.revision), which they
	// carry already: nothing else changes.
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout = nil })
	waveLabels(map[string]string{v0: "", v1: "", v2: "", v3: "", v4: "", v5: ""})
	h.expectCarried(map[string]string{v0: "r0", v1: "r0", v2: "r0", v3: "r0", v4: "r0", v5: "r0"})
}
