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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestCRDsKeepEverySampleField applies every sample of our CRDs (and
// Porch's Repository) and reads them back: every field the sample sets must
// come back unchanged, so no field is missing from a schema (the API server
// would prune it silently).
func TestCRDsKeepEverySampleField(t *testing.T) {
	ns := createNamespace(t, "e2e-samples")
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
			if _, err := env.kubectl.Run("apply", "--validate=ignore", "-n", ns, "-f", movedPath); err != nil {
				t.Fatal(err)
			}
			out, err := env.kubectl.Run("get", "-n", ns, sample.resource, name, "-o", "json")
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
// variant and one draft per repository, kubectl shows the printer columns;
// it follows its repositories (a repository labelled later gets a variant,
// one relabelled away loses its variant and draft, and an event that
// repeats on the set is counted on one Event); deleting the set
// garbage-collects its variants, whose deletion policy then deletes their
// drafts.
func TestSetOverRepositories(t *testing.T) {
	forEachBackend(t, testSetOverRepositories)
}

func testSetOverRepositories(t *testing.T, b *backend) {
	ns := createNamespace(t, b.ns("e2e-set"))
	ctx := context.Background()
	publishUpstream(t, ns)
	for i := 1; i <= 3; i++ {
		repository(t, ns, fmt.Sprintf("edge-%d", i), true, map[string]string{"env": "prod", "region": fmt.Sprintf("r%d", i)})
	}
	repository(t, ns, "lab", true, map[string]string{"env": "lab"})

	ctrl := startController(t, "controller", ns)
	createSet(t, ctx, prodSet(ns, "edge", &configv1alpha2.PackageVariantTemplate{
		LabelExprs: []configv1alpha2.MapExpr{{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")}},
	}))
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

	out, err := env.kubectl.Run("get", "-n", ns, "packagevariantsets")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "DESIRED", "READY")
	wantRow(t, out, "edge", "3")
	out, err = env.kubectl.Run("get", "-n", ns, "packagevariants")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "READY", "PUBLISHED")
	wantRow(t, out, "edge-edge-1-app", "True", "WaitingForApproval")
	out, err = env.kubectl.Run("get", "-n", ns, "packagerevisions")
	if err != nil {
		t.Fatal(err)
	}
	wantColumns(t, out, "NAME", "PACKAGE", "LIFECYCLE", "REPOSITORY")
	wantRow(t, out, "edge-1.app.packagevariant-1", "Draft")

	setFollowsRepositories(t, ctx, ctrl, ns)

	// Deleting the set: kube-controller-manager's garbage collector deletes
	// the variants it owns; each variant's finalizer runs its deletion
	// policy (delete: drafts are deleted).
	if _, err := env.kubectl.Run("delete", "-n", ns, "packagevariantset", "edge", "--wait=false"); err != nil {
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

// setFollowsRepositories: two repositories labelled one after the other
// each get their variant (the set's event "Created 1 PackageVariant(s)"
// twice: client-go's event correlator patches the first Event's count), and
// a repository relabelled away loses its variant (the set deletes it) and
// its draft (the variant's deletion policy).
func setFollowsRepositories(t *testing.T, ctx context.Context, ctrl *controller, ns string) {
	t.Helper()
	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// edge-1 to edge-3 have theirs: edge-i is the i-th.
	for i := 4; i <= 5; i++ {
		repository(t, ns, fmt.Sprintf("edge-%d", i), true, map[string]string{"env": "prod", "region": fmt.Sprintf("r%d", i)})
		eventually(t, ctrl, fmt.Sprintf("%d Ready variants once edge-%d is labelled", i, i), func() (bool, string) {
			return fleetReady(ctx, ns, i)
		})
	}
	repo, err := env.admin.ConfigV1alpha1().Repositories(ns).Get(ctx, "edge-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repo.Labels["env"] = "retired"
	if _, err := env.admin.ConfigV1alpha1().Repositories(ns).Update(ctx, repo, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctrl, "edge-1's variant and draft gone once it is relabelled", func() (bool, string) {
		ok, state := fleetReady(ctx, ns, 4)
		_, gone := downstreamRevisions(ctx, ns)["edge-1/app"]
		return ok && !gone, state
	})

	eventually(t, ctrl, `the set's event "Created 1 PackageVariant(s)" counted twice`, func() (bool, string) {
		events, err := env.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PackageVariantSet,involvedObject.name=edge"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Reason == "Created" && e.Message == "Created 1 PackageVariant(s)" && e.Count == 2 {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s %q x%d", e.Reason, e.Message, e.Count))
		}
		return false, fmt.Sprintf("the set's events: %v", seen)
	})
	events, _, err := env.audit.Since(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	s := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser)))
	reportf(t, "the controller's requests while the set followed its repositories (2 labelled, 1 relabelled away):\n%s", s)
	if got := s.CountCode("delete", "config.porch.kpt.dev", "packagevariants", 200); got != 1 {
		t.Errorf("the audit log shows %d deletes of packagevariants by the controller answered 200, want 1 (edge-1's):\n%s", got, s)
	}
}

