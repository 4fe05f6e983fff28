package packagevariantset_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit"
)

// rolloutSet is a set over the prod repositories of fleet(6, "prod") in two
// waves: eu (edge-00, -02, -04), one variant at a time, then us (edge-01,
// -03, -05), Manual, half of it at a time.
func rolloutSet() *configv1alpha2.PackageVariantSet {
	pvs := newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()})
	pvs.Spec.Rollout = &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
		{Name: "eu", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, MaxConcurrent: ptr.To(intstr.FromInt32(1))},
		{Name: "us", MaxConcurrent: ptr.To(intstr.FromString("50%")), Approval: configv1alpha2.WaveApprovalManual},
	}}
	return pvs
}

// pins are the spec.upstream.revision of every variant, by name.
func (h *harness) pins() map[string]int {
	out := map[string]int{}
	for name, pv := range h.Variants() {
		out[name] = pv.Spec.Upstream.Revision
	}
	return out
}

// publishOpen publishes, as a person would, every Draft of the downstream
// package of each named variant, and returns their names.
func (h *harness) publishOpen(variants ...string) []string {
	h.T.Helper()
	var published []string
	for _, name := range variants {
		pv := h.Variant(name)
		for _, pr := range h.Revisions(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package) {
			if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
				continue
			}
			if err := h.Sim.Publish(testNS, pr.Name); err != nil {
				h.T.Fatalf("publish %s: %v", pr.Name, err)
			}
			published = append(published, pr.Name)
		}
	}
	return published
}

// waitOpen waits until exactly the named variants have an open draft.
func (h *harness) waitOpen(want ...string) {
	h.T.Helper()
	h.WaitList("variants with a draft", func() []string {
		var out []string
		for name, pv := range h.Variants() {
			for _, pr := range h.Revisions(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package) {
				if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
					out = append(out, name)
					break
				}
			}
		}
		return out
	}, want...)
}

// waitRollout waits for the set's RolledOut condition with reason, and
// the waves' phases ("eu:Finished us:Progressing").
func (h *harness) waitRollout(reason, phases string) *configv1alpha2.PackageVariantSet {
	h.T.Helper()
	h.Eventually(fmt.Sprintf("RolledOut reason %s, waves %s", reason, phases), func() bool {
		pvs := h.Set("edge")
		cond := meta.FindStatusCondition(pvs.Status.Conditions, rollout.ConditionRolledOut)
		if cond == nil || pvs.Status.Rollout == nil {
			return false
		}
		var ph []string
		for _, w := range pvs.Status.Rollout.Waves {
			ph = append(ph, w.Name+":"+string(w.Phase))
		}
		return cond.Reason == reason && strings.Join(ph, " ") == phases && cond.ObservedGeneration == pvs.Generation
	})
	return h.Set("edge")
}

func (h *harness) approve(wave string) {
	h.T.Helper()
	id := h.Set("edge").Status.Rollout.ID
	h.UpdateSet("edge", func(pvs *configv1alpha2.PackageVariantSet) {
		kit.Annotate(pvs, configv1alpha2.ApproveWaveAnnotation, wave+"@"+id)
	})
}

