package e2eutil

import (
	"os"
	"strings"
	"testing"
)

// TestModuleFile reads Flux's Kustomization CRD from its module, as the
// end-to-end health test does, and refuses a path the module lacks.
func TestModuleFile(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads a module")
	}
	path, err := ModuleFile("github.com/fluxcd/kustomize-controller", "v1.9.6", "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "kind: CustomResourceDefinition") || !strings.Contains(string(b), "kustomizations.kustomize.toolkit.fluxcd.io") {
		t.Errorf("%s is not the Kustomization CRD", path)
	}
	if _, err := ModuleFile("github.com/fluxcd/kustomize-controller", "v1.9.6", "no/such/file.yaml"); err == nil || !strings.Contains(err.Error(), "has no no/such/file.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}
