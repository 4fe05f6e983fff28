//go:build e2e

// The file name sorts before every other test file, so the smoke tests run
// first (go test runs files in name order, tests in source order): when the
// plumbing is broken, the first failure says so, not a scenario's.

package e2e

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestSmoke proves the plumbing the scenarios stand on: each backend serves
// porch.kpt.dev through the cluster (a real Porch keeping its packages on
// the suite's git server); the audit log records the requests, with their
// codes; and a switch of the APIService really changes who answers: after
// it, only the new backend's draft is listed in the namespace every backend
// shares here, and after switching back only the first's again.
func TestSmoke(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "e2e-smoke")
	repository(t, ns, "blueprints", false, nil)
	drafts := map[string]string{} // backend -> its draft
	forEachBackend(t, func(t *testing.T, b *backend) {
		before, err := env.audit.Flush(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if others := packageRevisionNames(t, ns); len(others) > 0 {
			t.Fatalf("%s lists %v in %s before anything was made there through it: not the server it should be", b.name, others, ns)
		}
		draft, took := createDraft(t, ns, "blueprints", "app", "v1-"+b.name, initTask("e2e smoke"))
		drafts[b.name] = draft
		reportf(t, "%s: init draft %s created %s after the switch", b.name, draft, took.Round(time.Millisecond))
		if names := packageRevisionNames(t, ns); !slices.Equal(names, []string{draft}) {
			t.Fatalf("%s lists %v in %s, want only the draft %s it created", b.name, names, ns, draft)
		}

		events, _, err := env.audit.Since(ctx, before)
		if err != nil {
			t.Fatal(err)
		}
		ours := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.AdminUser), e2eutil.ByUserAgentPrefix(testUserAgent)))
		reportf(t, "the test's requests while creating the draft through %s:\n%s", b.name, ours)
		if got := ours.CountCode("create", "porch.kpt.dev", "packagerevisions", 201); got != 1 {
			t.Errorf("the audit log shows %d creates of packagerevisions with 201 by %s, want 1:\n%s", got, testUserAgent, ours)
		}
		// The backend, as the admin too, keeps its own state in the cluster.
		server := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.AdminUser), e2eutil.Not(e2eutil.ByUserAgentPrefix(testUserAgent)),
			e2eutil.Not(e2eutil.ByUserAgentPrefix("kubectl/"))))
		reportf(t, "other admin clients (the %s server) meanwhile:\n%s", b.name, server)
	})
	if len(env.backends) < 2 || t.Failed() {
		return
	}
	first := env.backends[0]
	t.Run("back to "+first.name, func(t *testing.T) {
		first.serve(t)
		if names := packageRevisionNames(t, ns); !slices.Equal(names, []string{drafts[first.name]}) {
			t.Fatalf("after the switch back to %s, %s lists %v; want only its draft %s", first.name, ns, names, drafts[first.name])
		}
	})
}

// TestSmokeController proves the controller's side of the plumbing on each
// backend: it runs as its ServiceAccount (metrics and health on free ports,
// not Porch's :8080), becomes ready, serves its metrics to the suite's
// scraper over HTTPS, shuts down cleanly on SIGTERM, and the
// audit log shows its requests under its own user, none refused.
func TestSmokeController(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		ns := createNamespace(t, b.ns("e2e-smoke-controller"))
		before, err := env.audit.Flush(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := startController(t, "controller", ns)
		c.waitReady(t)
		if _, err := c.scrapeMetrics(); err != nil {
			t.Fatalf("scrape the controller's metrics: %v", err)
		}
		// Stopped here rather than at cleanup: its watches end, and a watch
		// is in the log (ResponseComplete) only once it has ended.
		if err := c.Stop(); err != nil {
			t.Fatalf("stop the controller: %v\n%s", err, c.Tail())
		}

		// Each informer reads its resource with a LIST and a WATCH, or with
		// one streaming watch (sendInitialEvents); which one depends on the
		// server (the apiserver answers 429 while a new CRD's watch cache
		// fills, and client-go falls back). Either way there is a watch. The
		// process has exited, but the apiserver ends a watch only when it
		// notices: its event may come after a marker.
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
	})
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
