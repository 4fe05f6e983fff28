package packagevariantset

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
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/porchwatch"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// The integration tests run both loops, as the binary does, against
// porchsim; objectSelector kinds come from a fake dynamic client.

const (
	testNS      = "fleet"
	waitTimeout = 30 * time.Second
	pollEvery   = 5 * time.Millisecond
)

var (
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
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

type harness struct {
	t      *testing.T
	ctx    context.Context
	sim    *porchsim.Sim
	client versioned.Interface
	dyn    *dynamicfake.FakeDynamicClient
	set    *Controller
	pv     *packagevariant.Controller

	watching chan struct{}
	once     sync.Once

	mu       sync.Mutex
	inflight int
	failing  map[string]error
	syncs    map[string]int
}

// newHarness starts a Sim with blueprints/app revision 1 and the given
// deployment repositories (name -> labels), then both controllers.
func newHarness(t *testing.T, repos map[string]map[string]string, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	sim := porchsim.New()
	sim.AddRepository(testNS, "blueprints", false, nil)
	for name, lbls := range repos {
		sim.AddRepository(testNS, name, true, lbls)
	}
	if _, err := sim.AddPublished(testNS, "blueprints", "app", 1, blueprint("v1\n")); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, o := range objects {
		objs = append(objs, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapGVR: "ConfigMapList"}, objs...)
	h := &harness{t: t, ctx: ctx, sim: sim, client: sim.Clientset(), dyn: dyn, watching: make(chan struct{}),
		failing: map[string]error{}, syncs: map[string]int{}}
	dyn.PrependWatchReactor("configmaps", func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(configMapGVR, action.GetNamespace())
		if err == nil {
			h.once.Do(func() { close(h.watching) })
		}
		return true, w, err
	})
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(configMapGVK, meta.RESTScopeNamespace)
	onDemand := ondemand.New(ctx, ondemand.Options{Dynamic: dyn, Mapper: mapper})

	factory := informers.NewSharedInformerFactory(porchwatch.RelistOnResume(h.client), 0)
	recorder := record.NewFakeRecorder(100000)
	pvc, err := packagevariant.New(ctx, h.client, factory.Config().V1alpha1().PackageVariants(),
		factory.Porch().V1alpha1().PackageRevisions(), onDemand, recorder, nil, packagevariant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	setc, err := New(ctx, h.client, factory.Config().V1alpha2().PackageVariantSets(),
		factory.Config().V1alpha1().PackageVariants(), factory.Config().V1alpha1().Repositories(),
		factory.Porch().V1alpha1().PackageRevisions(), onDemand, recorder, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.set, h.pv = setc, pvc
	inner := setc.syncHandler
	setc.syncHandler = func(ctx context.Context, key cache.ObjectName) error {
		h.mu.Lock()
		h.inflight++
		h.mu.Unlock()
		err := inner(ctx, key)
		h.mu.Lock()
		h.inflight--
		h.syncs[key.Name]++
		if err != nil {
			h.failing[key.Name] = err
		} else {
			delete(h.failing, key.Name)
		}
		h.mu.Unlock()
		return err
	}
	go func() {
		for {
			select {
			case <-recorder.Events:
			case <-ctx.Done():
				return
			}
		}
	}()
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context, int) error{pvc.Run, setc.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx, 2); err != nil && ctx.Err() == nil {
				// A test that ends before the caches synced stops Run early;
				// that is shutdown, not a failure.
				t.Errorf("Run: %v", err)
			}
		}()
	}
	t.Cleanup(func() {
		// Real Porch loses one of two overlapping writes into a
		// repository; the controllers must never make them.
		for _, o := range sim.Overlaps() {
			t.Errorf("porchsim: %s", o)
		}
		cancel()
		factory.Shutdown()
		wg.Wait()
	})
	return h
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	if err := wait.PollUntilContextTimeout(h.ctx, pollEvery, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		h.t.Fatalf("timed out waiting for %s; failing set syncs: %v", what, h.failures())
	}
}

func (h *harness) failures() map[string]error {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]error{}
	for k, v := range h.failing {
		out[k] = v
	}
	return out
}

func (h *harness) syncCount(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.syncs[name]
}

// resync queues a set and waits until it was synced once more.
func (h *harness) resync(name string) {
	h.t.Helper()
	before := h.syncCount(name)
	h.set.queue.Add(cache.ObjectName{Namespace: testNS, Name: name})
	h.eventually("a sync of "+name, func() bool { return h.syncCount(name) > before })
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
		h.t.Fatalf("timed out waiting for set %s %s=%s (%s); last %+v; failing: %v", name, condType, status, reason, last, h.failures())
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
		h.t.Fatalf("timed out waiting for variants %v; have %v; failing: %v", want, names(got), h.failures())
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

// settle waits until the set controller is idle with caches caught up,
// three checks in a row.
func (h *harness) settle() {
	h.t.Helper()
	quiet := 0
	h.eventually("the set controller to settle", func() bool {
		h.mu.Lock()
		busy := h.inflight > 0 || len(h.failing) > 0
		h.mu.Unlock()
		if busy || h.set.queue.Len() > 0 || !h.cachesMatch() {
			quiet = 0
			return false
		}
		quiet++
		return quiet >= 3
	})
}

func (h *harness) cachesMatch() bool {
	stored := h.sim.PackageVariants(testNS)
	if len(h.set.pvIndexer.ListKeys()) != len(stored) {
		return false
	}
	for _, pv := range stored {
		obj, ok, _ := h.set.pvIndexer.GetByKey(pv.Namespace + "/" + pv.Name)
		if !ok || obj.(*configv1alpha1.PackageVariant).ResourceVersion != pv.ResourceVersion {
			return false
		}
	}
	return true
}

func byRepo(vs map[string]configv1alpha1.PackageVariant) map[string]configv1alpha1.PackageVariant {
	out := map[string]configv1alpha1.PackageVariant{}
	for _, pv := range vs {
		out[pv.Spec.Downstream.Repo+"/"+pv.Spec.Downstream.Package] = pv
	}
	return out
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

var _ = porchv1alpha1.PackageRevisionLifecycleDraft
