//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// The scenario: everything a platform team does with variants, against a
// backend (real Porch, or porchsim-apiserver), one step at a time. After
// each step the controller must have settled, and the invariants hold:
// exactly one draft per variant's downstream, every draft with the
// variant's metadata, no Published revision gone missing, and each
// variant's conditions saying what is true. The state after each step is
// kept, normalised, for the differential check (differential_test.go).

// Repositories of the scenario: blueprints holds the upstream package; the
// set targets four packages in prod-a (four variants writing into one
// repository) and one in prod-b; the hand-written variants write into
// edge.
const (
	repoBlueprints = "blueprints"
	repoProdA      = "prod-a"
	repoProdB      = "prod-b"
	repoEdge       = "edge"
)

// The variants of the scenario and where they write.
var (
	setVariants = map[string]string{ // variant name -> downstream repo/package
		"fleet-prod-a-app-1": repoProdA + "/app-1",
		"fleet-prod-a-app-2": repoProdA + "/app-2",
		"fleet-prod-a-app-3": repoProdA + "/app-3",
		"fleet-prod-a-app-4": repoProdA + "/app-4",
		"fleet-prod-b-app":   repoProdB + "/app",
	}
	directVariants = map[string]string{
		"direct": repoEdge + "/direct",
		"keeper": repoEdge + "/keeper",
	}
	brokenVariants = map[string]string{
		"broken":       repoEdge + "/broken",
		"needs-runner": repoEdge + "/needs-runner",
	}
)

// step is one thing people do, what the fleet must look like after it,
// and a name for the report and the differential check.
type step struct {
	name string
	do   func(t *testing.T, s *scenario)
	// want is each existing variant's expected Ready condition: status and
	// reason. Variants not named must not exist.
	want map[string]readyWant
	// check, when set, checks more of the outcome.
	check func(t *testing.T, s *scenario)
}

// readyWant is what a variant must show after a step: its Ready condition
// and how many drafts (Draft or Proposed) of its downstream package it has.
type readyWant struct {
	status metav1.ConditionStatus
	reason string
	drafts int
}

var (
	ready       = readyWant{metav1.ConditionTrue, "NoErrors", 1}
	published   = readyWant{metav1.ConditionTrue, "NoErrors", 0}
	renderFails = readyWant{metav1.ConditionFalse, "RenderFailed", 1}
)

// scenario is one run of the steps against one backend.
type scenario struct {
	b    *backend
	ns   string
	ctrl *controller
	// published are the revisions ever seen Published: none may vanish
	// (they may become DeletionProposed).
	published map[string]bool
	// snapshots are the normalised states after each step.
	snapshots []namedSnapshot
}

type namedSnapshot struct {
	step string
	snap snapshot
}

