package mutate

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// FunctionNamePrefix starts the name of every Kptfile pipeline function a
// PackageVariant adds: PackageVariant.<variant>.<function name>.<position>.
const FunctionNamePrefix = "PackageVariant"

// kptfileOrder is the order kpt writes the top-level Kptfile fields in; new
// fields are placed accordingly.
var kptfileOrder = []string{"apiVersion", "kind", "metadata", "upstream", "upstreamLock", "info", "pipeline", "inventory", "status"}

var pipelineOrder = []string{"mutators", "validators"}

// FunctionName is the name the variant gives the function at position pos
// of its mutators or validators. The name carries the variant so a later
// reconcile can find, remove and re-add exactly its own functions, and the
// position so two functions with the same (or no) name stay distinct.
func FunctionName(variantName, functionName string, pos int) string {
	return fmt.Sprintf("%s.%s.%s.%d", FunctionNamePrefix, variantName, functionName, pos)
}

// IsVariantFunction reports whether a Kptfile function name was added by
// the named variant: it starts with "PackageVariant.<variant>." and its last
// dot-separated segment is a position (decimal digits). Matching the prefix
// and the last segment, rather than splitting on dots, is what keeps a dot in
// a function or variant name from hiding the variant's own functions (the
// reference controller then prepends them again on every reconcile, making an
// endless series of drafts).
//
// Dots are legal in object names, so a variant named "a" also matches the
// functions of a variant named "a.b" in the same package; the naming scheme
// cannot tell them apart, and two such variants should not target one package.
func IsVariantFunction(functionName, variantName string) bool {
	prefix := FunctionNamePrefix + "." + variantName + "."
	if !strings.HasPrefix(functionName, prefix) {
		return false
	}
	rest := functionName[len(prefix):]
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return false
	}
	return isDigits(rest[i+1:])
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// applyPipeline removes the functions the variant added earlier from the
// Kptfile's mutators and validators and prepends its current ones; the
// package's own functions and other variants' stay after them, in order.
func applyPipeline(p *pkgFiles, variant string, pl *kptfilev1.Pipeline) error {
	var want map[string][]kptfilev1.Function
	adding := false
	if pl != nil {
		want = map[string][]kptfilev1.Function{"mutators": pl.Mutators, "validators": pl.Validators}
		adding = len(pl.Mutators)+len(pl.Validators) > 0
	}
	kf, found, err := p.kptfile()
	if err != nil {
		if !adding {
			// Nothing of ours can be in a Kptfile without a Kptfile object.
			return nil
		}
		return err
	}
	if !found {
		if adding {
			return fmt.Errorf("%s not found at the package root; it is needed to add the pipeline functions of PackageVariant %q", kptfileName, variant)
		}
		return nil
	}

	pipeline, err := ownMapping(kf.node, "pipeline", adding, kptfileOrder)
	if err != nil {
		return fmt.Errorf("%s: %w", kf.describe(), err)
	}
	if pipeline == nil {
		return nil
	}
	changed := false
	for _, key := range pipelineOrder {
		c, err := editFunctionList(pipeline, key, variant, want[key])
		if err != nil {
			return fmt.Errorf("%s: pipeline.%w", kf.describe(), err)
		}
		changed = changed || c
	}
	// Like the reference, a pipeline left empty by removing our functions is
	// removed rather than written as "pipeline: {}".
	if changed && len(pipeline.Content) == 0 {
		removeField(kf.node, "pipeline")
	}
	if changed {
		kf.seg.dirty = true
	}
	return nil
}

// editFunctionList rewrites one of pipeline.mutators or pipeline.validators
// and reports whether it changed. Nodes already equal to what would be
// written are reused, so comments on them survive and a repeated Apply is a
// no-op.
func editFunctionList(pipeline *yaml.Node, key, variant string, fns []kptfilev1.Function) (bool, error) {
	list, err := ownSequence(pipeline, key, len(fns) > 0, pipelineOrder)
	if err != nil {
		return false, err
	}
	var existing []*yaml.Node
	if list != nil {
		existing = list.Content
	}
	var oldOurs, others []*yaml.Node
	for _, n := range existing {
		if name, _ := scalarValue(field(resolve(n), "name")); IsVariantFunction(name, variant) {
			oldOurs = append(oldOurs, n)
		} else {
			others = append(others, n)
		}
	}
	content := make([]*yaml.Node, 0, len(fns)+len(others))
	for i, f := range fns {
		f := *f.DeepCopy()
		f.Name = FunctionName(variant, f.Name, i)
		if i < len(oldOurs) && semanticEqual(oldOurs[i], f) {
			content = append(content, oldOurs[i])
			continue
		}
		n, err := toNode(f)
		if err != nil {
			return false, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		content = append(content, n)
	}
	content = append(content, others...)
	if sameNodes(content, existing) {
		return false, nil
	}
	if len(content) == 0 {
		// Only our old functions were there: drop the key instead of
		// leaving "mutators: []".
		removeField(pipeline, key)
		return true, nil
	}
	list.Content = content
	return true, nil
}

func sameNodes(a, b []*yaml.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
