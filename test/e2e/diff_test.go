//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/test/e2eutil"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// The blueprint of the diff test has an injection point: the region's
// settings ConfigMap.
var diffSettings = ctrlfixture.InjectionPoint("settings", "region")

// TestDiff runs variantctl diff, as a ServiceAccount that may only read,
// against a settled fleet the controller made on each backend, for every
// case of the issue, and the fleet unchanged afterwards. On a real Porch the
// live fleet is what Porch serves (its placeholder revisions, its tasks, its
// rendering of the drafts), so that is where the offline run meets the
// state it models. Each diff's own count of its requests goes into the
// report next to what the audit log saw of the reader, which must be reads
// only.
func TestDiff(t *testing.T) {
	forEachBackend(t, testDiff)
}

func testDiff(t *testing.T, b *backend) {
	ctx := context.Background()
	s, v1 := diffFleet(t, b, "diff")
	ns := s.ns
	publishRevision(t, ns, repoBlueprints, "app", "v2", editTask(v1), map[string]string{
		"deployment.yaml": appDeployment(2),
		"settings.yaml":   diffSettings,
	}, false)
	set := diffSet(ns)
	createSet(t, ctx, set)
	s.waitFor(t, step{name: "2 Ready variants with one draft each", want: map[string]readyWant{"edge-edge-1-app": ready, "edge-edge-2-app": ready}})
	// The expectations below name the revisions the controller made, and
	// those the offline run predicts, <repo>.<package>.<workspace>: make
	// sure the backend names them so, or every subtest would fail for it.
	for variant, want := range map[string]string{"edge-edge-1-app": "edge-1.app.packagevariant-1", "edge-edge-2-app": "edge-2.app.packagevariant-1"} {
		if got := names(s.draftsOf(t, variant)); len(got) != 1 || got[0] != want {
			t.Fatalf("variant %s's drafts are %v on %s, want [%s]", variant, got, b.name, want)
		}
	}
	s.publishDraftOf(t, "edge-edge-1-app")
	var last string
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		if s.ctrl.Exited() {
			return false, fmt.Errorf("the controller exited")
		}
		cur, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		pr, err := env.admin.PorchV1alpha1().PackageRevisions(ns).Get(ctx, "edge-1.app.packagevariant-1", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("set status %+v; edge-1's revision %s", cur.Status, pr.Spec.Lifecycle)
		return cur.Status.ReadyVariants == 2 && cur.Status.ObservedGeneration == cur.Generation &&
			pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished, nil
	})
	if err != nil {
		t.Fatalf("the set did not settle on its 2 variants: %v; last: %s; revisions %v\n%s", err, last, names(s.revisions(t)), s.ctrl.Tail())
	}
	// Porch makes the placeholder edge-1.app.main at the publish; the
	// controller saw it and the publish, and must be done with both before
	// the fleet's versions are taken.
	s.waitFor(t, step{name: "edge-1's draft published", want: map[string]readyWant{"edge-edge-1-app": published, "edge-edge-2-app": ready}})
	reader := diffReader(t, ns)
	before := fleetVersions(t, ns)

	t.Run("its own manifest: no difference", func(t *testing.T) {
		out, _ := runDiff(t, reader, 0, writeSet(t, set))
		mustContain(t, out, "No difference")
	})
	t.Run("the selector gains a repository", func(t *testing.T) {
		changed := set.DeepCopy()
		changed.Spec.Targets[0].RepositorySelector.LabelSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}}}}
		out, _ := runDiff(t, reader, 1, writeSet(t, changed))
		mustContain(t, out, "+ PackageVariant "+ns+"/edge-edge-3-app (set edge): added",
			"+ PackageRevision "+ns+"/edge-3.app.packagevariant-1: created Draft (clone)",
			"+  region: r3", "PackageVariants: 1 added, 0 changed, 0 removed", "1 created (1 clone, 0 edit, 0 upgrade)")
	})
	t.Run("a CEL change of the package context", func(t *testing.T) {
		changed := set.DeepCopy()
		changed.Spec.Targets[0].Template.PackageContext.DataExprs = append(changed.Spec.Targets[0].Template.PackageContext.DataExprs,
			configv1alpha2.MapExpr{Key: ptr.To("tier"), ValueExpr: ptr.To("repository.labels['region'] == 'r1' ? 'gold' : 'silver'")})
		out, _ := runDiff(t, reader, 1, writeSet(t, changed))
		mustContain(t, out, "+  tier: gold", "+  tier: silver", "PackageVariants: 0 added, 2 changed, 0 removed")
	})
	t.Run("the upstream pin moves to revision 2", func(t *testing.T) {
		changed := set.DeepCopy()
		changed.Spec.Upstream.Revision = 2
		out, _ := runDiff(t, reader, 1, writeSet(t, changed))
		mustContain(t, out, "+ PackageRevision "+ns+"/edge-1.app.packagevariant-2: created Draft (upgrade)",
			"files against edge-1.app.packagevariant-1 (Published 1)", "+  replicas: 2",
			"in place of edge-2.app.packagevariant-1")
	})
	t.Run("deleting the set", func(t *testing.T) {
		out, _ := runDiff(t, reader, 1, "--delete", writeSet(t, set))
		mustContain(t, out, "- PackageVariantSet "+ns+"/edge: removed",
			"! PackageRevision "+ns+"/edge-1.app.packagevariant-1: proposed for deletion (Published 1",
			"- PackageRevision "+ns+"/edge-2.app.packagevariant-1: deleted (was Draft)")
		// Porch's placeholder is the branch's view of the package, not a
		// revision the variant owns: the controller leaves it alone.
		if strings.Contains(out, "edge-1.app.main") {
			t.Errorf("the diff acts on Porch's placeholder edge-1.app.main:\n%s", out)
		}
	})
	t.Run("an injector naming a missing object", func(t *testing.T) {
		changed := set.DeepCopy()
		changed.Spec.Targets[0].Template.Injectors[0].NameExpr = ptr.To("'missing-' + repository.labels['region']")
		out, _ := runDiff(t, reader, 1, writeSet(t, changed))
		mustContain(t, out, "Ready: True NoErrors", "blocks publishing: config.injection.ConfigMap.settings: False NoResourceSelected",
			`no v1 ConfigMap named \"missing-r2\"`)
	})
	t.Run("-o json", func(t *testing.T) {
		changed := set.DeepCopy()
		changed.Spec.Upstream.Revision = 2
		out, _ := runDiff(t, reader, 1, "-o", "json", writeSet(t, changed))
		var d fleetdiff.Diff
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if d.Summary.Upgrades != 1 || d.Summary.RevisionsReplaced != 1 {
			t.Errorf("summary %+v, want 1 upgrade and 1 replaced draft", d.Summary)
		}
	})
	t.Run("a reader without rights", func(t *testing.T) {
		_, errOut := runDiff(t, serviceAccount(t, ns, "nobody"), 2, writeSet(t, set))
		mustContain(t, errOut, "the cluster refused to list", "needs get and list on")
	})

	if after := fleetVersions(t, ns); !cmp.Equal(before, after) {
		t.Errorf("the diffs changed the fleet (resourceVersions, -before +after):\n%s", cmp.Diff(before, after))
	}
}