func steps() []step {
	allDirect := map[string]readyWant{"direct": ready, "keeper": ready}
	withSet := merge(allDirect, map[string]readyWant{
		"fleet-prod-a-app-1": ready, "fleet-prod-a-app-2": ready, "fleet-prod-a-app-3": ready,
		"fleet-prod-a-app-4": ready, "fleet-prod-b-app": ready,
	})
	afterPublish := merge(withSet, map[string]readyWant{
		"direct": published, "keeper": published,
		"fleet-prod-a-app-1": published, "fleet-prod-a-app-2": published, "fleet-prod-a-app-3": published, "fleet-prod-a-app-4": published,
	})
	withBroken := merge(withSet, map[string]readyWant{"broken": renderFails, "needs-runner": renderFails})
	return []step{
		{
			name: "blueprint and two variants",
			do: func(t *testing.T, s *scenario) {
				s.publishBlueprint(t, 1)
				s.createVariant(t, "direct", repoEdge, "direct", configv1alpha1.DeletionPolicyDelete, &kptfilev1.Pipeline{
					Mutators: []kptfilev1.Function{{Name: "set-namespace", Image: setNamespace, ConfigMap: map[string]string{"namespace": "direct"}}},
				})
				s.createVariant(t, "keeper", repoEdge, "keeper", configv1alpha1.DeletionPolicyOrphan, nil)
			},
			want: allDirect,
			check: func(t *testing.T, s *scenario) {
				s.checkDraftContent(t, "direct", "packagevariant-1", "namespace: direct")
			},
		},
		{
			name: "a set over two repositories, four variants into one",
			do:   func(t *testing.T, s *scenario) { s.createSet(t) },
			want: withSet,
		},
		{
			name: "people publish the drafts of prod-a and the two variants",
			do: func(t *testing.T, s *scenario) {
				for _, name := range []string{"fleet-prod-a-app-1", "fleet-prod-a-app-2", "fleet-prod-a-app-3", "fleet-prod-a-app-4", "direct", "keeper"} {
					s.publishDraftOf(t, name)
				}
			},
			want: afterPublish,
		},
		{
			name: "blueprint revision 2: upgrade drafts, and the unedited draft of prod-b replaced",
			do:   func(t *testing.T, s *scenario) { s.publishBlueprint(t, 2) },
			want: withSet,
			check: func(t *testing.T, s *scenario) {
				for _, v := range []string{"fleet-prod-a-app-1", "direct", "fleet-prod-b-app"} {
					s.checkDraftContent(t, v, "packagevariant-2", "replicas: 3")
				}
				s.checkDraftContent(t, "direct", "packagevariant-2", "namespace: direct")
			},
		},
		{
			name: "variants whose pipelines cannot render",
			do: func(t *testing.T, s *scenario) {
				s.createVariant(t, "broken", repoEdge, "broken", configv1alpha1.DeletionPolicyDelete, &kptfilev1.Pipeline{
					Mutators: []kptfilev1.Function{{Name: "broken", Image: starlark, ConfigMap: map[string]string{"source": "def broken(:"}}},
				})
				s.createVariant(t, "needs-runner", repoEdge, "needs-runner", configv1alpha1.DeletionPolicyDelete, &kptfilev1.Pipeline{
					Mutators: []kptfilev1.Function{{Name: "set-annotations", Image: "gcr.io/kpt-fn/set-annotations:v0.1.4", ConfigMap: map[string]string{"team": "edge"}}},
				})
			},
			want:  withBroken,
			check: func(t *testing.T, s *scenario) { s.checkRenderFailure(t) },
		},
		{
			name: "delete a variant of each deletion policy, and the set",
			do: func(t *testing.T, s *scenario) {
				s.deleteVariant(t, "direct")
				s.deleteVariant(t, "keeper")
				if err := env.admin.ConfigV1alpha2().PackageVariantSets(s.ns).Delete(context.Background(), "fleet", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want:  map[string]readyWant{"broken": renderFails, "needs-runner": renderFails},
			check: func(t *testing.T, s *scenario) { s.checkCleanup(t) },
		},
	}
}

func merge(parts ...map[string]readyWant) map[string]readyWant {
	out := map[string]readyWant{}
	for _, m := range parts {
		maps.Copy(out, m)
	}
	return out
}

// Functions Porch runs built into its server.
const (
	setNamespace = "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5"
	starlark     = "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5"
)

// runScenario runs every step against b, in namespace ns, with a fresh
// controller (four workers) and returns the normalised state after each
// step.
func runScenario(t *testing.T, b *backend, ns string) *scenario {
	ctx := context.Background()
	createNamespace(t, ns)
	s := &scenario{b: b, ns: ns, published: map[string]bool{}}
	for _, repo := range []string{repoBlueprints, repoProdA, repoProdB, repoEdge} {
		s.repository(t, repo)
	}
	if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(ctx, regionConfigMap(ns), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	s.ctrl = startController(t, "controller", ns, "--workers", "4")
	s.ctrl.waitReady(t)

	for _, st := range steps() {
		start := time.Now()
		before, err := env.audit.Flush(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.do(t, s)
		s.waitFor(t, st)
		took := time.Since(start)
		s.checkInvariants(t, st)
		if st.check != nil {
			st.check(t, s)
		}
		events, _, err := env.audit.Since(ctx, before)
		if err != nil {
			t.Fatal(err)
		}
		sum := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser)))
		reportf(t, "%s: step %q settled in %s; the controller's requests:\n%s", b.name, st.name, took.Round(10*time.Millisecond), sum)
		snap := s.snapshot(t)
		snap.Requests = requestKinds(sum)
		s.snapshots = append(s.snapshots, namedSnapshot{step: st.name, snap: snap})
		if t.Failed() {
			t.Fatalf("%s: step %q failed; the steps after it would only repeat the failure", b.name, st.name)
		}
	}
	if strings.Contains(b.log(), "Overlapping writes into one repository") {
		t.Errorf("%s: writes into one repository overlapped:\n%s", b.name, grepLines(b.log(), "Overlapping writes"))
	}
	// Stopped before the API service moves to another backend: its
	// informers would relist from there and act on a world without its
	// revisions.
	if err := s.ctrl.Stop(); err != nil {
		t.Errorf("%s: stop the controller: %v", b.name, err)
	}
	return s
}

// regionConfigMap is the in-cluster ConfigMap the variants inject into
// the blueprint's region-config.
func regionConfigMap(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "region-us-east", Namespace: ns},
		Data:       map[string]string{"region": "us-east", "dnsZone": "us-east.apps.example.com", "objectStore": "s3://example-app-us-east"},
	}
}

