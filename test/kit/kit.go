// Package kit is the controller test kit: both controllers running as the
// binary builds them (controllers.Build, shared informers, rate-limited
// workqueues, two workers), through pkg/offline, on porchsim with a
// blueprint and deployment repositories, and the waits every integration
// test needs. Every wait polls a condition with a timeout (WaitTimeout),
// never for a fixed time, and its failure says what it last saw and which
// syncs are failing.
//
// The controllers' integration tests, pkg/offline's and the soak's use it;
// the fixtures that need no running controllers are in fixtures.go.
package kit

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// How long a wait waits, and how often it looks.
const (
	WaitTimeout = 30 * time.Second
	PollEvery   = 5 * time.Millisecond
)

// The upstream every harness holds: package app of repository blueprints.
const (
	UpstreamRepo    = "blueprints"
	UpstreamPackage = "app"
)

// Options say what a harness starts with.
type Options struct {
	// Namespace of every object.
	Namespace string
	// Repositories are the deployment repositories, by name, with their
	// labels.
	Repositories map[string]map[string]string
	// Blueprint are the files of blueprints/app, Published revision 1.
	Blueprint map[string]string
	// Objects are the in-cluster objects injectors and objectSelectors
	// read.
	Objects []*unstructured.Unstructured
	// Setup prepares the Sim before the controllers start (reactors must
	// be in place before anything reads the clientset).
	Setup func(*porchsim.Sim)
	// Access bounds what variants and sets read by their ServiceAccounts.
	Access *access.Checker
	// ReadinessDelay of the set controller (offline.Options).
	ReadinessDelay time.Duration
}

// Harness is the controllers running against one Sim.
type Harness struct {
	T      *testing.T
	Ctx    context.Context
	NS     string
	Sim    *porchsim.Sim
	Client versioned.Interface
	Run    *offline.Runner
	// run are the options Run was started with (Restart).
	run offline.Options
}

// Start makes a Sim holding the blueprint and the repositories, then
// starts both controllers on it. At the end of the test it checks that
// they never wrote into one repository twice at once (real Porch loses one
// of two overlapping writes) and that they stopped without an error.
func Start(t *testing.T, o Options) *Harness {
	t.Helper()
	// Logs go to the test's log, and are kept for Logs.
	ctx := klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true))))
	sim := porchsim.New()
	sim.AddRepository(o.Namespace, UpstreamRepo, false, nil)
	for _, name := range slices.Sorted(maps.Keys(o.Repositories)) {
		sim.AddRepository(o.Namespace, name, true, o.Repositories[name])
	}
	if _, err := sim.AddPublished(o.Namespace, UpstreamRepo, UpstreamPackage, 1, o.Blueprint); err != nil {
		t.Fatalf("add the blueprint: %v", err)
	}
	if o.Setup != nil {
		o.Setup(sim)
	}
	// Two workers, as the binary runs by default: the tests of writes
	// into one repository need syncs at the same time.
	h := &Harness{T: t, Ctx: ctx, NS: o.Namespace, Sim: sim, Client: sim.Clientset(), run: offline.Options{
		Objects:        o.Objects,
		Workers:        2,
		ReadinessDelay: o.ReadinessDelay,
		Access:         o.Access,
	}}
	h.start()
	t.Cleanup(func() {
		for _, o := range sim.Overlaps() {
			t.Errorf("porchsim: %s", o)
		}
		h.stop()
	})
	return h
}

// Logs are the controllers' log lines so far, in klog's text format.
func (h *Harness) Logs() string {
	return klog.FromContext(h.Ctx).GetSink().(ktesting.Underlier).GetBuffer().String()
}

func (h *Harness) start() {
	h.T.Helper()
	run, err := offline.Start(h.Ctx, h.Sim, h.run)
	if err != nil {
		h.T.Fatalf("start the controllers: %v", err)
	}
	h.Run = run
}

func (h *Harness) stop() {
	h.T.Helper()
	h.Run.Stop()
	if err := h.Run.Err(); err != nil {
		h.T.Errorf("Run: %v", err)
	}
}