// TestRolloutInWaves: a set with spec.rollout creates every variant at once
// (new targets are never held back); an upstream bump then reaches the
// variants wave by wave, one eu variant at a time, the Manual us wave only
// once approved (an approval of the earlier rollout approves nothing), half
// of it at a time, each next variant only as people publish; RolledOut is
// True at the end, with the events of each step.
func TestRolloutInWaves(t *testing.T) {
	h := newHarness(t, fleet(6, "prod"))
	h.CreateSet(rolloutSet())
	all := []string{"edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app", "edge-edge-03-app", "edge-edge-04-app", "edge-edge-05-app"}
	h.waitVariants(all...)
	h.waitOpen(all...)
	for name, rev := range h.pins() {
		if rev != 1 {
			t.Errorf("%s: spec.upstream.revision %d, want the resolved revision 1 pinned", name, rev)
		}
	}
	// People publish a draft once the controller has finished it.
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen(all...)
	first := h.waitRollout(rollout.ReasonWaitingForApproval, "eu:Finished us:WaitingForApproval")
	h.approve("us")
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")
	h.Settle()

	// Revision 2 of the blueprint: a new rollout.
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	st := h.waitRollout(rollout.ReasonWaveProgressing, "eu:Progressing us:Pending")
	if st.Status.Rollout.ID == first.Status.Rollout.ID || st.Status.Rollout.UpstreamRevision != 2 {
		t.Errorf("rollout %+v, want a new one of revision 2", st.Status.Rollout)
	}
	// Each step: exactly the variants opened so far carry revision 2, and
	// only the newly opened have a draft; people publish those.
	var opened []string
	step := func(open ...string) {
		t.Helper()
		h.waitOpen(open...)
		h.Settle()
		opened = append(opened, open...)
		sort.Strings(opened)
		var upgraded []string
		for name, rev := range h.pins() {
			if rev == 2 {
				upgraded = append(upgraded, name)
			}
		}
		sort.Strings(upgraded)
		if fmt.Sprint(upgraded) != fmt.Sprint(opened) {
			t.Errorf("on revision 2: %v, want those opened so far: %v", upgraded, opened)
		}
		h.publishOpen(open...)
	}
	step("edge-edge-00-app")
	step("edge-edge-02-app")
	step("edge-edge-04-app")
	h.waitRollout(rollout.ReasonWaitingForApproval, "eu:Finished us:WaitingForApproval")
	h.Settle()
	for _, name := range []string{"edge-edge-01-app", "edge-edge-03-app", "edge-edge-05-app"} {
		if rev := h.pins()[name]; rev != 1 {
			t.Errorf("%s: revision %d before its wave was approved, want 1", name, rev)
		}
	}
	h.approve("us")
	step("edge-edge-01-app", "edge-edge-03-app")
	step("edge-edge-05-app")
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")
	for name, rev := range h.pins() {
		if rev != 2 {
			t.Errorf("%s: revision %d at the end, want 2", name, rev)
		}
	}
	for _, reason := range []string{rollout.EventWaveStarted, rollout.EventWaveFinished, rollout.EventRolloutComplete} {
		if len(h.EventsMatching(reason)) == 0 {
			t.Errorf("no %s event", reason)
		}
	}
	pv := h.Variant("edge-edge-00-app")
	if cond := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ConditionPublished); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("Published of a published variant: %+v", cond)
	}
}

// oneWaveSet is set edge over the prod repositories with one wave, all,
// of maxConcurrent variants at a time.
func oneWaveSet(maxConcurrent int32) *configv1alpha2.PackageVariantSet {
	pvs := newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()})
	pvs.Spec.Rollout = &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{{Name: "all", MaxConcurrent: ptr.To(intstr.FromInt32(maxConcurrent))}}}
	return pvs
}

// createAndPublish creates pvs, waits for its variants all and their first
// drafts, and publishes them once the controllers are done with them.
func (h *harness) createAndPublish(pvs *configv1alpha2.PackageVariantSet, all ...string) {
	h.T.Helper()
	h.CreateSet(pvs)
	h.waitVariants(all...)
	h.waitOpen(all...)
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen(all...)
}

// bumpAfterFirstRollout publishes every variant's first draft (the set's
// creation), waits for the first rollout (of one wave, "all") to end, and
// bumps the blueprint to revision 2 (files: blueprint("v2\n") when nil).
func (h *harness) bumpAfterFirstRollout(files map[string]string, all ...string) {
	h.T.Helper()
	h.waitOpen(all...)
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen(all...)
	h.waitRollout(rollout.ReasonRolledOut, "all:Finished")
	h.Settle()
	if files == nil {
		files = blueprint("v2\n")
	}
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, files); err != nil {
		h.T.Fatal(err)
	}
}

