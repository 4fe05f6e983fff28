package input

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// FuzzReadAndLoad feeds arbitrary file content to what variantctl and
// porchsim-apiserver read their input with: reading must never panic and
// every problem must name the file it is in; what reads without a problem
// must load into porchsim without a panic. `go test` runs only the seeds;
// run `go test -fuzz FuzzReadAndLoad ./pkg/offline/input/` to search further.
func FuzzReadAndLoad(f *testing.F) {
	f.Add("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata: {name: pv, namespace: team}\nspec:\n  upstream: {repo: blueprints, package: app}\n  downstream: {repo: deploy, package: app}\n")
	f.Add("apiVersion: config.porch.kpt.dev/v1alpha2\nkind: PackageVariantSet\nmetadata: {name: set}\nspec:\n  upstream: {repo: blueprints, package: app}\n  targets: [{repositories: [{name: deploy}]}]\n")
	f.Add("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata: {name: blueprints, namespace: team}\nspec: {type: git}\n---\n" +
		"apiVersion: porch.kpt.dev/v1alpha1\nkind: PackageRevision\nmetadata: {name: blueprints.app.v1, namespace: team}\nspec: {packageName: app, repository: blueprints, revision: 1, lifecycle: Published}\n" +
		"---\napiVersion: porch.kpt.dev/v1alpha1\nkind: PackageRevisionResources\nmetadata: {name: blueprints.app.v1, namespace: team}\nspec:\n  resources: {Kptfile: 'apiVersion: kpt.dev/v1\n\n    kind: Kptfile\n\n    metadata: {name: app}'}\n")
	f.Add("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: region, namespace: team}, data: {a: b}}\n- 3\n")
	f.Add("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata: {name: deploy, namespace: team}\nspec: {deployment: true, type: git}\n---\n{kind: [\n")
	f.Add("---\n--- # comment\n...\nnull\n---\n[]\n")

	f.Fuzz(func(t *testing.T, content string) {
		file := filepath.Join(t.TempDir(), "input.yaml")
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := ReadPaths([]string{file})
		var errs Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				if e.Source.File != file {
					t.Errorf("problem %q names %q, not the file it is in", e, e.Source.File)
				}
			}
			return
		}
		if err != nil {
			t.Fatalf("ReadPaths returned %T, not Errors: %v", err, err)
		}
		_ = in.Load(context.Background(), porchsim.New(porchsim.SkipFunctionsNotBuiltIn()), "default")
	})
}
