//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestCRDsKeepEverySampleField applies every sample of our CRDs (and
// Porch's Repository) and reads them back: every field the sample sets must
// come back unchanged, so no field is missing from a schema (the API server
// would prune it silently).
func TestCRDsKeepEverySampleField(t *testing.T) {
	ns := namespace(t, "e2e-samples")
	for _, sample := range []struct{ file, resource string }{
		{"repository.yaml", "repositories.config.porch.kpt.dev"},
		{"packagevariant.yaml", "packagevariants.config.porch.kpt.dev"},
		{"packagevariantset.yaml", "packagevariantsets.config.porch.kpt.dev"},
	} {
		t.Run(sample.file, func(t *testing.T) {
			path := filepath.Join(env.root, "deploy/samples", sample.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]interface{}
			if err := yaml.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			name := want["metadata"].(map[string]interface{})["name"].(string)
			// The samples name namespace default; put them in this test's.
			delete(want["metadata"].(map[string]interface{}), "namespace")
			moved, err := yaml.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			movedPath := filepath.Join(t.TempDir(), sample.file)
			if err := os.WriteFile(movedPath, moved, 0o644); err != nil {
				t.Fatal(err)
			}
			// --validate=ignore: the server must not refuse an unknown field but
			// prune it silently, which the comparison below catches.
			if _, err := kubectl("apply", "--validate=ignore", "-n", ns, "-f", movedPath); err != nil {
				t.Fatal(err)
			}
			out, err := kubectl("get", "-n", ns, sample.resource, name, "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]interface{}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			for _, missing := range missingFields("", want, got) {
				t.Errorf("%s: %s was not kept by the API server (missing from the CRD schema?)", sample.file, missing)
			}
		})
	}
}

// missingFields lists the paths of want whose value got lacks or differs.
func missingFields(path string, want, got interface{}) []string {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range w {
			out = append(out, missingFields(path+"."+k, v, g[k])...)
		}
		sort.Strings(out)
		return out
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var out []string
		for i := range w {
			out = append(out, missingFields(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		// YAML and JSON numbers decode alike through sigs.k8s.io/yaml.
		if !reflect.DeepEqual(fmt.Sprint(want), fmt.Sprint(got)) {
			return []string{fmt.Sprintf("%s (want %v, got %v)", path, want, got)}
		}
		return nil
	}
}

// TestSetOverRepositories: a set over labelled Repositories creates one
// variant and one draft per repository, kubectl shows the printer columns,
// and deleting the set garbage-collects its variants, whose deletion policy
// then deletes their drafts.
func TestSetOverRepositories(t *testing.T) {
	ns := namespace(t, "e2e-set")
	ctx := context.Background()
	publishUpstream(t, ns)
	for i := 1; i <= 3; i++ {
		repository(t, ns, fmt.Sprintf("edge-%d", i), true, map[string]string{"env": "prod", "region": fmt.Sprintf("r%d", i)})
	}
	repository(t, ns, "lab", true, map[string]string{"env": "lab"})

	ctrl := startController(t, "controller", false)
	set := &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: ns},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
				Template: &configv1alpha2.PackageVariantTemplate{
					LabelExprs: []configv1alpha2.MapExpr{{Key: ptr("region"), ValueExpr: ptr("repository.labels['region']")}},
				},
			}},
		},
	}
	if _, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctrl, "3 Ready variants with one draft each", func() (bool, string) {
		return fleetReady(ctx, ns, 3)
	})
	eventually(t, ctrl, "the set Ready with 3 Ready variants", func() (bool, string) {
		s, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(s.Status.Conditions, "Ready") && s.Status.ReadyVariants == 3,
			fmt.Sprintf("%+v", s.Status)
	})

	out, err := kubectl("get", "-n", ns, "packagevariantsets")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "DESIRED", "READY")
	wantRow(t, out, "edge", "3")
	out, err = kubectl("get", "-n", ns, "packagevariants")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "READY")
	wantRow(t, out, "edge-edge-1-app", "True")
	out, err = kubectl("get", "-n", ns, "packagerevisions")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "PACKAGE", "LIFECYCLE", "REPOSITORY")
	wantRow(t, out, "edge-1.app.packagevariant-1", "Draft")

	// Deleting the set: kube-controller-manager's garbage collector deletes
	// the variants it owns; each variant's finalizer runs its deletion
	// policy (delete: drafts are deleted).
	if _, err := kubectl("delete", "-n", ns, "packagevariantset", "edge", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctrl, "the variants garbage-collected and their drafts deleted", func() (bool, string) {
		pvs, err := env.admin.ConfigV1alpha1().PackageVariants(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		drafts := downstreamRevisions(ctx, ns)
		return len(pvs.Items) == 0 && len(drafts) == 0, fmt.Sprintf("%d variants, downstream revisions %v", len(pvs.Items), drafts)
	})
}

