package packagevariant

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/porchwatch"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// The integration tests run the controller as the binary does (shared
// informers, the rate-limited workqueue, two workers) against porchsim, and
// against a fake dynamic client for the ConfigMaps that config injection
// reads. They wait on conditions with a timeout, never for a fixed time.

const (
	testNS      = "team-a"
	waitTimeout = 30 * time.Second
	pollEvery   = 5 * time.Millisecond
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

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

// harness is one controller running against one Sim.
type harness struct {
	t       *testing.T
	ctx     context.Context
	sim     *porchsim.Sim
	client  versioned.Interface
	dyn     *dynamicfake.FakeDynamicClient
	ctrl    *Controller
	prStore cache.Store
	pvStore cache.Store

	// cmWatches is closed when the first ConfigMap watch is established.
	cmWatches chan struct{}
	cmOnce    sync.Once

	mu       sync.Mutex
	inflight int
	syncs    map[cache.ObjectName]int
	failing  map[cache.ObjectName]error
	events   []string
}

type harnessOption func(*harnessConfig)

type harnessConfig struct {
	configMaps []*unstructured.Unstructured
	setup      func(*porchsim.Sim)
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

func configMap(name string, data map[string]string) *unstructured.Unstructured {
	d := map[string]interface{}{}
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"name": name, "namespace": testNS},
		"data":       d,
	}}
}

