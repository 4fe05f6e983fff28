package e2eutil

import (
	"maps"
	"strings"
	"testing"

	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

func crdYAML(name string) string {
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\n"
}

const functionConfigs = `apiVersion: config.porch.kpt.dev/v1alpha1
kind: FunctionConfig
metadata:
  name: set-namespace
  namespace: porch-fn-system
---
apiVersion: config.porch.kpt.dev/v1alpha1
kind: FunctionConfig
metadata:
  name: starlark
  namespace: porch-fn-system
`

func writeFiles(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	ctrlfixture.WriteFiles(t, dir, files)
	return dir
}

// TestReadPorchManifests: the directory's CRDs and FunctionConfigs are
// kept, whatever file holds them; other kinds (a copy of Porch's deployment
// directory holds its Deployment and APIService) are skipped and named;
// what Porch cannot run without is refused, naming what to copy.
func TestReadPorchManifests(t *testing.T) {
	complete := map[string]string{
		"config.porch.kpt.dev_repositories.yaml":    crdYAML("repositories.config.porch.kpt.dev"),
		"config.porch.kpt.dev_functionconfigs.yaml": crdYAML("functionconfigs.config.porch.kpt.dev"),
		"config.porch.kpt.dev_packagerevs.yml":      crdYAML("packagerevs.config.porch.kpt.dev"),
		"23-function-configurations.yaml":           functionConfigs,
		"3-porch-server.yaml":                       "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1alpha1.porch.kpt.dev\n",
		"README.md":                                 "not a manifest",
		"sub/other-crd.yaml":                        crdYAML("ignored.example.com"),
	}
	cases := map[string]struct {
		files   map[string]string
		wantErr []string // substrings of the error; none: success
	}{
		"a complete directory": {files: complete},
		"the PackageRev CRD missing": {
			files:   without(complete, "config.porch.kpt.dev_packagerevs.yml"),
			wantErr: []string{"the CRDs packagerevs.config.porch.kpt.dev are missing", "internal/api/porchinternal"},
		},
		"no FunctionConfig": {
			files:   without(complete, "23-function-configurations.yaml"),
			wantErr: []string{"no FunctionConfig is there", "every render fails"},
		},
		"a FunctionConfig without a namespace": {
			files:   with(complete, "fc.yaml", "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\nmetadata:\n  name: lost\n"),
			wantErr: []string{"fc.yaml: FunctionConfig lost has no namespace"},
		},
		"a CRD twice": {
			files:   with(complete, "again.yaml", crdYAML("repositories.config.porch.kpt.dev")),
			wantErr: []string{"the CRD repositories.config.porch.kpt.dev is there twice"},
		},
		"a document that is not an object": {
			files:   with(complete, "bad.yaml", "kind: [\n"),
			wantErr: []string{"bad.yaml: document 1"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := ReadPorchManifests(writeFiles(t, c.files))
			if len(c.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; want one containing %q", c.wantErr)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var crds []string
			for _, c := range m.CRDs {
				crds = append(crds, c.GetName())
			}
			if got, want := strings.Join(crds, " "), "functionconfigs.config.porch.kpt.dev packagerevs.config.porch.kpt.dev repositories.config.porch.kpt.dev"; got != want {
				t.Errorf("CRDs %q, want %q", got, want)
			}
			if len(m.FunctionConfigs) != 2 || strings.Join(m.Namespaces(), " ") != "porch-fn-system" {
				t.Errorf("FunctionConfigs %d in %v, want 2 in porch-fn-system", len(m.FunctionConfigs), m.Namespaces())
			}
			if got := strings.Join(m.Skipped, "; "); got != "APIService v1alpha1.porch.kpt.dev (3-porch-server.yaml)" {
				t.Errorf("skipped %q", got)
			}
		})
	}
}

// TestPorchLoadedFunctionConfigs: the server's log line per FunctionConfig,
// as Porch 74d82d5 writes it, for every one of them.
func TestPorchLoadedFunctionConfigs(t *testing.T) {
	m, err := ReadPorchManifests(writeFiles(t, map[string]string{
		"crds.yaml": crdYAML("repositories.config.porch.kpt.dev") + "---\n" + crdYAML("functionconfigs.config.porch.kpt.dev") +
			"---\n" + crdYAML("packagerevs.config.porch.kpt.dev"),
		"fc.yaml": functionConfigs,
	}))
	if err != nil {
		t.Fatal(err)
	}
	one := `I1123 10:00:00.000000 1 functionconfig.go:80] FunctionConfig "porch-fn-system/set-namespace" changed` + "\n"
	both := one + `I1123 10:00:00.000001 1 functionconfig.go:80] FunctionConfig "porch-fn-system/starlark" changed` + "\n"
	if PorchLoadedFunctionConfigs(one, m) {
		t.Error("loaded after one of two FunctionConfigs")
	}
	if !PorchLoadedFunctionConfigs(both, m) {
		t.Error("not loaded after both")
	}
}

func without(m map[string]string, key string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	delete(out, key)
	return out
}

func with(m map[string]string, key, value string) map[string]string {
	out := without(m, key)
	out[key] = value
	return out
}