// diffFleet makes the fleet the diff tests start from, in a new namespace
// named after name: the blueprints repository; deployment repositories
// edge-1 and edge-2 (env prod, regions r1 and r2) and edge-3 (staging,
// r3); blueprints/app revision 1, a Deployment of 1 replica and the
// settings injection point; each region's settings ConfigMap; and a
// running controller. It returns the scenario and revision 1's name.
func diffFleet(t *testing.T, b *backend, name string) (*scenario, string) {
	t.Helper()
	ns := createNamespace(t, b.ns(name))
	s := &scenario{b: b, ns: ns, published: map[string]bool{}}
	repository(t, ns, repoBlueprints, false, nil)
	repository(t, ns, "edge-1", true, map[string]string{"env": "prod", "region": "r1"})
	repository(t, ns, "edge-2", true, map[string]string{"env": "prod", "region": "r2"})
	repository(t, ns, "edge-3", true, map[string]string{"env": "staging", "region": "r3"})
	v1 := publishRevision(t, ns, repoBlueprints, "app", "v1", initTask("e2e blueprint"), map[string]string{
		"deployment.yaml": appDeployment(1),
		"settings.yaml":   diffSettings,
	}, false)
	for _, r := range []string{"r1", "r2", "r3"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings-" + r, Namespace: ns}, Data: map[string]string{"region": r}}
		if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s.ctrl = startController(t, "controller", ns)
	s.ctrl.waitReady(t)
	return s, v1
}

// requestsSent is variantctl diff's own count of its requests, from its
// summary line on stderr.
var requestsSent = regexp.MustCompile(`\((\d+) requests to the cluster\)`)

// runDiff runs the variantctl binary as u and checks its exit status; it
// returns stdout and stderr. It reports variantctl's summary line (how many
// requests it sent; for a failed run, its last line) and the requests the
// audit log saw of u meanwhile, which must all be reads.
func runDiff(t *testing.T, u e2eutil.User, want int, args ...string) (string, string) {
	t.Helper()
	ctx := context.Background()
	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	cmd := exec.Command(filepath.Join(env.bin, "variantctl"), append([]string{"diff", "--kubeconfig", u.Kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitCode(cmd.Run())
	events, _, err := env.audit.Since(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	ours := e2eutil.Select(events, e2eutil.ByUser(u.Name))
	sum := e2eutil.Summarize(ours)
	line := summaryLine(stderr.String())
	// The two counts should agree; when they do not, the report says so
	// (a retry, a request the audit policy leaves out) rather than the
	// test failing: what a diff costs the cluster is a figure to read.
	counted := "none (no summary line)"
	if m := requestsSent.FindStringSubmatch(line); m != nil {
		counted = m[1]
	}
	reportf(t, "exit %d: %s\nrequests: variantctl counted %s, the audit log shows %d by %s:\n%s", code, line, counted, sum.Total, u.Name, sum)
	if writes := e2eutil.Select(ours, e2eutil.Not(e2eutil.ByVerb("get", "list", "watch"))); len(writes) > 0 {
		t.Errorf("variantctl diff sent %d requests that are not reads:\n%s", len(writes), e2eutil.Summarize(writes))
	}
	if code != want {
		t.Fatalf("variantctl diff %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout.String(), stderr.String())
	}
	t.Logf("variantctl diff %v:\n%s%s", args, stdout.String(), stderr.String())
	return stdout.String(), stderr.String()
}

// summaryLine is variantctl diff's line on what it read and how many
// requests that took, or, when it stopped before (an error), its last
// line.
func summaryLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "read ") {
			return l
		}
	}
	return lines[len(lines)-1]
}

func diffSet(ns string) *configv1alpha2.PackageVariantSet { return e2eutil.DiffSet(ns) }

func writeSet(t *testing.T, s *configv1alpha2.PackageVariantSet) string {
	t.Helper()
	f, err := e2eutil.WriteManifest(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func exitCode(err error) int { return e2eutil.ExitCode(err) }

// diffReader may only read what variantctl diff reads (e2eutil.DiffReader).
func diffReader(t *testing.T, ns string) e2eutil.User {
	t.Helper()
	u, err := e2eutil.DiffReader(context.Background(), env.kube, env.adminConfig, ns, env.workDir)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func serviceAccount(t *testing.T, ns, name string) e2eutil.User {
	t.Helper()
	u, err := e2eutil.ServiceAccountUser(context.Background(), env.kube, env.adminConfig, ns, name, env.workDir)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func fleetVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	v, err := e2eutil.FleetVersions(context.Background(), env.admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
