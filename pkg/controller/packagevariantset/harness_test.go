package packagevariantset_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// The integration tests run both controllers, as the binary does (built
// by controllers.Build), through pkg/offline against porchsim;
// objectSelector kinds come from offline's fake cluster.

const (
	testNS      = "fleet"
	waitTimeout = 30 * time.Second
	pollEvery   = 5 * time.Millisecond
)

func blueprint(readme string) map[string]string {
	return map[string]string{
		"Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"README.md": readme,
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
`,
	}
}

func ptr[T any](v T) *T { return &v }

type harness struct {
	t      *testing.T
	ctx    context.Context
	sim    *porchsim.Sim
	client versioned.Interface
	run    *offline.Runner
	set    *packagevariantset.Controller
}

// newHarness starts a Sim with blueprints/app revision 1 and the given
// deployment repositories (name -> labels), then both controllers.
func newHarness(t *testing.T, repos map[string]map[string]string, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	return newHarnessWithSim(t, repos, nil, objects...)
}

// newHarnessWithSim is newHarness with setup run on the Sim before the
// controllers start (reactors must be in place before anything reads the
// clientset).
func newHarnessWithSim(t *testing.T, repos map[string]map[string]string, setup func(*porchsim.Sim), objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	return startHarness(t, repos, setup, nil, objects...)
}

// newHarnessWithAccess is newHarness with what sets and variants read
// bounded by their ServiceAccounts.
func newHarnessWithAccess(t *testing.T, repos map[string]map[string]string, checker *access.Checker, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	return startHarness(t, repos, nil, checker, objects...)
}

func startHarness(t *testing.T, repos map[string]map[string]string, setup func(*porchsim.Sim), checker *access.Checker, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	sim := porchsim.New()
	sim.AddRepository(testNS, "blueprints", false, nil)
	for name, lbls := range repos {
		sim.AddRepository(testNS, name, true, lbls)
	}
	if _, err := sim.AddPublished(testNS, "blueprints", "app", 1, blueprint("v1\n")); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(sim)
	}
	// Readiness changes of variants reach their set batched, as in the
	// cluster.
	run, err := offline.Start(ctx, sim, offline.Options{
		Objects:        objects,
		Workers:        2,
		ReadinessDelay: packagevariantset.DefaultReadinessDelay,
		Access:         checker,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Real Porch loses one of two overlapping writes into a
		// repository; the controllers must never make them.
		for _, o := range sim.Overlaps() {
			t.Errorf("porchsim: %s", o)
		}
		run.Stop()
		if err := run.Err(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &harness{t: t, ctx: ctx, sim: sim, client: sim.Clientset(), run: run,
		set: run.Controller(packagevariantset.ControllerName).(*packagevariantset.Controller)}
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	if err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		h.t.Fatalf("timed out waiting for %s; failing syncs: %v", what, h.run.Failing())
	}
}

// settle waits until the controllers have nothing left to do (see
// offline.Runner.WaitIdle).
func (h *harness) settle() {
	h.t.Helper()
	if err := h.run.WaitIdle(h.ctx, waitTimeout); err != nil {
		h.t.Fatalf("settle: %v", err)
	}
}

func (h *harness) syncCount(name string) int {
	return h.run.SyncsOf(packagevariantset.ControllerName, cache.ObjectName{Namespace: testNS, Name: name})
}

// resync queues a set and waits until it was synced once more.
func (h *harness) resync(name string) {
	h.t.Helper()
	before := h.syncCount(name)
	h.set.Enqueue(cache.ObjectName{Namespace: testNS, Name: name})
	h.eventually("a sync of "+name, func() bool { return h.syncCount(name) > before })
}

// createObject adds an in-cluster object once the controllers watch its
// kind.
func (h *harness) createObject(obj *unstructured.Unstructured) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, waitTimeout)
	defer cancel()
	if err := h.run.CreateObject(ctx, obj); err != nil {
		h.t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

func (h *harness) createSet(pvs *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet {
	h.t.Helper()
	out, err := h.client.ConfigV1alpha2().PackageVariantSets(testNS).Create(h.ctx, pvs, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create set: %v", err)
	}
	return out
}

func (h *harness) getSet(name string) *configv1alpha2.PackageVariantSet {
	h.t.Helper()
	pvs, err := h.client.ConfigV1alpha2().PackageVariantSets(testNS).Get(h.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return pvs
}

func (h *harness) updateSet(name string, change func(*configv1alpha2.PackageVariantSetSpec)) {
	h.t.Helper()
	sets := h.client.ConfigV1alpha2().PackageVariantSets(testNS)
	if err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pvs, err := sets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(&pvs.Spec)
		_, err = sets.Update(ctx, pvs, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		h.t.Fatalf("update set %s: %v", name, err)
	}
}

// waitSetCondition waits for a condition of the set's current generation.
func (h *harness) waitSetCondition(name, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	h.t.Helper()
	var last *metav1.Condition
	if err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		pvs := h.getSet(name)
		if pvs == nil {
			return false, nil
		}
		last = meta.FindStatusCondition(pvs.Status.Conditions, condType)
		return last != nil && last.Status == status && last.Reason == reason && last.ObservedGeneration == pvs.Generation, nil
	}); err != nil {
		h.t.Fatalf("timed out waiting for set %s %s=%s (%s); last %+v; failing: %v", name, condType, status, reason, last, h.run.Failing())
	}
	return last
}

// variants are the set's PackageVariants in the Sim, by name.
func (h *harness) variants() map[string]configv1alpha1.PackageVariant {
	out := map[string]configv1alpha1.PackageVariant{}
	for _, pv := range h.sim.PackageVariants(testNS) {
		out[pv.Name] = pv
	}
	return out
}

func names[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (h *harness) waitVariants(want ...string) map[string]configv1alpha1.PackageVariant {
	h.t.Helper()
	sort.Strings(want)
	var got map[string]configv1alpha1.PackageVariant
	if err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		got = h.variants()
		return strings.Join(names(got), ",") == strings.Join(want, ","), nil
	}); err != nil {
		h.t.Fatalf("timed out waiting for variants %v; have %v; failing: %v", want, names(got), h.run.Failing())
	}
	return got
}

// drafts is "<repo>/<package>:<lifecycle>" of every downstream revision.
func (h *harness) drafts() []string {
	var out []string
	for _, pr := range h.sim.PackageRevisions(testNS) {
		if pr.Spec.RepositoryName == "blueprints" {
			continue
		}
		out = append(out, fmt.Sprintf("%s/%s:%s", pr.Spec.RepositoryName, pr.Spec.PackageName, pr.Spec.Lifecycle))
	}
	sort.Strings(out)
	return out
}

func (h *harness) waitDrafts(want ...string) {
	h.t.Helper()
	sort.Strings(want)
	var got []string
	if err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		got = h.drafts()
		return strings.Join(got, ",") == strings.Join(want, ","), nil
	}); err != nil {
		h.t.Fatalf("timed out waiting for downstream revisions %v; have %v", want, got)
	}
}

// allVariantsReady waits until every variant of the Sim reports Ready.
func (h *harness) allVariantsReady() {
	h.t.Helper()
	h.eventually("every variant to be Ready", func() bool {
		for _, pv := range h.sim.PackageVariants(testNS) {
			if !meta.IsStatusConditionTrue(pv.Status.Conditions, "Ready") {
				return false
			}
		}
		return true
	})
}

func repoLabels(env, region string) map[string]string {
	return map[string]string{"env": env, "region": region}
}

func prodSelector() *configv1alpha2.RepositorySelector {
	return &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
}

func newSet(name string, targets ...configv1alpha2.Target) *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets:  targets,
		},
	}
}
