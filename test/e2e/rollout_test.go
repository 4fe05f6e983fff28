//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// TestRolloutInWaves: a set of 6 variants in 3 waves (canary, one at a
// time; prod, Manual; the rest, half at a time) on the real API server.
// People publish drafts through Porch's API and approve the Manual wave
// with kubectl annotate; an upstream bump reaches the variants only as the
// waves advance, and kubectl wait --for=condition=RolledOut returns when
// the last wave is published.
func TestRolloutInWaves(t *testing.T) {
	forEachBackend(t, testRolloutInWaves)
}

func testRolloutInWaves(t *testing.T, b *backend) {
	ns := createNamespace(t, b.ns("e2e-rollout"))
	ctx := context.Background()
	v1 := publishUpstream(t, ns)
	tieredSites(t, ns, map[string]string{"edge-1": "canary", "edge-2": "prod", "edge-3": "prod", "edge-4": "rest", "edge-5": "rest", "edge-6": "rest"})
	ctrl := startController(t, "controller", ns)
	set := tieredSet(ns)
	set.Spec.Rollout = &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
		{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}, MaxConcurrent: ptr.To(intstr.FromInt32(1))},
		{Name: "prod", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}, Approval: configv1alpha2.WaveApprovalManual},
		{Name: "rest", MaxConcurrent: ptr.To(intstr.FromString("50%"))},
	}}
	createSet(t, ctx, set)
	eventually(t, ctrl, "6 Ready variants with one draft each (new targets are not held back)", func() (bool, string) {
		return fleetReady(ctx, ns, 6)
	})
	r := &rolloutRun{t: t, ctx: ctx, ns: ns, ctrl: ctrl}
	r.publishDrafts(r.open())
	r.waitPhases("canary:Finished prod:WaitingForApproval rest:Pending")
	r.approve("prod")
	r.waitRolledOut()

	// Revision 2: the bump goes wave by wave.
	publishRevision(t, ns, "blueprints", "app", "v2", editTask(v1), map[string]string{
		"deployment.yaml": appDeployment(2),
	}, false)
	r.step("edge-edge-1-app")
	r.waitPhases("canary:Finished prod:WaitingForApproval rest:Pending")
	out, err := env.kubectl.Run("get", "-n", ns, "packagevariantsets")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "WAVE", "ROLLED", "OUT")
	wantRow(t, out, "edge", "canary", "1/6")
	// Each variant's wave, and where it stands, by kubectl get.
	out, err = env.kubectl.Run("get", "-n", ns, "packagevariants", "-o", "wide", "-l", configv1alpha2.WaveLabel+"=canary")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "PUBLISHED", "WAVE")
	wantRow(t, out, "edge-edge-1-app", "canary", "Published")
	if rows := strings.Count(strings.TrimSpace(out), "\n"); rows != 1 {
		t.Errorf("kubectl get -l %s=canary lists %d variants, want 1:\n%s", configv1alpha2.WaveLabel, rows, out)
	}
	r.approve("prod")
	r.step("edge-edge-2-app", "edge-edge-3-app")
	r.step("edge-edge-4-app", "edge-edge-5-app")
	r.step("edge-edge-6-app")
	r.waitRolledOut()
	for name, rev := range r.pins() {
		if rev != 2 {
			t.Errorf("%s: spec.upstream.revision %d at the end, want 2", name, rev)
		}
	}
}

// tieredSites makes the deployment repositories of tiers (name: tier),
// labelled env: prod and their tier.
func tieredSites(t *testing.T, ns string, tiers map[string]string) {
	t.Helper()
	for repo, tier := range tiers {
		repository(t, ns, repo, true, map[string]string{"env": "prod", "tier": tier})
	}
}

// tieredSet is the set edge of blueprints/app over ns's env: prod
// repositories, each variant labelled with its repository's tier (what
// the waves select).
func tieredSet(ns string) *configv1alpha2.PackageVariantSet {
	return prodSet(ns, "edge", &configv1alpha2.PackageVariantTemplate{
		LabelExprs: []configv1alpha2.MapExpr{{Key: ptr.To("tier"), ValueExpr: ptr.To("repository.labels['tier']")}},
	})
}

// rolloutRun is a person working through a rollout.
type rolloutRun struct {
	t      *testing.T
	ctx    context.Context
	ns     string
	ctrl   *controller
	opened []string
}

