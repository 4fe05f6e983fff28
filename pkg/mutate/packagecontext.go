package mutate

import (
	"fmt"
	"path"
	"sort"
	"strings"

	apifield "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
)

// Package context facts from the Porch wire contract.
const (
	// PackageContextFile is where Porch writes the package context of a
	// package cloned into a deployment repository.
	PackageContextFile = "package-context.yaml"
	// PackageContextConfigMapName is the name of the package context
	// ConfigMap; kpt functions read the package name and context from it.
	PackageContextConfigMapName = "kptfile.kpt.dev"
)

// applyPackageContext sets spec.packageContext.data in, and removes
// removeKeys from, the data of the package context ConfigMap.
func applyPackageContext(p *pkgFiles, pc *configv1alpha1.PackageContext) error {
	if pc == nil || (len(pc.Data) == 0 && len(pc.RemoveKeys) == 0) {
		return nil
	}
	// The controller refuses such a variant before it edits anything; this
	// keeps a caller that did not from writing the reserved keys.
	if errs := validation.ValidatePackageContext(pc, apifield.NewPath("spec", "packageContext")); len(errs) > 0 {
		return fmt.Errorf("invalid package context: %s", strings.Join(validation.Messages(errs), "; "))
	}
	cm, err := findPackageContext(p)
	if err != nil {
		return err
	}

	data, err := ownMapping(cm.node, "data", len(pc.Data) > 0, []string{"apiVersion", "kind", "metadata", "data"})
	if err != nil {
		return fmt.Errorf("%s: %w", cm.describe(), err)
	}
	changed := false
	keys := make([]string, 0, len(pc.Data))
	for k := range pc.Data {
		keys = append(keys, k)
	}
	// New keys are appended in sorted order so the result does not depend on
	// map iteration; existing keys keep their place.
	sort.Strings(keys)
	for _, k := range keys {
		if setString(data, k, pc.Data[k], nil) {
			changed = true
		}
	}
	for _, k := range pc.RemoveKeys {
		if data != nil && removeField(data, k) {
			changed = true
		}
	}
	if changed {
		cm.seg.dirty = true
	}
	return nil
}

// findPackageContext finds the kptfile.kpt.dev ConfigMap of the package: the
// one in package-context.yaml, else the only one in another file of the
// package. Files of nested packages (below a directory with its own Kptfile)
// are not searched: their context belongs to them.
func findPackageContext(p *pkgFiles) (object, error) {
	var nested []string
	for _, name := range p.paths {
		if path.Base(name) == kptfileName && name != kptfileName {
			nested = append(nested, path.Dir(name)+"/")
		}
	}
	var found []object
	for _, o := range p.allObjects() {
		if o.kind() != "ConfigMap" || o.name() != PackageContextConfigMapName {
			continue
		}
		if inNested(o.file, nested) {
			continue
		}
		if o.file == PackageContextFile {
			return o, nil
		}
		found = append(found, o)
	}
	switch len(found) {
	case 0:
		return object{}, fmt.Errorf("package context ConfigMap %q not found in %s; the downstream package must be in a deployment repository or contain one",
			PackageContextConfigMapName, PackageContextFile)
	case 1:
		return found[0], nil
	default:
		var files []string
		for _, o := range found {
			files = append(files, o.file)
		}
		return object{}, fmt.Errorf("package context ConfigMap %q is defined more than once (%s) and none is in %s; remove all but one",
			PackageContextConfigMapName, strings.Join(files, ", "), PackageContextFile)
	}
}

func inNested(file string, nested []string) bool {
	for _, dir := range nested {
		if strings.HasPrefix(file, dir) {
			return true
		}
	}
	return false
}

// PackageContextData is the data of a package's package context ConfigMap,
// for tools that compare two revisions of a package; found is false when
// the package has none (a blueprint outside a deployment repository
// usually has none).
func PackageContextData(files map[string]string) (data map[string]string, found bool, err error) {
	p, err := parsePackage(files)
	if err != nil {
		return nil, false, err
	}
	has := false
	for _, o := range p.allObjects() {
		if o.kind() == "ConfigMap" && o.name() == PackageContextConfigMapName {
			has = true
		}
	}
	if !has {
		return nil, false, nil
	}
	cm, err := findPackageContext(p)
	if err != nil {
		return nil, false, err
	}
	data = map[string]string{}
	if m := resolve(field(cm.node, "data")); m != nil && m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if v := resolve(m.Content[i+1]); v != nil && v.Kind == yaml.ScalarNode {
				data[m.Content[i].Value] = v.Value
			}
		}
	}
	return data, true, nil
}