// TestRolloutPauseAndNewTargets: spec.rollout.paused opens nothing more
// (the open variant stays open), creates no variant for a new repository
// and deletes none of a relabelled one, and says so; the paused annotation
// on the set makes the controller write nothing and says so; unpaused, the
// new repository gets its variant at once, on the new revision; on a
// variant, the annotation keeps the variant's downstream as it is.
func TestRolloutPauseAndNewTargets(t *testing.T) {
	h := newHarness(t, fleet(3, "prod"))
	h.CreateSet(oneWaveSet(1))
	all := []string{"edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app"}
	h.waitVariants(all...)
	h.bumpAfterFirstRollout(nil, all...)
	h.waitOpen("edge-edge-00-app")
	h.Settle()

	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout.Paused = true })
	h.waitRollout(rollout.ReasonPaused, "all:Progressing")
	h.publishOpen("edge-edge-00-app")
	h.Settle()
	if got := h.pins(); got["edge-edge-01-app"] != 1 || got["edge-edge-02-app"] != 1 {
		t.Errorf("a paused rollout opened more variants: %v", got)
	}

	// A paused rollout writes nothing new: a new target gets no variant,
	// a vanished one keeps its variant, and RolledOut says so.
	h.Sim.AddRepository(testNS, "edge-07", true, repoLabels("prod", "us"))
	h.Sim.AddRepository(testNS, "edge-02", true, repoLabels("dev", "eu"))
	h.Eventually("RolledOut to name the held create and delete", func() bool {
		cond := meta.FindStatusCondition(h.Set("edge").Status.Conditions, rollout.ConditionRolledOut)
		return cond != nil && strings.Contains(cond.Message, "while paused, 1 variants of new targets are not created and 1 variants of vanished targets are not deleted")
	})
	h.Settle()
	h.waitVariants(all...)

	// Paused by annotation: nothing is written, even once spec.rollout is
	// not paused; the condition says so.
	h.UpdateSet("edge", func(pvs *configv1alpha2.PackageVariantSet) {
		kit.Annotate(pvs, configv1alpha1.PausedAnnotation, "true")
	})
	h.WaitSetCondition("edge", "Paused", metav1.ConditionTrue, configv1alpha1.ReasonPaused)
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout.Paused = false })
	h.Settle()
	h.waitVariants(all...)

	// Unpaused, the rollout goes on: the new target's variant is created
	// at once on revision 2, the vanished one's deleted; the new variant's
	// draft counts against maxConcurrent like any open change.
	h.UpdateSet("edge", func(pvs *configv1alpha2.PackageVariantSet) {
		kit.Annotate(pvs, configv1alpha1.PausedAnnotation, "")
	})
	h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-07-app")
	h.Eventually("Paused to go with the annotation", func() bool {
		return meta.FindStatusCondition(h.Set("edge").Status.Conditions, "Paused") == nil
	})
	h.Eventually("the new variant on revision 2", func() bool { return h.pins()["edge-edge-07-app"] == 2 })
	h.waitOpen("edge-edge-07-app")
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen("edge-edge-07-app")
	h.waitOpen("edge-edge-01-app")
	h.Settle()
	h.publishOpen("edge-edge-01-app")
	h.waitRollout(rollout.ReasonRolledOut, "all:Finished")

	// A paused variant: its downstream stays as it is.
	h.UpdateVariant("edge-edge-01-app", func(pv *configv1alpha1.PackageVariant) {
		kit.Annotate(pv, configv1alpha1.PausedAnnotation, "true")
	})
	h.WaitVariantCondition("edge-edge-01-app", "Paused", metav1.ConditionTrue, configv1alpha1.ReasonPaused)
	before := kit.Summary(h.Revisions("edge-01", "app"))
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 3, blueprint("v3\n")); err != nil {
		t.Fatal(err)
	}
	h.waitOpen("edge-edge-00-app")
	h.Settle()
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout.Waves[0].MaxConcurrent = nil })
	h.Eventually("every variant pinned to revision 3", func() bool {
		for _, rev := range h.pins() {
			if rev != 3 {
				return false
			}
		}
		return true
	})
	h.Settle()
	if after := kit.Summary(h.Revisions("edge-01", "app")); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a paused variant's downstream changed: %v, was %v", after, before)
	}
}

// TestRolloutHaltsOnFailure: a variant Porch refuses (Stalled, Refused)
// halts a rollout that tolerates no failure: nothing more is opened, and a
// Warning says so; raising maxFailures lets the wave go on, and once the
// refusal is mended and the variant published, the rollout completes.
func TestRolloutHaltsOnFailure(t *testing.T) {
	h := newHarness(t, fleet(3, "prod"))
	h.CreateSet(oneWaveSet(2))
	all := []string{"edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app"}
	h.waitVariants(all...)
	h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions", Name: "edge-00.app.packagevariant-2",
		Err: apierrors.NewForbidden(porchv1alpha1.Resource("packagerevisions"), "edge-00.app.packagevariant-2", errors.New("the repository is read-only"))})
	h.bumpAfterFirstRollout(nil, all...)

	h.waitRollout(rollout.ReasonHalted, "all:Halted")
	h.WaitVariantCondition("edge-edge-00-app", "Stalled", metav1.ConditionTrue, configv1alpha1.ReasonRefused)
	h.waitOpen("edge-edge-01-app")
	h.WaitVariantCondition("edge-edge-01-app", "Ready", metav1.ConditionTrue, "NoErrors")
	h.Settle()
	h.publishOpen("edge-edge-01-app")
	h.Settle()
	if rev := h.pins()["edge-edge-02-app"]; rev != 1 {
		t.Errorf("a halted rollout opened edge-edge-02-app (revision %d)", rev)
	}
	if len(h.EventsMatching(rollout.EventRolloutHalted)) == 0 {
		t.Errorf("no %s event", rollout.EventRolloutHalted)
	}

	// One failure tolerated: the wave goes on beside it.
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout.MaxFailures = ptr.To(int32(1)) })
	h.waitOpen("edge-edge-02-app")
	h.WaitVariantCondition("edge-edge-02-app", "Ready", metav1.ConditionTrue, "NoErrors")
	h.Settle()
	h.publishOpen("edge-edge-02-app")
	// Mended: the variant makes its draft once it is touched.
	h.Sim.ClearFaults()
	h.UpdateVariant("edge-edge-00-app", func(pv *configv1alpha1.PackageVariant) { kit.Annotate(pv, "example.com/retry", "1") })
	h.waitOpen("edge-edge-00-app")
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen("edge-edge-00-app")
	h.waitRollout(rollout.ReasonRolledOut, "all:Finished")
}

