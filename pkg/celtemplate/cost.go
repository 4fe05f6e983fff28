package celtemplate

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"k8s.io/utils/ptr"
)

// The sizes the static cost estimate assumes. Kubernetes bounds names,
// namespaces, label keys and values, and the total size of an object's
// annotations (256 KiB), but not how many labels or annotations an object
// has, and CEL's estimate multiplies worst cases. Sized at the Kubernetes
// limits, a single pass over annotations with a few string functions would
// be refused, though it costs little on any real object. So the estimate
// assumes a generously ordinary object: large enough that a comprehension
// over labels or annotations nested in another exceeds the limit (as do long
// constant ranges), small enough that one pass stays well within it. A
// larger object is still stopped by the limit when evaluated.
const (
	// estimatedMaxEntries is the number of labels, and of annotations, of
	// one object.
	estimatedMaxEntries = 250
	// estimatedAnnotationValueLength is the length of one annotation value.
	estimatedAnnotationValueLength = 512
	// maxNameLength is a DNS subdomain: object names, repository and
	// package names.
	maxNameLength = 253
	// maxNamespaceLength is a DNS label.
	maxNamespaceLength = 63
	// maxKeyLength is a label or annotation key: a DNS subdomain prefix,
	// '/', and a name of 63 characters.
	maxKeyLength = 253 + 1 + 63
	// maxLabelValueLength is the Kubernetes limit.
	maxLabelValueLength = 63
	// maxFormattedScalarLength is the longest string() of a number, bool,
	// timestamp or duration.
	maxFormattedScalarLength = 40
)

// sizeEstimator gives the static cost estimate the sizes of the variables,
// of string() of a scalar, and of an object indexed by a field name.
type sizeEstimator struct {
	// checked holds the types of the arguments of a call, which the
	// estimator is not given.
	checked *ast.AST
}

func upTo(n uint64) *cost.SizeEstimate {
	return ptr.To(cost.RangedSizeEstimate(0, n))
}

func (e sizeEstimator) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	if p := n.Path(); len(p) > 0 {
		return pathSize(p)
	}
	if n.Expr().Kind() != ast.CallKind {
		return nil
	}
	call := n.Expr().AsCall()
	args := call.Args()
	switch {
	case call.FunctionName() == overloads.TypeConvertString && len(args) == 1:
		switch e.checked.GetType(args[0].ID()).Kind() {
		case types.IntKind, types.UintKind, types.DoubleKind, types.BoolKind, types.TimestampKind, types.DurationKind:
			return upTo(maxFormattedScalarLength)
		}
	case call.FunctionName() == operators.Index && len(args) == 2:
		if _, ok := structFields[e.checked.GetType(args[0].ID()).TypeName()]; ok {
			// obj['labels'] or obj['name']: the larger of a map and a name.
			return upTo(max(estimatedMaxEntries, maxNameLength))
		}
	}
	return nil
}

// pathSize sizes a variable or what it holds. Paths are a variable, then
// field names, then @keys or @values into a map.
func pathSize(p []string) *cost.SizeEstimate {
	switch len(p) {
	case 1:
		switch p[0] {
		case "repoDefault", "packageDefault":
			return upTo(maxNameLength)
		}
	case 2:
		switch p[1] {
		case "name", "repo", "package":
			return upTo(maxNameLength)
		case "namespace":
			return upTo(maxNamespaceLength)
		case "labels", "annotations":
			return upTo(estimatedMaxEntries)
		}
	case 3:
		switch {
		case p[2] == "@keys":
			return upTo(maxKeyLength)
		case p[1] == "labels" && p[2] == "@values":
			return upTo(maxLabelValueLength)
		case p[1] == "annotations" && p[2] == "@values":
			return upTo(estimatedAnnotationValueLength)
		}
	}
	return nil
}

// EstimateCallCost leaves every function to CEL's own cost model (and
// ext.Strings', whose overload IDs the guarded replace and join keep).
func (sizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// unboundedCost is what the estimate says when a size it needs is unknown
// to it (string() of a dyn value, say).
const unboundedCost = ^uint64(0)

// estimateCost returns the most an evaluation of a may cost, and whether
// that is known. An unknown bound is not held against the expression: the
// limit of each evaluation still applies.
func estimateCost(env *cel.Env, a *cel.Ast) (uint64, bool, error) {
	est, err := env.EstimateCost(a, sizeEstimator{checked: a.NativeRep()})
	if err != nil {
		return 0, false, err
	}
	return est.Max, est.Max != unboundedCost, nil
}
