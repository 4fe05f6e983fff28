package fleetdiff

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// BenchmarkPreview previews publishing blueprints/app revision 2 over a
// set of 1,000 variants (every draft published), read as diff reads a
// cluster: without a rollout (every variant upgraded now) and with one
// that holds all but a canary wave back (the second run with every wave
// open makes their drafts too). It reports the files read per variant:
// each revision at most once, the blueprint's two revisions included.
func BenchmarkPreview(b *testing.B) {
	const n = 1000
	klog.SetOutput(nilWriter{})
	klog.LogToStderr(false)
	for _, withRollout := range []bool{false, true} {
		b.Run(fmt.Sprintf("variants=%d/rollout=%t", n, withRollout), func(b *testing.B) {
			ctx := context.Background()
			live, files := previewFleetOf(b, ctx, n, withRollout)
			v2 := copyMap(files)
			v2["deployment.yaml"] = strings.Replace(v2["deployment.yaml"], "replicas: 1", "replicas: 2", 1)
			b.ResetTimer()
			for range b.N {
				d, stats, err := Run(ctx, live, &input.Input{}, Options{Namespace: "fleet", Timeout: 10 * time.Minute,
					Upgrades: []Upgrade{{Repo: "blueprints", Package: "app", Files: v2, Dir: "v2"}}})
				if err != nil {
					b.Fatal(err)
				}
				if d.NotSettled != "" {
					b.Fatalf("not settled: %s", d.NotSettled)
				}
				p := d.Previews[0]
				now, later := len(p.Now), len(p.Later)
				if now+later != n || (withRollout && later != n-1) {
					b.Fatalf("%d now and %d later, want %d in all (%d later with the rollout)", now, later, n, n-1)
				}
				for _, v := range p.Later {
					if len(v.Revisions) != 1 {
						b.Fatalf("%s: %d revisions for when its wave opens, want 1", v.Name, len(v.Revisions))
					}
				}
				b.ReportMetric(float64(len(stats.FilesRead))/n, "files-read/variant")
			}
		})
	}
}

type nilWriter struct{}

func (nilWriter) Write(p []byte) (int, error) { return len(p), nil }

// previewFleetOf is a set over n deployment repositories following
// blueprints/app, settled with every draft published, read as a cluster.
func previewFleetOf(tb testing.TB, ctx context.Context, n int, withRollout bool) (*input.Input, map[string]string) {
	tb.Helper()
	var b strings.Builder
	for i := range n {
		tier := "main"
		if i == 0 {
			tier = "canary"
		}
		b.WriteString(repositoryWithLabels(fmt.Sprintf("site-%04d", i), "env: prod, tier: "+tier) + "---\n")
	}
	b.WriteString(edgeSet(tb, withRollout))
	var in input.Input
	if errs := in.Read("fleet.yaml", []byte(b.String())); len(errs) > 0 {
		tb.Fatal(errs)
	}
	files := testApp(tb)
	in.AddPublished("fleet", "blueprints", "app", 1, files, input.Source{File: "../testdata/app"})
	return settledAndPublished(tb, ctx, &in), files
}