// TestLeaderHandover: two controller processes; killing the leader hands
// the Lease over within the lease duration, the new leader carries on
// (a repository labelled after the kill gets its variant and draft), and no
// downstream ever has a second draft.
func TestLeaderHandover(t *testing.T) {
	forEachBackend(t, testLeaderHandover)
}

func testLeaderHandover(t *testing.T, b *backend) {
	ns := createNamespace(t, b.ns("e2e-leader"))
	ctx := context.Background()
	prodSites(t, ns)
	ca := startLeaderElecting(t, "controller-a", ns)
	cb := startLeaderElecting(t, "controller-b", ns)
	createProdSet(t, ctx, ns)
	eventually(t, ca, "2 Ready variants", func() (bool, string) { return fleetReady(ctx, ns, 2) })

	leader, standby := ca, cb
	if !strings.Contains(ca.Output(), "Became leader") {
		leader, standby = cb, ca
	}
	if !strings.Contains(leader.Output(), "Became leader") {
		t.Fatalf("neither process leads\n%s\n%s", ca.Tail(), cb.Tail())
	}
	before := leaseHolder(t, ctx)
	leader.Kill()
	killed := time.Now()
	// Work that arrives while nobody leads.
	repository(t, ns, "site-3", true, map[string]string{"env": "prod"})

	waitTakeover(t, ctx, standby, before, killed, "the kill")
	eventually(t, standby, "3 Ready variants under the new leader", func() (bool, string) { return fleetReady(ctx, ns, 3) })
	for downstream, names := range downstreamRevisions(ctx, ns) {
		if len(names) != 1 {
			t.Errorf("%s has %d revisions, want 1: %v", downstream, len(names), names)
		}
	}
}

// prodSites publishes blueprints/app and makes the deployment
// repositories site-1 and site-2, labelled env=prod.
func prodSites(t *testing.T, ns string) {
	t.Helper()
	publishUpstream(t, ns)
	for i := 1; i <= 2; i++ {
		repository(t, ns, fmt.Sprintf("site-%d", i), true, map[string]string{"env": "prod"})
	}
}

// createProdSet creates the set "sites": blueprints/app in every
// Repository labelled env=prod.
func createProdSet(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	createSet(t, ctx, prodSet(ns, "sites", nil))
}

// waitTakeover waits for standby to hold the Lease oldHolder held, and
// checks that it acquired it, by the Lease's own acquireTime (same clock:
// every process runs here), within the lease duration of since (when the
// old leader stopped renewing: killed, or its permission revoked). The
// standby polls the Lease every retry period, jittered by up to
// leaderelection.JitterFactor (120 %): it may first see the old leader's
// last renewal one such interval late, counts the lease duration from that
// sighting, and acquires at its first poll after it expires: at most two
// jittered intervals past the duration.
func waitTakeover(t *testing.T, ctx context.Context, standby *controller, oldHolder string, since time.Time, event string) {
	t.Helper()
	eventually(t, standby, "the standby to take the Lease", func() (bool, string) {
		holder := leaseHolder(t, ctx)
		return holder != "" && holder != oldHolder, "holder " + holder
	})
	lease, err := env.kube.CoordinationV1().Leases(controllerNS).Get(ctx, "variant-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.AcquireTime == nil {
		t.Fatalf("read the Lease: %v %+v", err, lease)
	}
	took := lease.Spec.AcquireTime.Sub(since)
	maxPoll := time.Duration((1 + leaderelection.JitterFactor) * float64(retryPeriod))
	if limit := leaseDuration + 2*maxPoll; took > limit {
		t.Errorf("the standby took the Lease %s after %s, want at most %s (lease duration %s plus retry periods)", took, event, limit, leaseDuration)
	}
	t.Logf("the standby took the Lease %s after %s (lease duration %s)", took, event, leaseDuration)
}

const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// startLeaderElecting runs a controller that leads only while it holds the
// Lease, with short lease timings.
func startLeaderElecting(t *testing.T, name, ns string, args ...string) *controller {
	t.Helper()
	return startController(t, name, ns, append([]string{
		"--leader-elect=true",
		"--leader-election-namespace", controllerNS,
		"--leader-election-lease-duration", leaseDuration.String(),
		"--leader-election-renew-deadline", renewDeadline.String(),
		"--leader-election-retry-period", retryPeriod.String(),
	}, args...)...)
}

func leaseHolder(t *testing.T, ctx context.Context) string {
	lease, err := env.kube.CoordinationV1().Leases(controllerNS).Get(ctx, "variant-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
