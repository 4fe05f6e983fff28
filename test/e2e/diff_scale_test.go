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

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// TestDiffScale measures what variantctl diff costs the cluster at fleet
// size (E2E_DIFF_SCALE variants, e.g. 1000; skipped when unset): a change
// that touches one variant (a new prod Repository) and one that touches
// all of them (a CEL change of the package context). Each diff's stderr
// line (requests, wall time, heap) is logged for BENCHMARKS.md.
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
	if _, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
		configv1alpha2.MapExpr{Key: ptr("tier"), ValueExpr: ptr("'gold'")})
	for _, c := range []struct {
		what string
		file string
		want string
	}{
		{"a change touching 1 variant (a new prod Repository)", "-f=" + one, "PackageVariants: 1 added, 0 changed, 0 removed"},
		{fmt.Sprintf("a change touching all %d variants (a CEL change)", n), writeSet(t, all), fmt.Sprintf("PackageVariants: 0 added, %d changed, 0 removed", n)},
	} {
		var stdout, stderr strings.Builder
		cmd := exec.Command(filepath.Join(env.bin, "variantctl"), "diff", "--kubeconfig", reader.Kubeconfig, "--timeout", "10m", c.file)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		began := time.Now()
		err := cmd.Run()
		wall := time.Since(began)
		if code := exitCode(err); code != 1 {
			t.Fatalf("%s: exit %d, want 1\n%s", c.what, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), c.want) {
			t.Errorf("%s: the summary is not %q:\n%s", c.what, c.want, lastLine(stdout.String()))
		}
		rss := "?"
		if cmd.ProcessState != nil {
			rss = maxRSS(cmd.ProcessState)
		}
		t.Logf("DIFF-SCALE %d variants, %s: %s; process wall %s, max RSS %s", n, c.what, strings.TrimSpace(stderr.String()), wall.Round(time.Millisecond), rss)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