// open are the variants whose downstream package has a Draft, sorted.
func (r *rolloutRun) open() []string {
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, pr := range prs.Items {
		if pr.Spec.RepositoryName != "blueprints" && pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
			out = append(out, fmt.Sprintf("edge-%s-%s", pr.Spec.RepositoryName, pr.Spec.PackageName))
		}
	}
	sort.Strings(out)
	return out
}

func (r *rolloutRun) pins() map[string]int {
	pvs, err := env.admin.ConfigV1alpha1().PackageVariants(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]int{}
	for _, pv := range pvs.Items {
		out[pv.Name] = pv.Spec.Upstream.Revision
	}
	return out
}

// publishDrafts publishes the drafts of the named variants once every
// variant is Ready (the controller has finished them).
func (r *rolloutRun) publishDrafts(variants []string) {
	r.t.Helper()
	eventually(r.t, r.ctrl, "every variant Ready", func() (bool, string) {
		pvs, err := env.admin.ConfigV1alpha1().PackageVariants(r.ns).List(r.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, pv := range pvs.Items {
			if c := meta.FindStatusCondition(pv.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != pv.Generation {
				return false, fmt.Sprintf("%s: %+v", pv.Name, c)
			}
		}
		return true, ""
	})
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(r.ns).List(r.ctx, metav1.ListOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	want := map[string]bool{}
	for _, v := range variants {
		want[v] = true
	}
	for _, pr := range prs.Items {
		if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft && want[fmt.Sprintf("edge-%s-%s", pr.Spec.RepositoryName, pr.Spec.PackageName)] {
			publish(r.t, r.ns, pr.Name)
		}
	}
}

// step waits until exactly the variants opened so far carry revision 2
// and exactly the newly opened ones have a draft, then publishes those.
func (r *rolloutRun) step(open ...string) {
	r.t.Helper()
	r.opened = append(r.opened, open...)
	sort.Strings(r.opened)
	eventually(r.t, r.ctrl, fmt.Sprintf("drafts of %v, and revision 2 in %v", open, r.opened), func() (bool, string) {
		var upgraded []string
		for name, rev := range r.pins() {
			if rev == 2 {
				upgraded = append(upgraded, name)
			}
		}
		sort.Strings(upgraded)
		got := r.open()
		return fmt.Sprint(got) == fmt.Sprint(open) && fmt.Sprint(upgraded) == fmt.Sprint(r.opened),
			fmt.Sprintf("drafts of %v; on revision 2: %v", got, upgraded)
	})
	r.publishDrafts(open)
}

// waitPhases waits for the waves' phases ("canary:Finished prod:...").
func (r *rolloutRun) waitPhases(phases string) {
	r.t.Helper()
	eventually(r.t, r.ctrl, "waves "+phases, func() (bool, string) {
		pvs, err := env.admin.ConfigV1alpha2().PackageVariantSets(r.ns).Get(r.ctx, "edge", metav1.GetOptions{})
		if err != nil || pvs.Status.Rollout == nil {
			return false, fmt.Sprintf("%v %+v", err, pvs)
		}
		var got []string
		for _, w := range pvs.Status.Rollout.Waves {
			got = append(got, w.Name+":"+string(w.Phase))
		}
		return strings.Join(got, " ") == phases, fmt.Sprintf("%v; %+v", got, meta.FindStatusCondition(pvs.Status.Conditions, "RolledOut"))
	})
}

// approve approves a Manual wave of the current rollout, as the RolledOut
// message says to.
func (r *rolloutRun) approve(wave string) {
	r.t.Helper()
	pvs, err := env.admin.ConfigV1alpha2().PackageVariantSets(r.ns).Get(r.ctx, "edge", metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	value := fmt.Sprintf("%s=%s@%s", configv1alpha2.ApproveWaveAnnotation, wave, pvs.Status.Rollout.ID)
	if cond := meta.FindStatusCondition(pvs.Status.Conditions, "RolledOut"); cond == nil || !strings.Contains(cond.Message, value) {
		r.t.Errorf("RolledOut does not say how to approve (%s): %+v", value, cond)
	}
	// A person approves with variantctl rollout approve, which writes the
	// annotation for the current rollout id and records who approved.
	cmd := exec.Command(filepath.Join(env.bin, "variantctl"), "rollout", "approve", "edge", wave, "-n", r.ns, "--kubeconfig", env.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("variantctl rollout approve: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("approved wave %s of rollout %s", wave, pvs.Status.Rollout.ID)) {
		r.t.Errorf("variantctl rollout approve printed %q", out)
	}
	after, err := env.admin.ConfigV1alpha2().PackageVariantSets(r.ns).Get(r.ctx, "edge", metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	if got, want := after.Annotations[configv1alpha2.ApproveWaveAnnotation], wave+"@"+pvs.Status.Rollout.ID; got != want {
		r.t.Errorf("approval annotation %q, want %q", got, want)
	}
	events, err := env.kube.CoreV1().Events(r.ns).List(r.ctx, metav1.ListOptions{FieldSelector: "reason=WaveApproved"})
	if err != nil {
		r.t.Fatal(err)
	}
	var recorded bool
	for _, e := range events.Items {
		recorded = recorded || e.InvolvedObject.UID == pvs.UID && strings.Contains(e.Message, "wave "+wave+" of rollout "+pvs.Status.Rollout.ID+" approved by ")
	}
	if !recorded {
		r.t.Errorf("no WaveApproved Event on the set names who approved wave %s: %+v", wave, events.Items)
	}
}

// waitRolledOut is kubectl wait --for=condition=RolledOut.
func (r *rolloutRun) waitRolledOut() {
	r.t.Helper()
	if out, err := env.kubectl.Run("wait", "-n", r.ns, "--for=condition=RolledOut", "--timeout=120s", "packagevariantset/edge"); err != nil {
		r.t.Fatalf("kubectl wait RolledOut: %v\n%s\n%s", err, out, r.ctrl.Tail())
	}
}

// TestRolloutAdoptedByALiveSet: a live set whose variants follow the
// latest blueprint revision gets spec.rollout (the canary, then a Manual
// wave). A new blueprint revision then reaches the canary only: the Manual
// wave's variants get no draft, and say that the set's rollout holds their
// upgrade, until variantctl rollout approve opens their wave.
func TestRolloutAdoptedByALiveSet(t *testing.T) {
	forEachBackend(t, testRolloutAdopted)
}

func testRolloutAdopted(t *testing.T, b *backend) {
	ns := createNamespace(t, b.ns("e2e-adopt"))
	ctx := context.Background()
	v1 := publishUpstream(t, ns)
	tieredSites(t, ns, map[string]string{"edge-1": "canary", "edge-2": "rest", "edge-3": "rest"})
	ctrl := startController(t, "controller", ns)
	createSet(t, ctx, tieredSet(ns))
	eventually(t, ctrl, "3 Ready variants with one draft each", func() (bool, string) { return fleetReady(ctx, ns, 3) })
	r := &rolloutRun{t: t, ctx: ctx, ns: ns, ctrl: ctrl}
	r.publishDrafts(r.open())
	eventually(t, ctrl, "no draft left", func() (bool, string) { open := r.open(); return len(open) == 0, fmt.Sprint(open) })

	// The live set adopts a rollout.
	patch := `{"spec":{"rollout":{"waves":[{"name":"canary","selector":{"matchLabels":{"tier":"canary"}}},{"name":"rest","approval":"Manual"}]}}}`
	if out, err := env.kubectl.Run("patch", "-n", ns, "packagevariantset", "edge", "--type=merge", "-p", patch); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	r.waitPhases("canary:Finished rest:WaitingForApproval")

	// A new blueprint revision: only the canary gets its draft.
	publishRevision(t, ns, "blueprints", "app", "v2", editTask(v1), map[string]string{
		"deployment.yaml": appDeployment(2),
	}, false)
	eventually(t, ctrl, "the canary's upgrade draft, and the rest wave's upgrades held by the set", func() (bool, string) {
		open := r.open()
		if fmt.Sprint(open) != "[edge-edge-1-app]" {
			return false, fmt.Sprintf("drafts of %v", open)
		}
		for _, name := range []string{"edge-edge-2-app", "edge-edge-3-app"} {
			pv, err := env.admin.ConfigV1alpha1().PackageVariants(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(pv.Status.Conditions, "UpgradeAvailable")
			if c == nil || !strings.Contains(c.Message, "PackageVariantSet edge rolls upstream changes out in waves") {
				return false, fmt.Sprintf("%s: UpgradeAvailable %+v", name, c)
			}
		}
		return true, ""
	})
	r.publishDrafts([]string{"edge-edge-1-app"})
	r.waitPhases("canary:Finished rest:WaitingForApproval")
	if open := r.open(); len(open) != 0 {
		t.Errorf("drafts of %v before the rest wave is approved", open)
	}
	r.approve("rest")
	r.opened = []string{"edge-edge-1-app"}
	r.step("edge-edge-2-app", "edge-edge-3-app")
	r.waitRolledOut()
}
