package packagevariantset_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/test/kit"
)

// ringSet is a set over six prod repositories in three waves of two, by
// the repositories' ring label, which the template copies into the
// variants' labels: canary (edge-00, -01), early (edge-02, -03), then rest
// (edge-04, -05).
func ringSet() (map[string]map[string]string, *configv1alpha2.PackageVariantSet) {
	repos := fleet(6, "prod")
	for i, ring := range []string{"a", "a", "b", "b", "c", "c"} {
		repos[fmt.Sprintf("edge-%02d", i)]["ring"] = ring
	}
	tmpl := regionTemplate()
	tmpl.LabelExprs = append(tmpl.LabelExprs, configv1alpha2.MapExpr{Key: ptr.To("ring"), ValueExpr: ptr.To("repository.labels['ring']")})
	pvs := newSet("edge", configv1alpha2.Target{RepositorySelector: prodSelector(), Template: tmpl})
	ring := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
	}
	pvs.Spec.Rollout = &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
		{Name: "canary", Selector: ring("a")},
		{Name: "early", Selector: ring("b")},
		{Name: "rest"},
	}}
	return repos, pvs
}

// The variants of ringSet, one per repository edge-00 to edge-05.
const (
	v0, v1, v2, v3, v4, v5 = "edge-edge-00-app", "edge-edge-01-app", "edge-edge-02-app", "edge-edge-03-app", "edge-edge-04-app", "edge-edge-05-app"
)

var ringVariants = []string{v0, v1, v2, v3, v4, v5}

// startRing creates pvs over repos, waits for its variants and their first
// drafts, and publishes them.
func startRing(t *testing.T, repos map[string]map[string]string, pvs *configv1alpha2.PackageVariantSet) *harness {
	h := newHarness(t, repos)
	h.createAndPublish(pvs, ringVariants...)
	return h
}

// expectCarried waits until the variants carry want (as carried says; a
// "*" stands for the name of a draft not known in advance), then until the
// controllers are idle, and checks that nothing more changed: a variant
// opened too early, or a draft replaced or added, fails.
func (h *harness) expectCarried(want map[string]string) {
	h.T.Helper()
	match := func(got map[string]string) bool {
		if len(got) != len(want) {
			return false
		}
		for name, w := range want {
			g := got[name]
			pre, post, wild := strings.Cut(w, "*")
			if !wild && g != w || wild && (!strings.HasPrefix(g, pre) || !strings.HasSuffix(g, post) || strings.Contains(g[len(pre):len(g)-len(post)], " ")) {
				return false
			}
		}
		return true
	}
	var got map[string]string
	h.Eventually(fmt.Sprintf("variants carrying %v", want), func() bool { got = h.carried(); return match(got) })
	h.Settle()
	if got = h.carried(); !match(got) {
		h.T.Fatalf("variants carry %v once settled, want %v", got, want)
	}
}

// carried is, for every variant, what its spec carries and its open
// drafts: "r2" is spec.upstream.revision 2 with the first template, "r3+"
// revision 3 with the changed one (package context channel: stable); each
// open draft follows as " <name>@<upstream revision it is based on>", with
// "+" when its package context holds the changed template's entry.
func (h *harness) carried() map[string]string {
	h.T.Helper()
	out := map[string]string{}
	for name, pv := range h.Variants() {
		s := fmt.Sprintf("r%d", pv.Spec.Upstream.Revision)
		if pv.Spec.PackageContext != nil && pv.Spec.PackageContext.Data["channel"] == "stable" {
			s += "+"
		}
		for _, pr := range h.Revisions(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package) {
			if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
				continue
			}
			rev, _ := helper.LockedUpstreamRevision(&pr)
			s += fmt.Sprintf(" %s@%d", pr.Name, rev)
			if files, err := h.Sim.Resources(testNS, pr.Name); err == nil && strings.Contains(files["package-context.yaml"], "channel: stable") {
				s += "+"
			}
		}
		out[name] = s
	}
	return out
}