// newHarness starts a Sim holding revision 1 of blueprints/app (and a
// deployment repository "deploy"), then the controller on top of it.
func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)

	sim := porchsim.New()
	sim.AddRepository(testNS, "blueprints", false, nil)
	sim.AddRepository(testNS, "deploy", true, map[string]string{"env": "prod"})
	if _, err := sim.AddPublished(testNS, "blueprints", "app", 1, blueprintFiles(1, "v1\n")); err != nil {
		t.Fatalf("AddPublished: %v", err)
	}
	if cfg.setup != nil {
		cfg.setup(sim)
	}

	var objs []runtime.Object
	for _, cm := range cfg.configMaps {
		objs = append(objs, cm)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapGVR: "ConfigMapList"}, objs...)
	h := &harness{
		t: t, ctx: ctx, sim: sim, client: sim.Clientset(), dyn: dyn,
		cmWatches: make(chan struct{}),
		syncs:     map[cache.ObjectName]int{},
		failing:   map[cache.ObjectName]error{},
	}
	// The fake tracker's watch starts at "now": establish it here and say
	// so, so that a test changes a ConfigMap only once the informer can see
	// the change.
	dyn.PrependWatchReactor("configmaps", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(configMapGVR, action.GetNamespace())
		if err == nil {
			h.cmOnce.Do(func() { close(h.cmWatches) })
		}
		return true, w, err
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)

	factory := informers.NewSharedInformerFactory(porchwatch.RelistOnResume(h.client), 0)
	pvInformer := factory.Config().V1alpha1().PackageVariants()
	prInformer := factory.Porch().V1alpha1().PackageRevisions()
	recorder := record.NewFakeRecorder(1000)
	c, err := New(ctx, h.client, pvInformer, prInformer,
		ondemand.New(ctx, ondemand.Options{Dynamic: dyn, Mapper: mapper}), recorder, nil, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.ctrl = c
	h.pvStore = pvInformer.Informer().GetStore()
	h.prStore = prInformer.Informer().GetStore()
	inner := c.syncHandler
	c.syncHandler = func(ctx context.Context, key cache.ObjectName) error {
		h.mu.Lock()
		h.inflight++
		h.mu.Unlock()
		err := inner(ctx, key)
		h.mu.Lock()
		h.inflight--
		h.syncs[key]++
		// A failure reported in status and retried on the handler's own
		// schedule is not work in hand.
		if err != nil && !workloop.IsRetryAfter(err) {
			h.failing[key] = err
		} else {
			delete(h.failing, key)
		}
		h.mu.Unlock()
		return err
	}

	eventsDone := make(chan struct{})
	go func() {
		defer close(eventsDone)
		for {
			select {
			case e := <-recorder.Events:
				h.mu.Lock()
				h.events = append(h.events, e)
				h.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	factory.Start(ctx.Done())
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		if err := c.Run(ctx, 2); err != nil && ctx.Err() == nil {
			// A test that ends before the caches synced stops Run early;
			// that is shutdown, not a failure.
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		// Real Porch loses one of two overlapping writes into a
		// repository; the controllers must never make them.
		for _, o := range sim.Overlaps() {
			t.Errorf("porchsim: %s", o)
		}
		cancel()
		factory.Shutdown()
		<-runDone
		<-eventsDone
	})
	return h
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

// settle waits until the controller has nothing left to do: the caches show
// what the Sim holds, the queue is empty, no sync is running and none
// failed. The state must hold on three checks in a row, because an informer
// hands an event to the controller's handler just after its cache changed.
func (h *harness) settle() {
	h.t.Helper()
	quietFor := 0
	h.eventually("the controller to settle", func() bool {
		if h.quiet() {
			quietFor++
		} else {
			quietFor = 0
		}
		return quietFor >= 3
	})
}

func (h *harness) quiet() bool {
	h.mu.Lock()
	busy := h.inflight > 0 || len(h.failing) > 0
	h.mu.Unlock()
	if busy || h.ctrl.queue.Len() > 0 {
		return false
	}
	return cacheMatches(h.prStore, h.sim.PackageRevisions(testNS)) && cacheMatches(h.pvStore, h.sim.PackageVariants(testNS))
}

func cacheMatches[T any, PT interface {
	*T
	metav1.Object
}](store cache.Store, stored []T) bool {
	if len(store.ListKeys()) != len(stored) {
		return false
	}
	for i := range stored {
		m := PT(&stored[i])
		obj, ok, _ := store.GetByKey(m.GetNamespace() + "/" + m.GetName())
		if !ok {
			return false
		}
		if cached, err := meta.Accessor(obj); err != nil || cached.GetResourceVersion() != m.GetResourceVersion() {
			return false
		}
	}
	return true
}

// failures returns the errors of syncs that failed last, for messages.
func (h *harness) failures() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for k, err := range h.failing {
		out = append(out, k.String()+": "+err.Error())
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func (h *harness) syncCount(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.syncs[cache.ObjectName{Namespace: testNS, Name: name}]
}

// resync queues a variant, as a periodic resync would, and waits until it
// was synced.
func (h *harness) resync(name string) {
	h.t.Helper()
	before := h.syncCount(name)
	h.ctrl.queue.Add(cache.ObjectName{Namespace: testNS, Name: name})
	h.eventually("a sync of "+name, func() bool { return h.syncCount(name) > before })
}

func (h *harness) eventsMatching(substr string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		if strings.Contains(e, substr) {
			out = append(out, e)
		}
	}
	return out
}

// newVariant is a variant of blueprints/app into deploy/<downstream>.
func newVariant(name, downstream string) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: downstream},
		},
	}
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
	h.waitCondition(name, ConditionReady, metav1.ConditionTrue, ReasonNoErrors)
}

// revisions lists the Sim's revisions of deploy/<pkg>, by name.
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

// updateConfigMap changes an in-cluster ConfigMap once the controller
// watches ConfigMaps.
func (h *harness) updateConfigMap(name string, data map[string]string) {
	h.t.Helper()
	select {
	case <-h.cmWatches:
	case <-time.After(waitTimeout):
		h.t.Fatalf("the controller never watched ConfigMaps")
	}
	if _, err := h.dyn.Resource(configMapGVR).Namespace(testNS).Update(h.ctx, configMap(name, data), metav1.UpdateOptions{}); err != nil {
		h.t.Fatalf("update ConfigMap %s: %v", name, err)
	}
}

func mustContain(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}

func mustNotContain(t *testing.T, what, text string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(text, w) {
			t.Errorf("%s contains %q:\n%s", what, w, text)
		}
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
