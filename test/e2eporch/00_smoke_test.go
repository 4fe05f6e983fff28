//go:build e2e_porch

// The file name sorts before every other test file, so TestSmoke runs first
// (go test runs files in name order, tests in source order): when the
// plumbing is broken, the first failure says so, not a scenario's.

package e2eporch

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestSmoke proves the plumbing the scenarios stand on: the real Porch
// serves porch.kpt.dev through the cluster and keeps packages in its git
// server; the audit log records the requests, with their codes; the
// APIService switches to porchsim-apiserver (which then answers from its
// own state) and back to Porch.
func TestSmoke(t *testing.T) {
	ctx := context.Background()
	switchTo(t, "Porch", env.porchPort)
	ns := createNamespace(t, "e2e-smoke")

	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gitRepository(t, ns, "blueprints", env.porchGitURL+"/"+ns+"-blueprints")
	porchDraft, took := createInitDraft(t, ns, "blueprints", "app", "v1")
	reportf(t, "Porch: init draft %s created %s after its Repository", porchDraft, took.Round(time.Millisecond))
	if names := packageRevisionNames(t, ns); !slices.Contains(names, porchDraft) {
		t.Fatalf("Porch lists %v in %s, without the draft %s it created", names, ns, porchDraft)
	}

	events, _, err := env.audit.Since(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	ours := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.AdminUser), e2eutil.ByUserAgentPrefix(testUserAgent)))
	reportf(t, "the test's requests while creating the Repository and the draft through Porch:\n%s", ours)
	if got := ours.CountCode("create", "porch.kpt.dev", "packagerevisions", 201); got != 1 {
		t.Errorf("the audit log shows %d creates of packagerevisions with 201 by %s, want 1:\n%s", got, testUserAgent, ours)
	}
	if got := ours.CountCode("create", "config.porch.kpt.dev", "repositories", 201); got != 1 {
		t.Errorf("the audit log shows %d creates of repositories with 201 by %s, want 1:\n%s", got, testUserAgent, ours)
	}
	// Porch, as the admin too, keeps its own state in the cluster.
	porch := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.AdminUser), e2eutil.Not(e2eutil.ByUserAgentPrefix(testUserAgent)),
		e2eutil.Not(e2eutil.ByUserAgentPrefix("kubectl/"))))
	reportf(t, "other admin clients (the Porch server) meanwhile:\n%s", porch)

	// porchsim on a port of its own, then the APIService to it.
	servePorchsim(ctx, t, "smoke-porchsim")

	// porchsim mirrors the Repository but knows nothing of Porch's git: it
	// lists none of Porch's revisions, and takes a draft of its own.
	if names := packageRevisionNames(t, ns); slices.Contains(names, porchDraft) {
		t.Fatalf("after the switch to porchsim, %s still lists Porch's draft %s: %v", ns, porchDraft, names)
	}
	simDraft, took := createInitDraft(t, ns, "blueprints", "app", "v1-sim")
	reportf(t, "porchsim: init draft %s created %s after the switch", simDraft, took.Round(time.Millisecond))
	if names := packageRevisionNames(t, ns); !slices.Contains(names, simDraft) {
		t.Fatalf("porchsim lists %v in %s, without the draft %s it created", names, ns, simDraft)
	}

	switchTo(t, "Porch", env.porchPort)
	names := packageRevisionNames(t, ns)
	if !slices.Contains(names, porchDraft) || slices.Contains(names, simDraft) {
		t.Fatalf("after the switch back to Porch, %s lists %v; want Porch's %s and not porchsim's %s", ns, names, porchDraft, simDraft)
	}
}

