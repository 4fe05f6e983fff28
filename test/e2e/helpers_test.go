//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// The test kit of the suite: namespaces, Repositories and revisions made as
// a person makes them, the controller as a process, and waiting.

// createNamespace creates a namespace for one test. It is not deleted:
// deleting one runs Porch's deletion rules on every revision in it, which
// is a scenario of its own, and the cluster goes at the end of the run.
func createNamespace(t *testing.T, name string) string {
	t.Helper()
	_, err := env.kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// repository registers a git Repository whose repository lives on the
// suite's git server (created on first access; porchsim only mirrors the
// Repository), named after the namespace so that no two tests share one.
func repository(t *testing.T, ns, name string, deployment bool, labels map[string]string) {
	t.Helper()
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: configv1alpha1.RepositorySpec{
			Type: configv1alpha1.RepositoryTypeGit, Content: "Package", Deployment: deployment,
			Git: &configv1alpha1.GitRepository{Repo: env.git.RepoURL(ns + "-" + name), Branch: "main", CreateBranch: true},
		},
	}
	if _, err := env.admin.ConfigV1alpha1().Repositories(ns).Create(context.Background(), repo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createDraft creates a Draft as a person does and returns its name and how
// long it took: a server learns of a new Repository through a watch and
// refuses revisions in it until then, so the create is retried.
func createDraft(t *testing.T, ns, repo, pkg, ws string, task porchv1alpha1.Task) (string, time.Duration) {
	t.Helper()
	draft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: pkg, RepositoryName: repo, WorkspaceName: porchv1alpha1.WorkspaceName(ws),
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft, Tasks: []porchv1alpha1.Task{task},
		},
	}
	start := time.Now()
	var created *porchv1alpha1.PackageRevision
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), poll, timeout, true, func(ctx context.Context) (bool, error) {
		created, last = env.admin.PorchV1alpha1().PackageRevisions(ns).Create(ctx, draft, metav1.CreateOptions{})
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("create %s/%s/%s in %s: %v; last error: %v", repo, pkg, ws, ns, err, last)
	}
	return created.Name, time.Since(start)
}

// initTask is the task of a new package's first revision.
func initTask(description string) porchv1alpha1.Task {
	return porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: description}}
}

// editTask is the task of a new revision made from the Published revision
// source.
func editTask(source string) porchv1alpha1.Task {
	return porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{
		Source: &porchv1alpha1.PackageRevisionRef{Name: source}}}
}

// setFiles stores a revision's files: with replace, files are the whole
// package; otherwise they are added to (or replace) those it has.
func setFiles(t *testing.T, ns, name string, files map[string]string, replace bool) {
	t.Helper()
	prrs := env.admin.PorchV1alpha1().PackageRevisionResources(ns)
	prr, err := prrs.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replace || prr.Spec.Resources == nil {
		prr.Spec.Resources = map[string]string{}
	}
	maps.Copy(prr.Spec.Resources, files)
	if _, err := prrs.Update(context.Background(), prr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("store the files of %s/%s: %v", ns, name, err)
	}
}

// publish proposes a Draft and approves it, as a person does; a conflict
// with the controller's own write is retried with a fresh copy.
func publish(t *testing.T, ns, name string) {
	t.Helper()
	prs := env.admin.PorchV1alpha1().PackageRevisions(ns)
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), poll, timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := prs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		switch cur.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecyclePublished:
			return true, nil
		case porchv1alpha1.PackageRevisionLifecycleDraft:
			cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
			if cur, last = prs.Update(ctx, cur, metav1.UpdateOptions{}); last != nil {
				return false, nil
			}
		}
		cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
		last = env.admin.PorchV1alpha1().RESTClient().Put().Namespace(ns).Resource("packagerevisions").
			Name(cur.Name).SubResource("approval").Body(cur).Do(ctx).Error()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("publish %s/%s: %v; last error: %v", ns, name, err, last)
	}
}

// publishRevision publishes a revision of repo/pkg made by task, as a
// person does through Porch's API: a draft, its files stored (see setFiles),
// proposed, approved. It returns the revision's name.
func publishRevision(t *testing.T, ns, repo, pkg, ws string, task porchv1alpha1.Task, files map[string]string, replace bool) string {
	t.Helper()
	name, _ := createDraft(t, ns, repo, pkg, ws, task)
	setFiles(t, ns, name, files, replace)
	publish(t, ns, name)
	return name
}

// appDeployment is the blueprint's Deployment app with that many replicas.
func appDeployment(replicas int) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: %d\n", replicas)
}