// repository registers one of the scenario's Repositories: prod-* carry
// env: prod; all but blueprints are deployment repositories.
func (s *scenario) repository(t *testing.T, name string) {
	t.Helper()
	var labels map[string]string
	if strings.HasPrefix(name, "prod-") {
		labels = map[string]string{"env": "prod"}
	}
	repository(t, s.ns, name, name != repoBlueprints, labels)
}

// blueprintFiles are the files of revision n of blueprints/app: the
// example blueprint (examples/packages/app), whose only function is built
// into Porch; revision 2 changes the replicas.
func blueprintFiles(t *testing.T, n int) map[string]string {
	t.Helper()
	dir := filepath.Join(env.root, "examples", "packages", "app")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	if n >= 2 {
		files["deployment.yaml"] = strings.Replace(files["deployment.yaml"], "replicas: 2 ", "replicas: 3 ", 1)
	}
	return files
}

// publishBlueprint publishes revision n of blueprints/app as a person
// does: a draft (init for the first, an edit of the latest otherwise), its
// files, proposed, approved.
func (s *scenario) publishBlueprint(t *testing.T, n int) {
	t.Helper()
	task := initTask("the app blueprint")
	if n > 1 {
		task = editTask(fmt.Sprintf("%s.app.v%d", repoBlueprints, n-1))
	}
	name := publishRevision(t, s.ns, repoBlueprints, "app", fmt.Sprintf("v%d", n), task, blueprintFiles(t, n), true)
	s.published[name] = true
}

// publishDraftOf publishes the one draft of a variant, as a person does.
func (s *scenario) publishDraftOf(t *testing.T, variant string) {
	t.Helper()
	drafts := s.draftsOf(t, variant)
	if len(drafts) != 1 {
		t.Fatalf("%s: variant %s has drafts %v, want one to publish", s.b.name, variant, names(drafts))
	}
	publish(t, s.ns, drafts[0].Name)
	s.published[drafts[0].Name] = true
}

// createVariant makes a hand-written PackageVariant of blueprints/app.
func (s *scenario) createVariant(t *testing.T, name, repo, pkg string, policy configv1alpha1.DeletionPolicy, pipeline *kptfilev1.Pipeline) {
	t.Helper()
	pv := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:       &configv1alpha1.Upstream{Repo: repoBlueprints, Package: "app"},
			Downstream:     &configv1alpha1.Downstream{Repo: repo, Package: pkg},
			DeletionPolicy: policy,
			Labels:         map[string]string{"variant": name},
			Annotations:    map[string]string{"example.com/owner": "e2e"},
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"team": "edge", "variant": name}},
			Pipeline:       pipeline,
			Injectors:      []configv1alpha1.InjectionSelector{{Kind: ptr.To("ConfigMap"), Name: "region-us-east"}},
		},
	}
	if _, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).Create(context.Background(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createSet makes the set "fleet": four packages in prod-a and the default
// package in prod-b, with labels, annotations, package context and the
// region injector.
func (s *scenario) createSet(t *testing.T) {
	t.Helper()
	set := &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: s.ns},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: repoBlueprints, Package: "app"},
			Targets: []configv1alpha2.Target{{
				Repositories: []configv1alpha2.RepositoryTarget{
					{Name: repoProdA, PackageNames: []string{"app-1", "app-2", "app-3", "app-4"}},
					{Name: repoProdB},
				},
				Template: &configv1alpha2.PackageVariantTemplate{
					Labels:         map[string]string{"fleet": "prod"},
					Annotations:    map[string]string{"example.com/owner": "e2e"},
					PackageContext: &configv1alpha2.PackageContextTemplate{Data: map[string]string{"team": "fleet"}},
					Injectors:      []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("region-us-east")}},
				},
			}},
		},
	}
	createSet(t, context.Background(), set)
}

