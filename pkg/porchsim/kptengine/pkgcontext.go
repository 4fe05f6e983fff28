package kptengine

import (
	"fmt"
	"io"
	"path"

	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/lib/builtins/builtintypes"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// packageContextTemplate is the package context kpt generates, before its
// data is filled in (kpt's abstract package context).
var packageContextTemplate = fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: example
`, builtintypes.PkgContextName)

var (
	configMapGVK = resid.NewGvk("", "v1", "ConfigMap")
	kptfileGVK   = resid.NewGvk(kptapi.KptFileGVK().Group, kptapi.KptFileGVK().Version, kptapi.KptFileGVK().Kind)
)

// packageContextGenerator is the KRM function Porch runs when it clones a
// package into a deployment repository (kpt's builtin gen-pkg-context):
// every package context ConfigMap is dropped and package-context.yaml is
// generated next to the root Kptfile, holding the package's name and path.
//
// kpt beta.61 only hands out its own generator through a function that
// prints to standard output, so the generator is written here; it runs
// through the same kyaml function machinery as kpt's and writes the same
// content.
type packageContextGenerator struct {
	// packagePath is data.package-path; empty leaves the key out.
	packagePath string
}

// Run implements the function signature kyaml's FunctionFilter runs.
func (g packageContextGenerator) Run(r io.Reader, w io.Writer) error {
	return framework.Execute(g, &kio.ByteReadWriter{Reader: r, Writer: w, KeepReaderAnnotations: true})
}

// Process implements framework.ResourceListProcessor.
func (g packageContextGenerator) Process(rl *framework.ResourceList) error {
	var kept, generated []*yaml.RNode
	for _, r := range rl.Items {
		gvk := resid.GvkFromNode(r)
		if gvk.Equals(configMapGVK) && r.GetName() == builtintypes.PkgContextName {
			continue
		}
		kept = append(kept, r)
		if !gvk.Equals(kptfileGVK) {
			continue
		}
		cm, err := g.contextFor(r)
		if err != nil {
			rl.Results = framework.Results{{Message: err.Error(), Severity: framework.Error}}
			return rl.Results
		}
		if cm != nil {
			generated = append(generated, cm)
		}
	}
	for _, cm := range generated {
		p, _, _ := kioutil.GetFileAnnotations(cm)
		rl.Results = append(rl.Results, &framework.Result{
			Message:  "generated package context",
			Severity: framework.Info,
			File:     &framework.File{Path: p},
		})
	}
	rl.Items = append(kept, generated...)
	return nil
}

// contextFor returns the package context of the package whose Kptfile is
// given, or nil for the Kptfile of a subpackage: only the root package gets
// one.
func (g packageContextGenerator) contextFor(kptfile *yaml.RNode) (*yaml.RNode, error) {
	kptfilePath, _, err := kioutil.GetFileAnnotations(kptfile)
	if err != nil {
		return nil, err
	}
	if kptfilePath != kptapi.KptFileName {
		return nil, nil
	}
	cm, err := yaml.Parse(packageContextTemplate)
	if err != nil {
		return nil, err
	}
	contextPath := path.Join(path.Dir(kptfilePath), builtintypes.PkgContextFile)
	if err := cm.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, contextPath)); err != nil {
		return nil, err
	}
	data := map[string]string{"name": kptfile.GetName()}
	if g.packagePath != "" {
		data[builtintypes.ConfigKeyPackagePath] = g.packagePath
	}
	if err := cm.PipeE(yaml.Clear(yaml.DataField)); err != nil {
		return nil, err
	}
	if err := cm.LoadMapIntoConfigMapData(data); err != nil {
		return nil, err
	}
	return cm, nil
}

// generatePackageContext runs the package context generator over a
// package as Porch's clone task does.
func generatePackageContext(files map[string]string, packagePath string) (map[string]string, error) {
	gen := packageContextGenerator{packagePath: packagePath}
	out, err := filterPackage(files, &runtimeutil.FunctionFilter{
		Run:     gen.Run,
		Results: &yaml.RNode{},
	})
	if err != nil {
		return nil, fmt.Errorf("generate package context: %w", err)
	}
	return out, nil
}
