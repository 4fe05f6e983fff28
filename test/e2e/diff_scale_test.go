//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// TestDiffScale measures what variantctl diff costs the cluster at fleet
// size (E2E_DIFF_SCALE variants, e.g. 1000; skipped when unset): a change
// that touches one variant (a new prod Repository), one that touches all
// of them (a CEL change of the package context), and, once every draft is
// published, the preview of the blueprint's next revision (--package), an
// upgrade for each. Each diff's stderr line (requests, wall time, heap) is
// logged for BENCHMARKS.md.
func TestDiffScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("E2E_DIFF_SCALE"))
	if n <= 0 {
		t.Skip("E2E_DIFF_SCALE is not set")
	}
	forEachBackend(t, func(t *testing.T, b *backend) { testDiffScale(t, b, n) })
}

func testDiffScale(t *testing.T, b *backend, n int) {
	ns := createNamespace(t, b.ns("e2e-diff-scale"))
	ctx := context.Background()
	publishUpstream(t, ns)
	for i := range n {
		repository(t, ns, fmt.Sprintf("site-%04d", i), true, map[string]string{"env": "prod", "region": fmt.Sprintf("r%d", i%7)})
	}
	ctrl := startController(t, "controller", ns)
	set := diffSet(ns)
	set.Spec.Upstream.Revision = 0
	set.Spec.Targets[0].Template.Injectors = nil
	start := time.Now()
	createSet(t, ctx, set)
	eventuallyWithin(t, ctrl, 30*time.Minute, fmt.Sprintf("the set settled on its %d variants", n), func() (bool, string) {
		s, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return int(s.Status.ReadyVariants) == n && s.Status.ObservedGeneration == s.Generation, fmt.Sprintf("%+v", s.Status)
	})
	t.Logf("the controller settled %d variants in %s", n, time.Since(start).Round(time.Second))
	reader := diffReader(t, ns)

	one := filepath.Join(t.TempDir(), "repo.yaml")
	repo := fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata: {name: site-new, namespace: %s, labels: {env: prod, region: r1}}
spec: {type: git, content: Package, deployment: true, git: {repo: "https://git.example.com/site-new.git", branch: main}}
`, ns)
	if err := os.WriteFile(one, []byte(repo), 0o644); err != nil {
		t.Fatal(err)
	}
	all := set.DeepCopy()
	all.Spec.Targets[0].Template.PackageContext.DataExprs = append(all.Spec.Targets[0].Template.PackageContext.DataExprs,
		configv1alpha2.MapExpr{Key: ptr.To("tier"), ValueExpr: ptr.To("'gold'")})
	scaledDiff(t, n, reader, "a change touching 1 variant (a new prod Repository)", "PackageVariants: 1 added, 0 changed, 0 removed", "-f="+one)
	scaledDiff(t, n, reader, fmt.Sprintf("a change touching all %d variants (a CEL change)", n),
		fmt.Sprintf("PackageVariants: 0 added, %d changed, 0 removed", n), writeSet(t, all))

	// The preview of the blueprint's next revision, over a fleet whose
	// drafts are all published: an upgrade for each variant, as a new
	// revision meets a fleet in production.
	began := time.Now()
	for _, pr := range downstreamDrafts(t, ns) {
		publish(t, ns, pr)
	}
	eventuallyWithin(t, ctrl, 30*time.Minute, fmt.Sprintf("the %d drafts published and the set settled", n), func() (bool, string) {
		s, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		drafts := len(downstreamDrafts(t, ns))
		return drafts == 0 && int(s.Status.ReadyVariants) == n && s.Status.ObservedGeneration == s.Generation, fmt.Sprintf("%d drafts; %+v", drafts, s.Status)
	})
	t.Logf("%d drafts published and settled in %s", n, time.Since(began).Round(time.Second))
	next := resourcesOf(t, ns, "blueprints.app.v1")
	next["deployment.yaml"] = strings.Replace(next["deployment.yaml"], "replicas: 1", "replicas: 2", 1)
	dir := filepath.Join(t.TempDir(), "app")
	if err := offline.WritePackage(dir, next); err != nil {
		t.Fatal(err)
	}
	scaledDiff(t, n, reader, fmt.Sprintf("the next revision of the blueprint of all %d variants (--package)", n),
		fmt.Sprintf("blueprints/app revision 2: %d variants upgraded now, 0 later, 0 not affected, 0 failing to render", n),
		"-n", ns, "--brief", "--package", "blueprints/app="+dir)
}

// scaledDiff runs variantctl diff as reader, wants exit 1 and want in its
// output, and logs its own count of requests with the process's wall time
// and peak RSS for BENCHMARKS.md.
func scaledDiff(t *testing.T, n int, reader e2eutil.User, what, want string, args ...string) {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd := exec.Command(filepath.Join(env.bin, "variantctl"), append([]string{"diff", "--kubeconfig", reader.Kubeconfig, "--timeout", "10m"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	wall := time.Since(began)
	if code := exitCode(err); code != 1 {
		t.Fatalf("%s: exit %d, want 1\n%s", what, code, stderr.String())
	}
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("%s: the output lacks %q; its last line:\n%s", what, want, lastLine(stdout.String()))
	}
	rss := "?"
	if cmd.ProcessState != nil {
		rss = maxRSS(cmd.ProcessState)
	}
	t.Logf("DIFF-SCALE %d variants, %s: %s; process wall %s, max RSS %s", n, what, strings.TrimSpace(stderr.String()), wall.Round(time.Millisecond), rss)
}

// downstreamDrafts names the Drafts of ns outside the blueprints.
func downstreamDrafts(t *testing.T, ns string) []string {
	t.Helper()
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pr := range prs.Items {
		if pr.Spec.RepositoryName != "blueprints" && pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
			out = append(out, pr.Name)
		}
	}
	return out
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