func (s *scenario) deleteVariant(t *testing.T, name string) {
	t.Helper()
	if err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until the fleet is as the step wants (the variants that
// exist, their Ready conditions, one draft each) and the controller has
// settled: its queues empty, no sync in progress, and nothing changing.
func (s *scenario) waitFor(t *testing.T, st step) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, 3*time.Minute, true, func(context.Context) (bool, error) {
		if s.ctrl.Exited() {
			return false, fmt.Errorf("the controller exited")
		}
		last = s.mismatch(t, st)
		return last == "", nil
	})
	if err != nil {
		t.Fatalf("%s: step %q: %v; still: %s", s.b.name, st.name, err, last)
	}
	s.settle(t)
	if m := s.mismatch(t, st); m != "" {
		t.Fatalf("%s: step %q: after settling: %s", s.b.name, st.name, m)
	}
}

// mismatch says how the fleet differs from what the step wants ("" when
// it does not).
func (s *scenario) mismatch(t *testing.T, st step) string {
	pvs, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var problems []string
	seen := map[string]bool{}
	for _, pv := range pvs.Items {
		seen[pv.Name] = true
		want, ok := st.want[pv.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("variant %s exists", pv.Name))
			continue
		}
		c := meta.FindStatusCondition(pv.Status.Conditions, "Ready")
		if c == nil || c.Status != want.status || c.Reason != want.reason || c.ObservedGeneration != pv.Generation {
			problems = append(problems, fmt.Sprintf("variant %s Ready %s, want %s (%s)", pv.Name, describe(c), want.status, want.reason))
			continue
		}
		if n := len(s.draftsOf(t, pv.Name)); n != want.drafts && pv.DeletionTimestamp == nil {
			problems = append(problems, fmt.Sprintf("variant %s has %d drafts, want %d", pv.Name, n, want.drafts))
		}
	}
	for name := range st.want {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("variant %s missing", name))
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "; ")
}

func describe(c *metav1.Condition) string {
	if c == nil {
		return "missing"
	}
	return fmt.Sprintf("%s (%s): %s", c.Status, c.Reason, c.Message)
}

// settle waits until nothing changes for a while: the controller's queues
// are empty and its sync count stands still, and the revisions and
// variants keep their resourceVersions. A draft whose render failed is
// retried on a backoff of 5s and more, so a quiet second comes between.
func (s *scenario) settle(t *testing.T) {
	t.Helper()
	const quietPolls = 5
	var prev string
	quiet := 0
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := s.ctrl.scrapeMetrics()
		if err != nil {
			return false, nil
		}
		state := fmt.Sprintf("depth=%v syncs=%v inflight=%v %s", m.sum("workqueue_depth"), m.sum("variant_controller_sync_total"),
			m.sum("workqueue_unfinished_work_seconds"), s.versions(t))
		if state == prev && m.sum("workqueue_depth") == 0 && m.sum("workqueue_unfinished_work_seconds") == 0 {
			quiet++
		} else {
			quiet = 0
		}
		prev = state
		return quiet >= quietPolls, nil
	})
	if err != nil {
		t.Fatalf("%s: the controller did not settle: %v", s.b.name, err)
	}
}

// versions is every revision's and variant's resourceVersion, in order.
func (s *scenario) versions(t *testing.T) string {
	var b strings.Builder
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	sort.Slice(prs.Items, func(i, j int) bool { return prs.Items[i].Name < prs.Items[j].Name })
	for _, pr := range prs.Items {
		fmt.Fprintf(&b, "%s=%s ", pr.Name, pr.ResourceVersion)
	}
	pvs, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, pv := range pvs.Items {
		fmt.Fprintf(&b, "%s=%s ", pv.Name, pv.ResourceVersion)
	}
	return b.String()
}

