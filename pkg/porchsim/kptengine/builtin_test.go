package kptengine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestIsBuiltin checks the image strings Porch's FunctionConfigs build in
// (goExecutor tags, with and without the catalog prefix) against some that
// need the function runner.
func TestIsBuiltin(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		image string
		want  bool
	}{
		"SetNamespaceShortTag":           {image: "set-namespace:v0.4", want: true},
		"SetNamespaceFullTagPrefixed":    {image: "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5", want: true},
		"ApplyReplacementsShortTag":      {image: "ghcr.io/kptdev/krm-functions-catalog/apply-replacements:v0.1", want: true},
		"ApplyReplacementsUnprefixed":    {image: "apply-replacements:v0.1.5", want: true},
		"StarlarkFullTag":                {image: "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5", want: true},
		"StarlarkShortTagUnprefixed":     {image: "starlark:v0.5", want: true},
		"PodExecutorTagOnly":             {image: "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1", want: false},
		"OtherRegistry":                  {image: "gcr.io/kpt-fn/set-namespace:v0.4.5", want: false},
		"BinaryExecutorOnly":             {image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2.2", want: false},
		"NoTag":                          {image: "set-namespace", want: false},
		"PrefixWithoutSlashIsNotTheSame": {image: "ghcr.io/kptdev/krm-functions-catalogset-namespace:v0.4.5", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := IsBuiltin(tc.image); got != tc.want {
				t.Errorf("IsBuiltin(%q) = %v, want %v", tc.image, got, tc.want)
			}
		})
	}
}

// TestConcurrentStarlarkRenders: many renders of different packages at
// once, each with a starlark function writing what only its package holds
// into its resources. Under -race this fails where two starlark runs share
// the interpreter's package-level options; and each package must come out
// with its own value, never another's.
func TestConcurrentStarlarkRenders(t *testing.T) {
	t.Parallel()
	const renders = 12
	pkg := func(i int) map[string]string {
		return map[string]string{
			"Kptfile": fmt.Sprintf(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app-%d
pipeline:
  mutators:
  - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5
    configMap:
      source: |
        for r in ctx.resource_list["items"]:
          if r["kind"] == "ConfigMap":
            r["metadata"]["annotations"]["rendered-for"] = r["data"]["owner"]
`, i),
			"cm.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n  annotations:\n    x: y\ndata:\n  owner: package-%d\n", i),
		}
	}
	var wg sync.WaitGroup
	results := make([]*RenderResult, renders)
	errs := make([]error, renders)
	for i := range renders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Render(context.Background(), pkg(i), RenderOptions{})
		}()
	}
	wg.Wait()
	for i := range renders {
		if errs[i] != nil {
			t.Fatalf("render %d: %v", i, errs[i])
		}
		if results[i].Failed {
			t.Fatalf("render %d failed: %s", i, results[i].Message)
		}
		want := fmt.Sprintf("rendered-for: package-%d", i)
		if got := results[i].Files["cm.yaml"]; !strings.Contains(got, want) {
			t.Errorf("render %d: cm.yaml lacks %q:\n%s", i, want, got)
		}
	}
}
