package health

import (
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A check names each variant's object with a CEL string expression over
// three maps: variant (name, namespace, labels, annotations, downstream:
// repo and package), repository (the variant's downstream Repository:
// name, namespace, labels, annotations) and revision (as the judging
// expressions see it).

// Variant is what a name expression knows of a variant.
type Variant struct {
	Name, Namespace         string
	Labels, Annotations     map[string]string
	DownstreamRepo, Package string
}

// Repository is what a name expression knows of a variant's downstream
// Repository.
type Repository struct {
	Name, Namespace     string
	Labels, Annotations map[string]string
}

// Namer is a compiled name expression, safe for concurrent use.
type Namer struct {
	prg cel.Program
}

var nameEnv = func() *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("variant", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("repository", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("revision", cel.MapType(cel.StringType, cel.DynType)),
		cel.OptionalTypes(),
		cel.ParserExpressionSizeLimit(maxExpressionLength),
	)
	if err != nil {
		panic(fmt.Sprintf("health: the CEL environment of names: %v", err))
	}
	return e
}()

// CompileName compiles a name expression (at fldPath, for the error).
func CompileName(expr string, fldPath *field.Path) (n *Namer, errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			n, errs = nil, field.ErrorList{field.Invalid(fldPath, expr, fmt.Sprintf("internal error compiling the expression: %v", r))}
		}
	}()
	if expr == "" {
		return nil, field.ErrorList{field.Required(fldPath, "name the object that says what the variant's cluster runs")}
	}
	ast, iss := nameEnv.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, expr, err.Error())}
	}
	switch t := ast.OutputType(); t.Kind() {
	case types.StringKind, types.DynKind, types.AnyKind:
	default:
		return nil, field.ErrorList{field.Invalid(fldPath, expr, "must evaluate to a string, got "+t.String())}
	}
	prg, err := nameEnv.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, expr, err.Error())}
	}
	return &Namer{prg: prg}, nil
}

// Name is the name of the object of variant v, whose downstream Repository
// is repo and published revision rev.
func (n *Namer) Name(v Variant, repo Repository, rev Revision) (string, error) {
	vars := map[string]any{
		"variant": map[string]any{
			"name": v.Name, "namespace": v.Namespace, "labels": orEmpty(v.Labels), "annotations": orEmpty(v.Annotations),
			"downstream": map[string]any{"repo": v.DownstreamRepo, "package": v.Package},
		},
		"repository": map[string]any{
			"name": repo.Name, "namespace": repo.Namespace, "labels": orEmpty(repo.Labels), "annotations": orEmpty(repo.Annotations),
		},
		"revision": revisionVar(rev),
	}
	out, _, err := n.prg.Eval(vars)
	if err != nil {
		return "", err
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", fmt.Errorf("got %s, not a string", out.Type().TypeName())
	}
	if s == "" {
		return "", fmt.Errorf("it names no object (an empty string)")
	}
	return s, nil
}

func revisionVar(rev Revision) map[string]any {
	return map[string]any{"name": rev.Name, "revision": int64(rev.Revision), "published": rev.Published, "commit": rev.Commit}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