// draftsOf lists the Draft and Proposed revisions a variant controls.
func (s *scenario) draftsOf(t *testing.T, variant string) []porchv1alpha1.PackageRevision {
	pv, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).Get(context.Background(), variant, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []porchv1alpha1.PackageRevision
	for _, pr := range s.revisions(t) {
		if ref := metav1.GetControllerOf(&pr); ref != nil && ref.UID == pv.UID && !helper.LifecycleIsPublished(pr.Spec.Lifecycle) {
			out = append(out, pr)
		}
	}
	return out
}

func (s *scenario) revisions(t *testing.T) []porchv1alpha1.PackageRevision {
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Errorf("%s: list packagerevisions: %v", s.b.name, err)
		return nil
	}
	sort.Slice(prs.Items, func(i, j int) bool { return prs.Items[i].Name < prs.Items[j].Name })
	return prs.Items
}

func names(prs []porchv1alpha1.PackageRevision) []string {
	out := []string{}
	for _, pr := range prs {
		out = append(out, pr.Name)
	}
	return out
}

// checkInvariants checks what must hold after every step: each variant's
// downstream package has the drafts the step wants (one, or none once
// published), each owned by the variant, with its labels and annotations;
// every revision ever Published is still there, Published or
// DeletionProposed.
func (s *scenario) checkInvariants(t *testing.T, st step) {
	t.Helper()
	ctx := context.Background()
	revs := s.revisions(t)
	byName := map[string]porchv1alpha1.PackageRevision{}
	for _, pr := range revs {
		byName[pr.Name] = pr
		if helper.LifecycleIsPublished(pr.Spec.Lifecycle) && pr.Spec.Revision > 0 {
			s.published[pr.Name] = true
		}
	}
	for name := range s.published {
		if pr, ok := byName[name]; !ok || !helper.LifecycleIsPublished(pr.Spec.Lifecycle) {
			t.Errorf("%s: after %q: Published revision %s went missing (now %v)", s.b.name, st.name, name, lifecycleOf(byName, name))
		}
	}
	pvs, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range pvs.Items {
		where := pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package
		var drafts []string
		for _, pr := range revs {
			if pr.Spec.RepositoryName+"/"+pr.Spec.PackageName != where || helper.LifecycleIsPublished(pr.Spec.Lifecycle) {
				continue
			}
			drafts = append(drafts, pr.Name)
			ref := metav1.GetControllerOf(&pr)
			if ref == nil || ref.UID != pv.UID {
				t.Errorf("%s: after %q: draft %s of %s is not controlled by variant %s: %+v", s.b.name, st.name, pr.Name, where, pv.Name, pr.OwnerReferences)
			}
			for k, v := range pv.Spec.Labels {
				if pr.Labels[k] != v {
					t.Errorf("%s: after %q: draft %s lacks label %s=%s of variant %s: %v", s.b.name, st.name, pr.Name, k, v, pv.Name, pr.Labels)
				}
			}
			for k, v := range pv.Spec.Annotations {
				if pr.Annotations[k] != v {
					t.Errorf("%s: after %q: draft %s lacks annotation %s=%s of variant %s", s.b.name, st.name, pr.Name, k, v, pv.Name)
				}
			}
		}
		if want := st.want[pv.Name].drafts; len(drafts) != want {
			t.Errorf("%s: after %q: variant %s has drafts %v in %s, want %d", s.b.name, st.name, pv.Name, drafts, where, want)
		}
	}
}

func lifecycleOf(revs map[string]porchv1alpha1.PackageRevision, name string) string {
	if pr, ok := revs[name]; ok {
		return string(pr.Spec.Lifecycle)
	}
	return "gone"
}