// Restart stops the controllers and starts new ones on the same Sim, with
// empty caches and queues and nothing remembered, as after a crash
// between two of their requests; what happens in between (before) is what
// the Sim holds when the new ones start.
func (h *Harness) Restart(before func()) {
	h.T.Helper()
	h.stop()
	before()
	h.start()
}

// Failures describes the syncs that failed last, for messages.
func (h *Harness) Failures() string {
	return strings.Join(h.Run.Failing(), "\n")
}

// poll polls cond until it holds, fails or the wait times out.
func (h *Harness) poll(cond func(ctx context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(h.Ctx, PollEvery, WaitTimeout, true, cond)
}

// Eventually waits until cond holds.
func (h *Harness) Eventually(what string, cond func() bool) {
	h.T.Helper()
	if err := h.poll(func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		h.T.Fatalf("timed out waiting for %s; failing syncs: %s", what, h.Failures())
	}
}

// WaitList waits until list returns want (both sorted first) and returns
// what it returned last.
func (h *Harness) WaitList(what string, list func() []string, want ...string) []string {
	h.T.Helper()
	want = sorted(want)
	var got []string
	if err := h.poll(func(context.Context) (bool, error) {
		got = sorted(list())
		return strings.Join(got, ",") == strings.Join(want, ","), nil
	}); err != nil {
		h.T.Fatalf("timed out waiting for %s %v; have %v; failing syncs: %s", what, want, got, h.Failures())
	}
	return got
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// Settle waits until the controllers have nothing left to do (see
// offline.Runner.WaitIdle).
func (h *Harness) Settle() {
	h.T.Helper()
	if err := h.Run.WaitIdle(h.Ctx, WaitTimeout); err != nil {
		h.T.Fatalf("settle: %v", err)
	}
}

// SyncCount is how many syncs of the named object a controller made.
func (h *Harness) SyncCount(controller, name string) int {
	return h.Run.SyncsOf(controller, cache.ObjectName{Namespace: h.NS, Name: name})
}

// Resync queues an object of a controller with enqueue (the controller's
// Enqueue, which its tests export), as a periodic resync would, and waits
// until it was synced once more.
func (h *Harness) Resync(controller, name string, enqueue func(cache.ObjectName)) {
	h.T.Helper()
	before := h.SyncCount(controller, name)
	enqueue(cache.ObjectName{Namespace: h.NS, Name: name})
	h.Eventually("a sync of "+name, func() bool { return h.SyncCount(controller, name) > before })
}

// EventsMatching are the recorded Events ("<type> <reason> <message>")
// that contain substr.
func (h *Harness) EventsMatching(substr string) []string {
	var out []string
	for _, e := range h.Run.Events() {
		if s := e.Type + " " + e.Reason + " " + e.Message; strings.Contains(s, substr) {
			out = append(out, s)
		}
	}
	return out
}

// CreateObject adds an in-cluster object once the controllers watch its
// kind.
func (h *Harness) CreateObject(obj *unstructured.Unstructured) {
	h.T.Helper()
	h.writeObject("create", h.Run.CreateObject, obj)
}

// UpdateObject changes an in-cluster object once the controllers watch
// its kind.
func (h *Harness) UpdateObject(obj *unstructured.Unstructured) {
	h.T.Helper()
	h.writeObject("update", h.Run.UpdateObject, obj)
}

// writeObject writes an in-cluster object, waiting at most WaitTimeout for
// the controllers to watch its kind.
func (h *Harness) writeObject(verb string, write func(context.Context, *unstructured.Unstructured) error, obj *unstructured.Unstructured) {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(h.Ctx, WaitTimeout)
	defer cancel()
	if err := write(ctx, obj); err != nil {
		h.T.Fatalf("%s %s %s: %v", verb, obj.GetKind(), obj.GetName(), err)
	}
}

// Files are the files of a package revision.
func (h *Harness) Files(name string) map[string]string {
	h.T.Helper()
	files, err := h.Sim.Resources(h.NS, name)
	if err != nil {
		h.T.Fatalf("resources of %s: %v", name, err)
	}
	return files
}

// Revision reads a package revision.
func (h *Harness) Revision(name string) *porchv1alpha1.PackageRevision {
	h.T.Helper()
	pr, err := h.Sim.PackageRevision(h.NS, name)
	if err != nil {
		h.T.Fatalf("get %s: %v", name, err)
	}
	return pr
}

// Revisions are the revisions of repo/pkg, without the placeholder (main)
// that Porch makes at the first publish.
func (h *Harness) Revisions(repo, pkg string) []porchv1alpha1.PackageRevision {
	var out []porchv1alpha1.PackageRevision
	for _, pr := range h.Sim.PackageRevisions(h.NS) {
		if pr.Spec.RepositoryName == repo && pr.Spec.PackageName == pkg && pr.Spec.Revision != porchv1alpha1.PlaceholderRevision {
			out = append(out, pr)
		}
	}
	return out
}

// Summary is "<workspace>:<lifecycle>" of each revision, sorted, for
// comparisons.
func Summary(revs []porchv1alpha1.PackageRevision) []string {
	out := make([]string, 0, len(revs))
	for _, pr := range revs {
		out = append(out, fmt.Sprintf("%s:%s", pr.Spec.WorkspaceName, pr.Spec.Lifecycle))
	}
	sort.Strings(out)
	return out
}

// Variant reads a variant from the Sim (nil when it is gone).
func (h *Harness) Variant(name string) *configv1alpha1.PackageVariant {
	for _, pv := range h.Sim.PackageVariants(h.NS) {
		if pv.Name == name {
			return &pv
		}
	}
	return nil
}

// Variants are the variants in the Sim, by name.
func (h *Harness) Variants() map[string]configv1alpha1.PackageVariant {
	out := map[string]configv1alpha1.PackageVariant{}
	for _, pv := range h.Sim.PackageVariants(h.NS) {
		out[pv.Name] = pv
	}
	return out
}

// Set reads a set (nil when it is gone).
func (h *Harness) Set(name string) *configv1alpha2.PackageVariantSet {
	h.T.Helper()
	pvs, err := h.Client.ConfigV1alpha2().PackageVariantSets(h.NS).Get(h.Ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.T.Fatal(err)
	}
	return pvs
}

// creator is what create needs of a generated typed client.
type creator[T any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// create creates an object, failing the test when it cannot.
func create[T metav1.Object](h *Harness, c creator[T], what string, obj T) T {
	h.T.Helper()
	out, err := c.Create(h.Ctx, obj, metav1.CreateOptions{})
	if err != nil {
		h.T.Fatalf("create %s %s: %v", what, obj.GetName(), err)
	}
	return out
}

// CreateVariant creates a variant.
func (h *Harness) CreateVariant(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	h.T.Helper()
	return create(h, h.Client.ConfigV1alpha1().PackageVariants(h.NS), "PackageVariant", pv)
}

// CreateSet creates a set.
func (h *Harness) CreateSet(pvs *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet {
	h.T.Helper()
	return create(h, h.Client.ConfigV1alpha2().PackageVariantSets(h.NS), "PackageVariantSet", pvs)
}

// typedClient is what update needs of a generated typed client.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// update changes an object as a person would: read, change, write,
// again on a conflict with the controllers' own writes.
func update[T any](h *Harness, c typedClient[T], what, name string, change func(T)) {
	h.T.Helper()
	if err := h.poll(func(ctx context.Context) (bool, error) {
		obj, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		change(obj)
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		h.T.Fatalf("update %s %s: %v", what, name, err)
	}
}

// UpdateVariant changes a variant (its spec, its annotations...).
func (h *Harness) UpdateVariant(name string, change func(*configv1alpha1.PackageVariant)) {
	h.T.Helper()
	update(h, h.Client.ConfigV1alpha1().PackageVariants(h.NS), "PackageVariant", name, change)
}

// UpdateVariantSpec changes a variant's spec.
func (h *Harness) UpdateVariantSpec(name string, change func(*configv1alpha1.PackageVariantSpec)) {
	h.T.Helper()
	h.UpdateVariant(name, func(pv *configv1alpha1.PackageVariant) { change(&pv.Spec) })
}

// UpdateSet changes a set (its spec, its annotations...).
func (h *Harness) UpdateSet(name string, change func(*configv1alpha2.PackageVariantSet)) {
	h.T.Helper()
	update(h, h.Client.ConfigV1alpha2().PackageVariantSets(h.NS), "PackageVariantSet", name, change)
}

// UpdateSetSpec changes a set's spec.
func (h *Harness) UpdateSetSpec(name string, change func(*configv1alpha2.PackageVariantSetSpec)) {
	h.T.Helper()
	h.UpdateSet(name, func(pvs *configv1alpha2.PackageVariantSet) { change(&pvs.Spec) })
}

// Annotate sets annotation key of obj to value ("" removes it).
func Annotate(obj metav1.Object, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if value == "" {
		delete(a, key)
	} else {
		a[key] = value
	}
	obj.SetAnnotations(a)
}

// WaitVariantCondition waits for a variant's condition with the given
// status and reason, reached for its current generation.
func (h *Harness) WaitVariantCondition(name, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	h.T.Helper()
	return h.waitCondition("PackageVariant "+name, condType, status, reason, func() ([]metav1.Condition, int64, bool) {
		pv := h.Variant(name)
		if pv == nil {
			return nil, 0, false
		}
		return pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration == pv.Generation
	})
}

// WaitSetCondition waits for a set's condition with the given status and
// reason, reached for its current generation.
func (h *Harness) WaitSetCondition(name, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	h.T.Helper()
	return h.waitCondition("PackageVariantSet "+name, condType, status, reason, func() ([]metav1.Condition, int64, bool) {
		pvs := h.Set(name)
		if pvs == nil {
			return nil, 0, false
		}
		return pvs.Status.Conditions, pvs.Generation, true
	})
}

// waitCondition waits until get's conditions hold condType with status and
// reason for the generation get returns; current says whether the status
// as a whole is of that generation.
func (h *Harness) waitCondition(what, condType string, status metav1.ConditionStatus, reason string, get func() (conds []metav1.Condition, generation int64, current bool)) *metav1.Condition {
	h.T.Helper()
	var last *metav1.Condition
	if err := h.poll(func(context.Context) (bool, error) {
		conds, generation, current := get()
		last = meta.FindStatusCondition(conds, condType)
		return current && last != nil && last.Status == status && last.Reason == reason && last.ObservedGeneration == generation, nil
	}); err != nil {
		h.T.Fatalf("timed out waiting for %s %s=%s (%s); last: %+v; failing syncs: %s", what, condType, status, reason, last, h.Failures())
	}
	return last
}

// WaitAllVariantsReady waits until every variant reports Ready.
func (h *Harness) WaitAllVariantsReady() {
	h.T.Helper()
	h.Eventually("every variant to be Ready", func() bool {
		for _, pv := range h.Sim.PackageVariants(h.NS) {
			if !meta.IsStatusConditionTrue(pv.Status.Conditions, "Ready") {
				return false
			}
		}
		return true
	})
}

// Settled loads an input into sim (in namespace ns for objects that name
// none), runs both controllers on it until they have nothing left to do
// and returns them, still running (stopped at the end of the test).
func Settled(t testing.TB, ctx context.Context, sim *porchsim.Sim, in *input.Input, ns string) *offline.Runner {
	t.Helper()
	if err := in.Load(ctx, sim, ns); err != nil {
		t.Fatalf("load the input: %v", err)
	}
	r, err := offline.Start(ctx, sim, offline.Options{Objects: in.ObjectList()})
	if err != nil {
		t.Fatalf("start the controllers: %v", err)
	}
	t.Cleanup(r.Stop)
	if err := r.WaitIdle(ctx, WaitTimeout); err != nil {
		t.Fatalf("settle: %v", err)
	}
	return r
}