// publishUpstream makes blueprints/app revision 1 in ns: a Deployment, with
// the package the init task made. It returns the revision's name.
func publishUpstream(t *testing.T, ns string) string {
	t.Helper()
	repository(t, ns, "blueprints", false, nil)
	return publishRevision(t, ns, "blueprints", "app", "v1", initTask("e2e blueprint"), map[string]string{
		"deployment.yaml": appDeployment(1),
	}, false)
}

// prodSet is the set name of blueprints/app over every Repository of ns
// labelled env: prod, each variant made from template (nil: none).
func prodSet(ns, name string, template *configv1alpha2.PackageVariantTemplate) *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
				Template:           template,
			}},
		},
	}
}

// createSet creates a set as the cluster's admin.
func createSet(t *testing.T, ctx context.Context, pvs *configv1alpha2.PackageVariantSet) {
	t.Helper()
	if _, err := env.admin.ConfigV1alpha2().PackageVariantSets(pvs.Namespace).Create(ctx, pvs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// controller is a variant-controller process and where it serves.
type controller struct {
	*e2eutil.Process
	// MetricsURL is its Prometheus endpoint
	// (https://127.0.0.1:<port>/metrics; scrapeMetrics reads it).
	MetricsURL string
	// ReadyzURL answers 200 once every informer cache has synced.
	ReadyzURL string
}

// startController runs variant-controller as its ServiceAccount, with both
// control loops, watching only namespace ns (the namespaces of other tests
// and of the other backend still hold variants), without leader election
// and with free ports for metrics and health (never the default :8081, nor
// :8080, which Porch holds); metrics over HTTPS, as deploy/ serves them,
// with the suite's certificate (env.metrics). args come last and override any of these
// (pflag: the last value wins). It is stopped when the test ends; its output
// is in the work directory and, when the test failed, in the test log.
func startController(t *testing.T, name, ns string, args ...string) *controller {
	t.Helper()
	metricsPort, err := e2eutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	healthPort, err := e2eutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{
		"--kubeconfig", env.saKubeconfig,
		"--reconcilers", "*",
		"--namespace", ns,
		"--leader-elect=false",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--metrics-cert-dir", env.metrics.certDir,
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", healthPort),
		"--shutdown-grace-period", "5s",
	}, args...)
	logName := strings.ReplaceAll(t.Name(), "/", "_") + "_" + name + ".log"
	p, err := e2eutil.StartWith(e2eutil.ProcessOptions{LogFile: filepath.Join(env.workDir, logName)},
		name, filepath.Join(env.bin, "variant-controller"), full...)
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{
		Process:    p,
		MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", metricsPort),
		ReadyzURL:  fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort),
	}
	t.Cleanup(func() {
		// One the test stopped or killed itself was checked there.
		if !p.Exited() {
			if err := p.Stop(); err != nil {
				t.Errorf("stop %s: %v", name, err)
			}
		}
		if t.Failed() {
			t.Log(p.Tail())
		}
	})
	return c
}

// waitReady waits until the controller's informer caches have synced.
func (c *controller) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, timeout, true, func(context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("%s exited", c.Name)
		}
		resp, err := client.Get(c.ReadyzURL)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("wait for %s to be ready (%s): %v; last: %s\n%s", c.Name, c.ReadyzURL, err, last, c.Tail())
	}
}

// eventually polls cond until it holds or the timeout; on failure it shows
// the last state and the process's output.
func eventually(t *testing.T, p interface{ Tail() string }, what string, cond func() (bool, string)) {
	t.Helper()
	eventuallyWithin(t, p, timeout, what, cond)
}

// eventuallyWithin is eventually with another deadline (a fleet takes
// minutes to converge).
func eventuallyWithin(t *testing.T, p interface{ Tail() string }, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, within, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s; last state: %s\n%s", within, what, last, p.Tail())
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
// every repository but blueprints; Porch's placeholder revisions (the
// branch's view of a package, revision -1) are left out.
func downstreamRevisions(ctx context.Context, ns string) map[string][]string {
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return map[string][]string{"error": {err.Error()}}
	}
	out := map[string][]string{}
	for _, pr := range prs.Items {
		if pr.Spec.RepositoryName == "blueprints" || pr.Spec.Revision == porchv1alpha1.PlaceholderRevision {
			continue
		}
		key := pr.Spec.RepositoryName + "/" + pr.Spec.PackageName
		out[key] = append(out[key], pr.Name)
	}
	return out
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

func mustContain(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the output does not contain %q:\n%s", w, text)
		}
	}
}

// waitEstablished waits until the CRD name is Established. kubectl wait
// does not do it right after the apply: it fails at once on a CRD that
// has no status.conditions yet.
func waitEstablished(name string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		out, err := env.kubectl.Run("get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err == nil && strings.TrimSpace(out) == "True" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not Established within %s: %q %v", name, within, out, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