// TestRolloutFailsAVariantBlockedPastTheDeadline: revision 2 of the
// blueprint asks for a ConfigMap nobody has, so the first variant's draft
// has a readiness gate that stays False: the variant says so
// (Published=False, ReadinessGatesNotMet), the set waits for it, names it,
// and once progressDeadlineSeconds pass it has failed: over maxFailures the
// rollout halts; with one failure allowed, its slot goes to the next
// variant.
func TestRolloutFailsAVariantBlockedPastTheDeadline(t *testing.T) {
	h := newHarness(t, fleet(2, "prod"))
	c := &clock{now: time.Now()} // the variants' conditions carry the real time
	h.set.SetClock(c.Now)
	pvs := oneWaveSet(1)
	pvs.Spec.Rollout.ProgressDeadlineSeconds = ptr.To(int32(3600))
	h.CreateSet(pvs)
	all := []string{"edge-edge-00-app", "edge-edge-01-app"}
	h.waitVariants(all...)
	gated := blueprint("v2\n")
	gated["env.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: env\n  annotations:\n    kpt.dev/config-injection: required\n"
	h.bumpAfterFirstRollout(gated, all...)

	h.waitOpen("edge-edge-00-app")
	h.WaitVariantCondition("edge-edge-00-app", configv1alpha1.ConditionPublished, metav1.ConditionFalse, configv1alpha1.ReasonReadinessGatesNotMet)
	h.waitRollout(rollout.ReasonWaveProgressing, "all:Progressing")
	h.Eventually("RolledOut names the blocked variant", func() bool {
		cond := meta.FindStatusCondition(h.Set("edge").Status.Conditions, rollout.ConditionRolledOut)
		return strings.Contains(cond.Message, "1 blocked (edge-edge-00-app (ReadinessGatesNotMet))")
	})

	c.Add(61 * time.Minute)
	h.resync("edge")
	st := h.waitRollout(rollout.ReasonHalted, "all:Halted")
	if cond := meta.FindStatusCondition(st.Status.Conditions, rollout.ConditionRolledOut); !strings.Contains(cond.Message, "edge-edge-00-app (ReadinessGatesNotMet for more than spec.rollout.progressDeadlineSeconds (3600))") {
		t.Errorf("RolledOut message %q does not say the blocked variant failed", cond.Message)
	}
	if rev := h.pins()["edge-edge-01-app"]; rev != 1 {
		t.Errorf("a halted rollout opened edge-edge-01-app (revision %d)", rev)
	}

	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) { s.Rollout.MaxFailures = ptr.To(int32(1)) })
	h.waitOpen("edge-edge-00-app", "edge-edge-01-app")
}