// TestLeaderHandover: two controller processes; killing the leader hands
// the Lease over within the lease duration, the new leader carries on
// (a repository labelled after the kill gets its variant and draft), and no
// downstream ever has a second draft.
func TestLeaderHandover(t *testing.T) {
	ns := namespace(t, "e2e-leader")
	ctx := context.Background()
	publishUpstream(t, ns)
	for i := 1; i <= 2; i++ {
		repository(t, ns, fmt.Sprintf("site-%d", i), true, map[string]string{"env": "prod"})
	}
	a := startController(t, "controller-a", true)
	b := startController(t, "controller-b", true)
	set := &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: "sites", Namespace: ns},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			}},
		},
	}
	if _, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, a, "2 Ready variants", func() (bool, string) { return fleetReady(ctx, ns, 2) })

	leader, standby := a, b
	if !strings.Contains(a.Output(), "Became leader") {
		leader, standby = b, a
	}
	if !strings.Contains(leader.Output(), "Became leader") {
		t.Fatalf("neither process leads\n%s\n%s", a.Tail(), b.Tail())
	}
	before := leaseHolder(t, ctx)
	leader.Kill()
	killed := time.Now()
	// Work that arrives while nobody leads.
	repository(t, ns, "site-3", true, map[string]string{"env": "prod"})

	eventually(t, standby, "the standby to take the Lease", func() (bool, string) {
		holder := leaseHolder(t, ctx)
		return holder != "" && holder != before, "holder " + holder
	})
	// When the standby acquired it, by the Lease itself (same clock: both
	// processes run here), not by this test's polling.
	lease, err := env.kube.CoordinationV1().Leases(controllerNS).Get(ctx, "variant-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.AcquireTime == nil {
		t.Fatalf("read the Lease: %v %+v", err, lease)
	}
	took := lease.Spec.AcquireTime.Sub(killed)
	// The standby polls the Lease every retry period, jittered by up to
	// leaderelection.JitterFactor (120 %): it may first see the old
	// leader's last renewal one such interval after the kill, counts the
	// lease duration from that sighting, and acquires at its first poll
	// after it expires: at most two jittered intervals past the duration.
	maxPoll := time.Duration((1 + leaderelection.JitterFactor) * float64(retryPeriod))
	if limit := leaseDuration + 2*maxPoll; took > limit {
		t.Errorf("handover took %s, want at most %s (lease duration %s plus retry periods)", took, limit, leaseDuration)
	}
	t.Logf("handover took %s (lease duration %s)", took, leaseDuration)
	eventually(t, standby, "3 Ready variants under the new leader", func() (bool, string) { return fleetReady(ctx, ns, 3) })
	for downstream, names := range downstreamRevisions(ctx, ns) {
		if len(names) != 1 {
			t.Errorf("%s has %d revisions, want 1: %v", downstream, len(names), names)
		}
	}
}

const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// startController runs the binary as the controller's ServiceAccount.
func startController(t *testing.T, name string, leaderElect bool) *e2eutil.Process {
	t.Helper()
	args := []string{
		"--kubeconfig", env.saKubeconfig,
		"--reconcilers", "*",
		"--health-probe-bind-address", "", "--metrics-bind-address", "",
		"--leader-election-namespace", controllerNS,
		"--leader-election-lease-duration", leaseDuration.String(),
		"--leader-election-renew-deadline", renewDeadline.String(),
		"--leader-election-retry-period", retryPeriod.String(),
		"--shutdown-grace-period", "5s",
	}
	if !leaderElect {
		args = append(args, "--leader-elect=false")
	}
	p, err := e2eutil.Start(name, filepath.Join(env.bin, "variant-controller"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.Exited() {
			_ = p.Stop()
		}
		if t.Failed() {
			t.Log(p.Tail())
		}
	})
	return p
}