// TestSmokeController proves the controller's side of the plumbing: it runs
// next to Porch (metrics and health on free ports, not Porch's :8080), as
// its ServiceAccount, becomes ready against the real Porch, shuts down
// cleanly on SIGTERM, and the audit log shows its requests under its own
// user.
func TestSmokeController(t *testing.T) {
	ctx := context.Background()
	switchTo(t, "Porch", env.porchPort)
	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := startController(t, "smoke-controller")
	c.waitReady(t)
	resp, err := http.Get(c.MetricsURL)
	if err != nil {
		t.Fatalf("get the controller's metrics: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", c.MetricsURL, resp.Status)
	}
	// Stopped here rather than at cleanup: its watches end, and a watch is
	// in the log (ResponseComplete) only once it has ended.
	if err := c.Stop(); err != nil {
		t.Fatalf("stop the controller: %v\n%s", err, c.Tail())
	}

	// Each informer reads its resource with a LIST and a WATCH, or with one
	// streaming watch (sendInitialEvents); which one depends on the server
	// (the apiserver answers 429 while a new CRD's watch cache fills, and
	// client-go falls back). Either way there is a watch. The process has
	// exited, but the apiserver ends a watch only when it notices: its event
	// may come after a marker.
	resources := []e2eutil.Request{
		{Group: "config.porch.kpt.dev", Resource: "packagevariants"},
		{Group: "config.porch.kpt.dev", Resource: "packagevariantsets"},
		{Group: "config.porch.kpt.dev", Resource: "repositories"},
		{Group: "porch.kpt.dev", Resource: "packagerevisions"},
	}
	var s e2eutil.Summary
	var missing []string
	var last error
	err = wait.PollUntilContextTimeout(ctx, poll, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, _, err := env.audit.Since(ctx, before)
		if err != nil {
			last = err
			return false, nil
		}
		s = e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser)))
		missing = nil
		for _, r := range resources {
			if s.Count("watch", r.Group, r.Resource) == 0 {
				missing = append(missing, r.Group+"/"+r.Resource)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("the audit log shows no watch by %s of %v: %v (last error: %v)\n%s", e2eutil.ControllerUser, missing, err, last, s)
	}
	reportf(t, "the controller's requests from start to SIGTERM, no variants:\n%s", s)
	// The ServiceAccount's RBAC (deploy/) covers everything it asked.
	for _, code := range []int32{401, 403} {
		if n := s.ByCode[code]; n > 0 {
			t.Errorf("%d of the controller's requests got %d:\n%s", n, code, s)
		}
	}
}

// createNamespace creates a namespace for one test. It is not deleted:
// deleting one runs Porch's deletion rules on every revision in it, which is
// a scenario of its own, and the cluster goes at the end of the run.
func createNamespace(t *testing.T, name string) string {
	t.Helper()
	_, err := env.kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// gitRepository registers a git repository of Porch's git server (created
// on first access) as a Repository; Porch creates the branch.
func gitRepository(t *testing.T, ns, name, url string) {
	t.Helper()
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{
			Type: configv1alpha1.RepositoryTypeGit,
			Git:  &configv1alpha1.GitRepository{Repo: url, Branch: "main", CreateBranch: true},
		},
	}
	if _, err := env.admin.ConfigV1alpha1().Repositories(ns).Create(context.Background(), repo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createInitDraft creates a Draft with an init task and returns its name and
// how long it took: the server learns of a new Repository through a watch
// and refuses revisions in it until then, so the create is retried.
func createInitDraft(t *testing.T, ns, repo, pkg, workspace string) (string, time.Duration) {
	t.Helper()
	draft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: pkg, RepositoryName: repo, WorkspaceName: porchv1alpha1.WorkspaceName(workspace),
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:     []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "e2e-porch smoke"}}},
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
		t.Fatalf("create the init draft %s/%s/%s: %v; last error: %v", repo, pkg, workspace, err, last)
	}
	return created.Name, time.Since(start)
}

// packageRevisionNames lists the package revisions of ns through the
// aggregated API, sorted.
func packageRevisionNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := env.admin.PorchV1alpha1().PackageRevisions(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list packagerevisions in %s: %v", ns, err)
	}
	names := []string{}
	for _, pr := range list.Items {
		names = append(names, pr.Name)
	}
	sort.Strings(names)
	return names
}