// TestRolloutSkipAndResume: a refused variant halts a rollout that
// tolerates no failure; skipping it (for this rollout) lets the wave go
// on without it; in the next rollout it counts again, and resuming the
// halted wave lets the wave finish beside its failure.
func TestRolloutSkipAndResume(t *testing.T) {
	h := newHarness(t, fleet(3, "prod"))
	h.CreateSet(oneWaveSet(2))
	all := []string{"edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app"}
	h.waitVariants(all...)
	refuse := func(name string) {
		h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions", Name: name,
			Err: apierrors.NewForbidden(porchv1alpha1.Resource("packagerevisions"), name, errors.New("the repository is read-only"))})
	}
	refuse("edge-00.app.packagevariant-2")
	h.bumpAfterFirstRollout(nil, all...)
	h.waitRollout(rollout.ReasonHalted, "all:Halted")
	h.waitOpen("edge-edge-01-app")
	annotate := func(key, value string) {
		h.UpdateSet("edge", func(pvs *configv1alpha2.PackageVariantSet) { kit.Annotate(pvs, key, value) })
	}
	id := h.Set("edge").Status.Rollout.ID
	annotate(configv1alpha2.SkipVariantsAnnotation, "edge-edge-00-app@"+id)
	h.waitOpen("edge-edge-01-app", "edge-edge-02-app")
	h.WaitVariantCondition("edge-edge-02-app", "Ready", metav1.ConditionTrue, "NoErrors")
	h.Settle()
	h.publishOpen("edge-edge-01-app", "edge-edge-02-app")
	st := h.waitRollout(rollout.ReasonRolledOut, "all:Finished")
	if w := st.Status.Rollout.Waves[0]; w.Skipped != 1 || w.Finished != 2 || w.Failed != 0 {
		t.Errorf("wave all: %d skipped, %d finished, %d failed; want 1, 2, 0", w.Skipped, w.Finished, w.Failed)
	}

	// Revision 3 is a new rollout: the skip of the last one skips nothing.
	h.Settle()
	refuse("edge-00.app.packagevariant-3")
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 3, blueprint("v3\n")); err != nil {
		t.Fatal(err)
	}
	st = h.waitRollout(rollout.ReasonHalted, "all:Halted")
	if cond := meta.FindStatusCondition(st.Status.Conditions, rollout.ConditionRolledOut); !strings.Contains(cond.Message, "skips nothing: it names rollout "+id) {
		t.Errorf("RolledOut message %q does not say the old skip skips nothing", cond.Message)
	}
	annotate(configv1alpha2.ResumeWaveAnnotation, "all@"+st.Status.Rollout.ID)
	h.waitOpen("edge-edge-01-app", "edge-edge-02-app")
	h.WaitVariantCondition("edge-edge-02-app", "Ready", metav1.ConditionTrue, "NoErrors")
	h.Settle()
	h.publishOpen("edge-edge-01-app", "edge-edge-02-app")
	st = h.waitRollout(rollout.ReasonRolledOut, "all:Finished")
	if w := st.Status.Rollout.Waves[0]; !w.Resumed || w.Failed != 1 || w.Finished != 2 {
		t.Errorf("wave all: resumed %v, %d failed, %d finished; want true, 1, 2", w.Resumed, w.Failed, w.Finished)
	}
	if len(h.EventsMatching(rollout.EventWaveResumed)) == 0 {
		t.Errorf("no %s event", rollout.EventWaveResumed)
	}
}

// TestRolloutWavesOverRepositoryLabels: a wave can select variants by
// their downstream Repository's labels; a variant no wave takes gets no
// wave label, is held on its revision and listed, and the rollout is not
// done while it is; a catch-all wave added later takes it.
func TestRolloutWavesOverRepositoryLabels(t *testing.T) {
	h := newHarness(t, fleet(4, "prod"))
	pvs := newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector()}) // no template: the variants have no labels
	pvs.Spec.Rollout = &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
		{Name: "eu", RepositorySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
	}}
	h.CreateSet(pvs)
	all := []string{"edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app", "edge-edge-03-app"}
	eu, us := []string{"edge-edge-00-app", "edge-edge-02-app"}, []string{"edge-edge-01-app", "edge-edge-03-app"}
	h.waitVariants(all...)
	h.waitOpen(all...) // creates are never held
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen(all...)
	h.Settle()
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	h.waitOpen(eu...)
	h.WaitVariantCondition("edge-edge-02-app", "Ready", metav1.ConditionTrue, "NoErrors")
	h.Settle()
	h.publishOpen(eu...)
	st := h.waitRollout(rollout.ReasonVariantsWithoutWave, "eu:Finished")
	if r := st.Status.Rollout; r.Unassigned != 2 || strings.Join(r.UnassignedVariants, " ") != strings.Join(us, " ") {
		t.Errorf("unassigned %d %v, want 2 %v", r.Unassigned, r.UnassignedVariants, us)
	}
	pins := h.pins()
	for _, name := range all {
		wave, want := h.Variant(name).Labels[configv1alpha2.WaveLabel], "eu"
		if slices.Contains(us, name) {
			want = ""
			if pins[name] != 1 {
				t.Errorf("%s, in no wave, moved to revision %d", name, pins[name])
			}
		}
		if wave != want {
			t.Errorf("%s has wave label %q, want %q", name, wave, want)
		}
	}
	if len(h.EventsMatching(rollout.EventVariantsWithoutWave)) == 0 {
		t.Errorf("no %s event", rollout.EventVariantsWithoutWave)
	}

	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) {
		s.Rollout.Waves = append(s.Rollout.Waves, configv1alpha2.Wave{Name: "rest"})
	})
	h.waitOpen(us...)
	h.WaitAllVariantsReady()
	h.Settle()
	h.publishOpen(us...)
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished rest:Finished")
}