// checkDraftContent checks that a variant's draft in workspace ws carries
// the variant's changes (package context, injected region) and want.
func (s *scenario) checkDraftContent(t *testing.T, variant, ws, want string) {
	t.Helper()
	files := s.draftFiles(t, variant, ws)
	for file, text := range map[string]string{
		"package-context.yaml": "team:",
		"region-config.yaml":   "region: us-east",
		"Kptfile":              "reason: RenderSuccess",
	} {
		if !strings.Contains(files[file], text) {
			t.Errorf("%s: %s's draft %s: %s lacks %q:\n%s", s.b.name, variant, ws, file, text, files[file])
		}
	}
	found := false
	for _, content := range files {
		found = found || strings.Contains(content, want)
	}
	if !found {
		t.Errorf("%s: %s's draft %s: no file contains %q", s.b.name, variant, ws, want)
	}
}

func (s *scenario) draftFiles(t *testing.T, variant, ws string) map[string]string {
	t.Helper()
	for _, pr := range s.draftsOf(t, variant) {
		if string(pr.Spec.WorkspaceName) == ws {
			prr, err := env.admin.PorchV1alpha1().PackageRevisionResources(s.ns).Get(context.Background(), pr.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return prr.Spec.Resources
		}
	}
	t.Fatalf("%s: variant %s has no draft in workspace %s: %v", s.b.name, variant, ws, names(s.draftsOf(t, variant)))
	return nil
}

// checkRenderFailure: the variants whose pipelines cannot render say which
// function failed; their drafts hold the variant's changes, marked
// Rendered=False; their render status tells the truth; a Warning event was
// recorded.
func (s *scenario) checkRenderFailure(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for name, said := range map[string]string{
		"broken":       "PackageVariant.broken.broken.0 (" + starlark + "): ",
		"needs-runner": "PackageVariant.needs-runner.set-annotations.0 (gcr.io/kpt-fn/set-annotations:v0.1.4)",
	} {
		pv, err := env.admin.ConfigV1alpha1().PackageVariants(s.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(pv.Status.Conditions, "Ready")
		if c == nil || !strings.Contains(c.Message, said) {
			t.Errorf("%s: %s's Ready condition does not name the function (%q): %s", s.b.name, name, said, describe(c))
		}
		if len(pv.Status.DownstreamTargets) != 1 || pv.Status.DownstreamTargets[0].RenderStatus.Err == "" {
			t.Errorf("%s: %s's downstreamTargets do not tell the render failed: %+v", s.b.name, name, pv.Status.DownstreamTargets)
		}
		files := s.draftFiles(t, name, "packagevariant-1")
		if !strings.Contains(files["Kptfile"], "reason: RenderFailed") || !strings.Contains(files["package-context.yaml"], "variant: "+name) {
			t.Errorf("%s: %s's draft does not hold the variant's changes marked Rendered=False:\n%s", s.b.name, name, files["Kptfile"])
		}
		events, err := env.kube.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Type == "Warning" && e.Reason == "RenderFailed" })
		if !warned {
			t.Errorf("%s: no RenderFailed Warning event on %s", s.b.name, name)
		}
	}
}

// checkCleanup: the deleted variants are gone with their finalizers done;
// "direct" (delete) left no draft and proposed the deletion of its
// published revision; "keeper" (orphan) left its revisions, released; the
// set's variants (delete) left no draft.
func (s *scenario) checkCleanup(t *testing.T) {
	t.Helper()
	for _, pr := range s.revisions(t) {
		where := pr.Spec.RepositoryName + "/" + pr.Spec.PackageName
		switch {
		case pr.Spec.RepositoryName == repoBlueprints || pr.Spec.Revision == porchv1alpha1.PlaceholderRevision:
		case where == repoEdge+"/keeper":
			if metav1.GetControllerOf(&pr) != nil {
				t.Errorf("%s: keeper's %s still has a controller: %+v", s.b.name, pr.Name, pr.OwnerReferences)
			}
			if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDeletionProposed {
				t.Errorf("%s: keeper (orphan) proposed the deletion of %s", s.b.name, pr.Name)
			}
		case where == repoEdge+"/broken" || where == repoEdge+"/needs-runner":
		default:
			if !helper.LifecycleIsPublished(pr.Spec.Lifecycle) {
				t.Errorf("%s: %s (%s) outlived its deleted variant", s.b.name, pr.Name, pr.Spec.Lifecycle)
			}
			if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished {
				t.Errorf("%s: the deletion of %s was not proposed", s.b.name, pr.Name)
			}
		}
	}
}
