package kptengine

import (
	"context"
	"path/filepath"
	"regexp"
	"testing"
)

// BenchmarkRender measures one render as Porch does it on every write of a
// draft: the example package (Deployment, Service, ConfigMap, package
// context) with its pipeline (starlark, built into Porch) and with the
// pipeline removed, which is what the fleet benchmark's package renders.
func BenchmarkRender(b *testing.B) {
	dir := filepath.Join("..", "..", "..", "examples", "packages", "app")
	files, err := readFiles(dir)
	if err != nil {
		b.Fatal(err)
	}
	noPipeline := map[string]string{}
	for name, text := range files {
		noPipeline[name] = text
	}
	noPipeline["Kptfile"] = regexp.MustCompile(`(?s)\npipeline:.*`).ReplaceAllString(files["Kptfile"], "\n")
	render := func(b *testing.B, files map[string]string) {
		res, err := Render(context.Background(), files, RenderOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Failed {
			b.Fatalf("render failed: %s", res.Message)
		}
	}
	for _, c := range []struct {
		name  string
		files map[string]string
	}{{"pipeline=none", noPipeline}, {"pipeline=starlark", files}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				render(b, c.files)
			}
		})
		// Renders of many drafts at once, as porchsim serves concurrent
		// writes: the starlark function runs one at a time (oneAtATime).
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					render(b, c.files)
				}
			})
		})
	}
}