// TestRolloutCreatesInWaves: with spec.rollout.creates: InWaves, a new
// set whose first wave is Manual creates no variant until the wave is
// approved, then creates them as its wave opens them, one at a time, and
// the next wave's only once the first has published.
func TestRolloutCreatesInWaves(t *testing.T) {
	h := newHarness(t, fleet(4, "prod"))
	pvs := rolloutSet()
	pvs.Spec.Rollout.Waves[0].Approval = configv1alpha2.WaveApprovalManual
	pvs.Spec.Rollout.Waves[1].Approval = ""
	pvs.Spec.Rollout.Creates = configv1alpha2.RolloutCreatesInWaves
	h.CreateSet(pvs)
	st := h.waitRollout(rollout.ReasonWaitingForApproval, "eu:WaitingForApproval us:Pending")
	if st.Status.Rollout.Progress != "0/4" {
		t.Errorf("progress %q, want 0/4", st.Status.Rollout.Progress)
	}
	h.Settle()
	h.waitVariants()

	h.approve("eu")
	for _, step := range [][]string{{"edge-edge-00-app"}, {"edge-edge-02-app"}, {"edge-edge-01-app"}, {"edge-edge-03-app"}} {
		h.waitOpen(step...)
		for _, name := range step {
			h.WaitVariantCondition(name, "Ready", metav1.ConditionTrue, "NoErrors")
		}
		h.Settle()
		h.publishOpen(step...)
	}
	h.waitVariants("edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app", "edge-edge-03-app")
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")
}

// clock is a test's time, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRolloutSoakAndDeadline: after a wave finishes, the next waits for
// the soak time (RolledOut says Soaking, until when); a wave not finished
// within progressDeadlineSeconds is reported (reason and a Warning) and
// keeps going.
func TestRolloutSoakAndDeadline(t *testing.T) {
	h := newHarness(t, fleet(2, "prod"))
	c := &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	h.set.SetClock(c.Now)
	pvs := newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: regionTemplate()})
	pvs.Spec.Rollout = &configv1alpha2.Rollout{
		Waves: []configv1alpha2.Wave{
			{Name: "eu", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
			{Name: "us"},
		},
		SoakSeconds:             ptr.To(int32(600)),
		ProgressDeadlineSeconds: ptr.To(int32(3600)),
	}
	all := []string{"edge-edge-00-app", "edge-edge-01-app"}
	h.createAndPublish(pvs, all...)
	st := h.waitRollout(rollout.ReasonSoaking, "eu:Soaking us:Pending")
	if cond := meta.FindStatusCondition(st.Status.Conditions, rollout.ConditionRolledOut); !strings.Contains(cond.Message, "soaking until 2026-11-26T12:10:00Z") {
		t.Errorf("RolledOut message %q does not say until when it soaks", cond.Message)
	}
	c.Add(10 * time.Minute)
	h.resync("edge")
	h.waitRollout(rollout.ReasonRolledOut, "eu:Finished us:Finished")
	h.Settle()

	// Revision 2: the eu wave opens and nobody publishes for an hour.
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	h.waitOpen("edge-edge-00-app")
	h.waitRollout(rollout.ReasonWaveProgressing, "eu:Progressing us:Pending")
	c.Add(61 * time.Minute)
	h.resync("edge")
	h.waitRollout(rollout.ReasonProgressDeadlineExceeded, "eu:Progressing us:Pending")
	if len(h.EventsMatching(rollout.EventProgressDeadlineExceeded)) == 0 {
		t.Errorf("no %s event", rollout.EventProgressDeadlineExceeded)
	}
	// It keeps going: published, the wave finishes and soaks.
	h.Settle()
	h.publishOpen("edge-edge-00-app")
	h.waitRollout(rollout.ReasonSoaking, "eu:Soaking us:Pending")
}
