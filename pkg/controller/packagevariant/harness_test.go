package packagevariant_test

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
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// The integration tests run the controllers as the binary does (built by
// controllers.Build on shared informers, the rate-limited workqueue, two
// workers), through pkg/offline, against porchsim and a fake cluster for
// the ConfigMaps that config injection reads. They wait on conditions with
// a timeout, never for a fixed time.

const (
	waitTimeout = 30 * time.Second
	pollEvery   = 5 * time.Millisecond
)

// The fixtures shared with the unit tests (fixtures_test.go).
const testNS = packagevariant.TestNS

var (
	newVariant  = packagevariant.NewVariant
	customised  = packagevariant.Customised
	configMap   = packagevariant.ConfigMap
	mustContain = packagevariant.MustContain
)

// Upstream blueprint "blueprints/app": a Deployment, a README and an
// injection point for a ConfigMap named region-config.
const kptfileV1 = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
info:
  description: the app blueprint
`

func blueprintFiles(replicas int, readme string) map[string]string {
	return map[string]string{
		"Kptfile": kptfileV1,
		"deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # the app
spec:
  replicas: %d
`, replicas),
		"region.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: region-config
  annotations:
    kpt.dev/config-injection: required
data:
  region: unset
`,
		"README.md": readme,
	}
}

// harness is the controllers running against one Sim.
type harness struct {
	t      *testing.T
	ctx    context.Context
	sim    *porchsim.Sim
	client versioned.Interface
	run    *offline.Runner
	ctrl   *packagevariant.Controller
}

type harnessOption func(*harnessConfig)

type harnessConfig struct {
	configMaps []*unstructured.Unstructured
	setup      func(*porchsim.Sim)
	access     *access.Checker
}

// withAccess bounds what variants read by their ServiceAccounts.
func withAccess(c *access.Checker) harnessOption {
	return func(cfg *harnessConfig) { cfg.access = c }
}

func withConfigMap(name string, data map[string]string) harnessOption {
	return func(c *harnessConfig) { c.configMaps = append(c.configMaps, configMap(name, data)) }
}

// withSim prepares the Sim before the controller starts.
func withSim(setup func(*porchsim.Sim)) harnessOption {
	return func(c *harnessConfig) { c.setup = setup }
}

// prependReactor puts a reaction in front of the Sim's fake clientset, for
// a test to act while a request of the controller is on its way. Call it
// from withSim: adding one to a clientset in use races with its readers.
func prependReactor(s *porchsim.Sim, verb, resource string, reaction clienttesting.ReactionFunc) {
	s.Clientset().(interface {
		PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	}).PrependReactor(verb, resource, reaction)
}

// newHarness starts a Sim holding revision 1 of blueprints/app (and a
// deployment repository "deploy"), then the controllers on top of it.
func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	_, ctx := ktesting.NewTestContext(t)

	sim := porchsim.New()
	sim.AddRepository(testNS, "blueprints", false, nil)
	sim.AddRepository(testNS, "deploy", true, map[string]string{"env": "prod"})
	if _, err := sim.AddPublished(testNS, "blueprints", "app", 1, blueprintFiles(1, "v1\n")); err != nil {
		t.Fatalf("AddPublished: %v", err)
	}
	if cfg.setup != nil {
		cfg.setup(sim)
	}
	// Two workers, as the binary runs by default: the tests of writes
	// into one repository need syncs at the same time.
	run, err := offline.Start(ctx, sim, offline.Options{Objects: cfg.configMaps, Workers: 2, Access: cfg.access})
	if err != nil {
		t.Fatalf("start the controllers: %v", err)
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
	return &harness{
		t: t, ctx: ctx, sim: sim, client: sim.Clientset(), run: run,
		ctrl: run.Controller(packagevariant.ControllerName).(*packagevariant.Controller),
	}
}

// eventually waits until cond holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		h.t.Fatalf("timed out waiting for %s", what)
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

// failures describes the syncs that failed last, for messages.
func (h *harness) failures() string {
	return strings.Join(h.run.Failing(), "\n")
}

func (h *harness) syncCount(name string) int {
	return h.run.SyncsOf(packagevariant.ControllerName, cache.ObjectName{Namespace: testNS, Name: name})
}

// resync queues a variant, as a periodic resync would, and waits until it
// was synced.
func (h *harness) resync(name string) {
	h.t.Helper()
	before := h.syncCount(name)
	h.ctrl.Enqueue(cache.ObjectName{Namespace: testNS, Name: name})
	h.eventually("a sync of "+name, func() bool { return h.syncCount(name) > before })
}

// eventsMatching are the recorded Events ("<type> <reason> <message>")
// that contain substr.
func (h *harness) eventsMatching(substr string) []string {
	var out []string
	for _, e := range h.run.Events() {
		if s := e.Type + " " + e.Reason + " " + e.Message; strings.Contains(s, substr) {
			out = append(out, s)
		}
	}
	return out
}

func (h *harness) create(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	h.t.Helper()
	out, err := h.client.ConfigV1alpha1().PackageVariants(testNS).Create(h.ctx, pv, metav1.CreateOptions{})
	if err != nil {
		h.t.Fatalf("create PackageVariant %s: %v", pv.Name, err)
	}
	return out
}

// variant reads a variant from the Sim (nil when it is gone).
func (h *harness) variant(name string) *configv1alpha1.PackageVariant {
	h.t.Helper()
	for _, pv := range h.sim.PackageVariants(testNS) {
		if pv.Name == name {
			return &pv
		}
	}
	return nil
}

// updateSpec changes a variant's spec, retrying on conflicts with the
// controller's own writes.
func (h *harness) updateSpec(name string, change func(*configv1alpha1.PackageVariantSpec)) {
	h.t.Helper()
	pvs := h.client.ConfigV1alpha1().PackageVariants(testNS)
	err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(ctx context.Context) (bool, error) {
		pv, err := pvs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(&pv.Spec)
		_, err = pvs.Update(ctx, pv, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		h.t.Fatalf("update PackageVariant %s: %v", name, err)
	}
}

func (h *harness) deleteVariant(name string) {
	h.t.Helper()
	if err := h.client.ConfigV1alpha1().PackageVariants(testNS).Delete(h.ctx, name, metav1.DeleteOptions{}); err != nil {
		h.t.Fatalf("delete PackageVariant %s: %v", name, err)
	}
}

// condition returns a variant's condition of a type, or nil.
func (h *harness) condition(name, condType string) *metav1.Condition {
	pv := h.variant(name)
	if pv == nil {
		return nil
	}
	return meta.FindStatusCondition(pv.Status.Conditions, condType)
}

// waitCondition waits for a condition with the given status and reason,
// reached for the variant's current generation.
func (h *harness) waitCondition(name, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	h.t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		pv := h.variant(name)
		if pv == nil {
			return false, nil
		}
		last = meta.FindStatusCondition(pv.Status.Conditions, condType)
		return last != nil && last.Status == status && last.Reason == reason &&
			last.ObservedGeneration == pv.Generation && pv.Status.ObservedGeneration == pv.Generation, nil
	})
	if err != nil {
		h.t.Fatalf("timed out waiting for %s %s=%s (%s); last: %+v; failing syncs: %s", name, condType, status, reason, last, h.failures())
	}
	return last
}

func (h *harness) waitReady(name string) {
	h.t.Helper()
	h.waitCondition(name, packagevariant.ConditionReady, metav1.ConditionTrue, packagevariant.ReasonNoErrors)
}

// revisions are the revisions of deploy/<pkg>, without the placeholder
// (main) that Porch makes at the first publish.
func (h *harness) revisions(pkg string) []porchv1alpha1.PackageRevision {
	var out []porchv1alpha1.PackageRevision
	for _, pr := range h.sim.PackageRevisions(testNS) {
		if pr.Spec.RepositoryName == "deploy" && pr.Spec.PackageName == pkg && pr.Spec.Revision != porchv1alpha1.PlaceholderRevision {
			out = append(out, pr)
		}
	}
	return out
}

// summary is "<workspace>:<lifecycle>" for each revision, for comparisons.
func summary(revs []porchv1alpha1.PackageRevision) []string {
	out := make([]string, 0, len(revs))
	for _, pr := range revs {
		out = append(out, fmt.Sprintf("%s:%s", pr.Spec.WorkspaceName, pr.Spec.Lifecycle))
	}
	sort.Strings(out)
	return out
}

func (h *harness) waitRevisions(pkg string, want ...string) []porchv1alpha1.PackageRevision {
	h.t.Helper()
	sort.Strings(want)
	var revs []porchv1alpha1.PackageRevision
	err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		revs = h.revisions(pkg)
		return strings.Join(summary(revs), ",") == strings.Join(want, ","), nil
	})
	if err != nil {
		h.t.Fatalf("timed out waiting for deploy/%s revisions %v; have %v; failing syncs: %s", pkg, want, summary(revs), h.failures())
	}
	return revs
}

// expectRevisions checks the revisions of deploy/<pkg> right now.
func (h *harness) expectRevisions(pkg string, want ...string) {
	h.t.Helper()
	sort.Strings(want)
	if got := summary(h.revisions(pkg)); strings.Join(got, ",") != strings.Join(want, ",") {
		h.t.Fatalf("deploy/%s revisions: got %v, want %v", pkg, got, want)
	}
}

func (h *harness) files(prName string) map[string]string {
	h.t.Helper()
	files, err := h.sim.Resources(testNS, prName)
	if err != nil {
		h.t.Fatalf("resources of %s: %v", prName, err)
	}
	return files
}

func (h *harness) revision(name string) *porchv1alpha1.PackageRevision {
	h.t.Helper()
	pr, err := h.sim.PackageRevision(testNS, name)
	if err != nil {
		h.t.Fatalf("get %s: %v", name, err)
	}
	return pr
}

// updateConfigMap changes an in-cluster ConfigMap once the controllers
// watch ConfigMaps.
func (h *harness) updateConfigMap(name string, data map[string]string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, waitTimeout)
	defer cancel()
	if err := h.run.UpdateObject(ctx, configMap(name, data)); err != nil {
		h.t.Fatalf("update ConfigMap %s: %v", name, err)
	}
}

func controllerOwners(pr *porchv1alpha1.PackageRevision) int {
	n := 0
	for _, ref := range pr.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			n++
		}
	}
	return n
}