// TestRolloutChangeMidRollout: a change that arrives mid-rollout (another
// upstream revision, then a changed template) starts a new rollout, with a
// new id, from the first wave. The variants its waves have not reached
// keep what they have: their pinned revision, and an open draft stays as
// it is. Once the new rollout's wave opens a variant, the variant
// controller's usual rules apply to its open draft: based on an old
// upstream revision and unedited, it is replaced (deleted, and an upgrade
// of the variant's published revision made in its stead); on the current
// revision, the changed spec is applied to it in place.
func TestRolloutChangeMidRollout(t *testing.T) {
	repos, pvs := ringSet()
	h := startRing(t, repos, pvs)
	first := h.waitRollout(rollout.ReasonRolledOut, "canary:Finished early:Finished rest:Finished").Status.Rollout

	// draft is the name of the variant's open draft (there is one).
	draft := func(name string) string {
		t.Helper()
		pv := h.Variant(name)
		for _, pr := range h.Revisions(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package) {
			if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
				return pr.Name
			}
		}
		t.Fatalf("%s has no open draft", name)
		return ""
	}
	// rolloutIs checks the set's rollout: a new id, of upstream revision
	// rev, at wave current.
	seen := map[string]bool{first.ID: true}
	rolloutIs := func(st *configv1alpha2.RolloutStatus, rev int, current string) {
		t.Helper()
		if seen[st.ID] || st.UpstreamRevision != rev || st.CurrentWave != current {
			t.Fatalf("rollout %s (upstream revision %d, current wave %q), want a new one (not one of %v) of revision %d at wave %q",
				st.ID, st.UpstreamRevision, st.CurrentWave, seen, rev, current)
		}
		seen[st.ID] = true
		if len(h.EventsMatching(fmt.Sprintf("wave %q of rollout %s started", current, st.ID))) == 0 {
			t.Errorf("no %s event for wave %q of rollout %s", rollout.EventWaveStarted, current, st.ID)
		}
	}

	// Revision 2: the canary wave takes it, then the early one; one early
	// variant publishes, the other's draft stays open.
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 2, blueprint("v2\n")); err != nil {
		t.Fatal(err)
	}
	second := h.waitRollout(rollout.ReasonWaveProgressing, "canary:Progressing early:Pending rest:Pending").Status.Rollout
	rolloutIs(second, 2, "canary")
	h.expectCarried(map[string]string{v0: "r2 *@2", v1: "r2 *@2", v2: "r1", v3: "r1", v4: "r1", v5: "r1"})
	h.publishOpen(v0, v1)
	h.waitRollout(rollout.ReasonWaveProgressing, "canary:Finished early:Progressing rest:Pending")
	h.expectCarried(map[string]string{v0: "r2", v1: "r2", v2: "r2 *@2", v3: "r2 *@2", v4: "r1", v5: "r1"})
	h.publishOpen(v2)
	open2 := draft(v3)
	h.expectCarried(map[string]string{v0: "r2", v1: "r2", v2: "r2", v3: "r2 " + open2 + "@2", v4: "r1", v5: "r1"})

	// Revision 3 mid-rollout: a new rollout from the canary wave. The
	// early and rest variants stay as they are: edge-03 keeps its pin on 2
	// and its open revision-2 draft (its spec does not change, so the
	// variant controller has nothing to do with it), edge-04 and -05 stay
	// on 1 although revision 2 never reached them.
	if _, err := h.Sim.AddPublished(testNS, kit.UpstreamRepo, kit.UpstreamPackage, 3, blueprint("v3\n")); err != nil {
		t.Fatal(err)
	}
	third := h.waitRollout(rollout.ReasonWaveProgressing, "canary:Progressing early:Pending rest:Pending").Status.Rollout
	rolloutIs(third, 3, "canary")
	h.expectCarried(map[string]string{v0: "r3 *@3", v1: "r3 *@3", v2: "r2", v3: "r2 " + open2 + "@2", v4: "r1", v5: "r1"})
	if got := h.Files(open2)["README.md"]; got != "v2\n" {
		t.Errorf("the open draft %s of a wave not started yet changed: README %q", open2, got)
	}
	if len(h.EventsMatching("Draft "+open2+" was based on an old upstream")) != 0 {
		t.Errorf("the open draft %s was replaced before its wave started", open2)
	}

	// The canary publishes: the early wave starts. edge-02 (published 2)
	// gets an upgrade draft; edge-03's draft, made by the controller on
	// revision 2 and unedited, is replaced: deleted, and an upgrade of its
	// published revision 1 to 3 made instead (a draft cannot be upgraded
	// in place).
	h.publishOpen(v0, v1)
	h.waitRollout(rollout.ReasonWaveProgressing, "canary:Finished early:Progressing rest:Pending")
	h.expectCarried(map[string]string{v0: "r3", v1: "r3", v2: "r3 *@3", v3: "r3 *@3", v4: "r1", v5: "r1"})
	open3 := draft(v3)
	if open3 == open2 {
		t.Errorf("edge-03's revision-2 draft %s was kept on revision 3, want it replaced", open2)
	}
	if _, err := h.Sim.PackageRevision(testNS, open2); err == nil {
		t.Errorf("the replaced draft %s still exists", open2)
	}
	if len(h.EventsMatching("Replaced Draft "+open2+" was based on an old upstream and unedited")) == 0 {
		t.Errorf("no Replaced event for %s; events: %v", open2, h.EventsMatching("Replaced"))
	}
	if got := h.Files(open3)["README.md"]; got != "v3\n" {
		t.Errorf("the replacing draft %s: README %q, want v3", open3, got)
	}
	h.publishOpen(v2)
	h.expectCarried(map[string]string{v0: "r3", v1: "r3", v2: "r3", v3: "r3 " + open3 + "@3", v4: "r1", v5: "r1"})

	// A template change mid-rollout: a new rollout (same upstream
	// revision) from the canary wave again, which gets edit drafts; the
	// early wave waits, edge-03's open draft untouched.
	h.UpdateSetSpec("edge", func(s *configv1alpha2.PackageVariantSetSpec) {
		s.Targets[0].Template.PackageContext.Data = map[string]string{"channel": "stable"}
	})
	fourth := h.waitRollout(rollout.ReasonWaveProgressing, "canary:Progressing early:Pending rest:Pending").Status.Rollout
	rolloutIs(fourth, 3, "canary")
	h.expectCarried(map[string]string{v0: "r3+ *@3+", v1: "r3+ *@3+", v2: "r3", v3: "r3 " + open3 + "@3", v4: "r1", v5: "r1"})

	// Wave by wave to the end. edge-03's draft is on the current upstream
	// revision: the changed template is applied to it in place.
	h.publishOpen(v0, v1)
	h.waitRollout(rollout.ReasonWaveProgressing, "canary:Finished early:Progressing rest:Pending")
	h.expectCarried(map[string]string{v0: "r3+", v1: "r3+", v2: "r3+ *@3+", v3: "r3+ " + open3 + "@3+", v4: "r1", v5: "r1"})
	h.publishOpen(v2, v3)
	h.waitRollout(rollout.ReasonWaveProgressing, "canary:Finished early:Finished rest:Progressing")
	h.expectCarried(map[string]string{v0: "r3+", v1: "r3+", v2: "r3+", v3: "r3+", v4: "r3+ *@3+", v5: "r3+ *@3+"})
	if got := h.Files(draft(v4))["README.md"]; got != "v3\n" {
		t.Errorf("edge-04's upgrade from revision 1: README %q, want v3", got)
	}
	h.publishOpen(v4, v5)
	last := h.waitRollout(rollout.ReasonRolledOut, "canary:Finished early:Finished rest:Finished").Status.Rollout
	h.expectCarried(map[string]string{v0: "r3+", v1: "r3+", v2: "r3+", v3: "r3+", v4: "r3+", v5: "r3+"})
	if last.ID != fourth.ID || last.UpstreamRevision != 3 || last.Progress != "6/6" {
		t.Errorf("rollout at the end %+v, want %s of revision 3, 6/6", last, fourth.ID)
	}
	if len(h.EventsMatching(rollout.EventRolloutComplete+" rollout "+fourth.ID)) == 0 {
		t.Errorf("no %s event for rollout %s", rollout.EventRolloutComplete, fourth.ID)
	}
}