func leaseHolder(t *testing.T, ctx context.Context) string {
	lease, err := env.kube.CoordinationV1().Leases(controllerNS).Get(ctx, "variant-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := env.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

func repository(t *testing.T, ns, name string, deployment bool, labels map[string]string) {
	t.Helper()
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: configv1alpha1.RepositorySpec{
			Type: configv1alpha1.RepositoryTypeGit, Content: "Package", Deployment: deployment,
			Git: &configv1alpha1.GitRepository{Repo: "https://git.example.com/" + name + ".git", Branch: "main"},
		},
	}
	if _, err := env.admin.ConfigV1alpha1().Repositories(ns).Create(context.Background(), repo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// publishUpstream makes blueprints/app revision 1 through Porch's API as a
// person would: a draft (init), its files, proposed, approved.
func publishUpstream(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	repository(t, ns, "blueprints", false, nil)
	prs := env.admin.PorchV1alpha1().PackageRevisions(ns)
	draft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: "app", RepositoryName: "blueprints", WorkspaceName: "v1",
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:     []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "e2e blueprint"}}},
		},
	}
	var created *porchv1alpha1.PackageRevision
	// Porch learns of the new Repository through its watch.
	if err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = prs.Create(ctx, draft, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("create the upstream draft: %v", err)
	}
	prr, err := env.admin.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prr.Spec.Resources["deployment.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n"
	if _, err := env.admin.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := prs.Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	if cur, err = prs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	if err := env.admin.PorchV1alpha1().RESTClient().Put().Namespace(ns).Resource("packagerevisions").
		Name(cur.Name).SubResource("approval").Body(cur).Do(ctx).Error(); err != nil {
		t.Fatalf("approve %s: %v", cur.Name, err)
	}
}

// fleetReady: n variants, all Ready, each with exactly one downstream
// revision.
func fleetReady(ctx context.Context, ns string, n int) (bool, string) {
	pvs, err := env.admin.ConfigV1alpha1().PackageVariants(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	ready := 0
	var notReady []string
	for _, pv := range pvs.Items {
		if meta.IsStatusConditionTrue(pv.Status.Conditions, "Ready") {
			ready++
		} else {
			notReady = append(notReady, fmt.Sprintf("%s: %+v", pv.Name, pv.Status.Conditions))
		}
	}
	revs := downstreamRevisions(ctx, ns)
	ok := len(pvs.Items) == n && ready == n && len(revs) == n
	for _, names := range revs {
		ok = ok && len(names) == 1
	}
	return ok, fmt.Sprintf("%d variants, %d Ready, downstream revisions %v; not Ready: %v", len(pvs.Items), ready, revs, notReady)
}

// downstreamRevisions maps repository/package to the revisions in it, for
// every repository but blueprints.
func downstreamRevisions(ctx context.Context, ns string) map[string][]string {
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return map[string][]string{"error": {err.Error()}}
	}
	out := map[string][]string{}
	for _, pr := range prs.Items {
		if pr.Spec.RepositoryName == "blueprints" {
			continue
		}
		key := pr.Spec.RepositoryName + "/" + pr.Spec.PackageName
		out[key] = append(out[key], pr.Name)
	}
	return out
}

// eventually polls cond until it holds or the timeout; on failure it shows
// the last state and the controller's output.
func eventually(t *testing.T, p *e2eutil.Process, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, timeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s; last state: %s\n%s", what, last, p.Tail())
	}
}

func wantColumns(t *testing.T, table string, columns ...string) {
	t.Helper()
	header := strings.Fields(strings.SplitN(table, "\n", 2)[0])
	for _, c := range columns {
		found := false
		for _, h := range header {
			found = found || h == c
		}
		if !found {
			t.Errorf("kubectl get shows no column %s:\n%s", c, table)
		}
	}
}

func wantRow(t *testing.T, table, name string, values ...string) {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != name {
			continue
		}
		for _, v := range values {
			if !strings.Contains(line, v) {
				t.Errorf("row %s lacks %q:\n%s", name, v, table)
			}
		}
		return
	}
	t.Errorf("kubectl get shows no row %s:\n%s", name, table)
}

func ptr[T any](v T) *T { return &v }
