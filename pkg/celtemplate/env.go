package celtemplate

import (
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
)

// minBuiltStringLimit is the least length (in bytes) up to which replace and
// join build strings. Their inputs are bounded (all annotations of an object
// together are at most 256 KiB), so only an expression built to exhaust
// memory needs more.
const minBuiltStringLimit = 1 << 20

// emptyMap stands in for nil labels and annotations; CEL never writes to it.
var emptyMap = map[string]string{}

func newEnv(opts Options, withRepository bool) (*cel.Env, error) {
	// CEL charges replace and join for the string they built only once it
	// is built, so a chain of replaces could allocate gigabytes before the
	// cost limit stops it. Refuse before building anything longer than a
	// result could be, or than minBuiltStringLimit.
	limit := max(minBuiltStringLimit, opts.MaxResultLength*utf8.UTFMax)
	provider, err := newObjectProvider()
	if err != nil {
		return nil, err
	}
	envOpts := []cel.EnvOption{
		cel.CustomTypeProvider(provider),
		cel.Variable("repoDefault", cel.StringType),
		cel.Variable("packageDefault", cel.StringType),
		cel.Variable("upstream", objectCELType),
		cel.Variable("target", targetCELType),
		cel.ParserExpressionSizeLimit(opts.MaxExpressionLength),
		ext.Strings(),
		// Same overload IDs and signatures as ext.Strings: CEL replaces
		// the implementation and keeps ext's cost model.
		cel.Function("replace",
			cel.MemberOverload("string_replace_string_string",
				[]*cel.Type{cel.StringType, cel.StringType, cel.StringType}, cel.StringType,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val { return replace(limit, args, -1) })),
			cel.MemberOverload("string_replace_string_string_int",
				[]*cel.Type{cel.StringType, cel.StringType, cel.StringType, cel.IntType}, cel.StringType,
				cel.FunctionBinding(func(args ...ref.Val) ref.Val {
					n, ok := args[3].(types.Int)
					if !ok {
						return types.MaybeNoSuchOverloadErr(args[3])
					}
					return replace(limit, args, int(n))
				}))),
		cel.Function("join",
			cel.MemberOverload("list_join", []*cel.Type{cel.ListType(cel.StringType)}, cel.StringType,
				cel.UnaryBinding(func(list ref.Val) ref.Val { return join(limit, list, types.String("")) })),
			cel.MemberOverload("list_join_string", []*cel.Type{cel.ListType(cel.StringType), cel.StringType}, cel.StringType,
				cel.BinaryBinding(func(list, sep ref.Val) ref.Val { return join(limit, list, sep) }))),
		cel.ASTValidators(unboundedFunctions{}, objectKeys{}),
	}
	envOpts = append(envOpts, objectOperators()...)
	if withRepository {
		envOpts = append(envOpts, cel.Variable("repository", objectCELType))
	}
	return cel.NewEnv(envOpts...)
}

// replace is ext.Strings' replace, refusing results longer than limit
// bytes. args are the receiver, the old and the new string; n < 0 replaces
// every match.
func replace(limit int, args []ref.Val, n int) ref.Val {
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return types.NoSuchOverloadErr()
	}
	count := strings.Count(string(s), string(old))
	if n >= 0 && n < count {
		count = n
	}
	// Divides rather than multiplies, so that no input overflows.
	if grow := len(repl) - len(old); grow > 0 && count > 0 && (len(s) > limit || count > (limit-len(s))/grow) {
		return types.NewErr("replace would build a string of more than %d bytes", limit)
	}
	return types.String(strings.Replace(string(s), string(old), string(repl), n))
}

// join is ext.Strings' join, refusing results longer than limit bytes.
func join(limit int, list, sep ref.Val) ref.Val {
	l, ok := list.(traits.Lister)
	d, ok2 := sep.(types.String)
	if !ok || !ok2 {
		return types.NoSuchOverloadErr()
	}
	n, ok := l.Size().(types.Int)
	if !ok {
		return types.NewErr("join: invalid list size")
	}
	size := 0
	for i := types.Int(0); i < n; i++ {
		s, ok := l.Get(i).(types.String)
		if !ok {
			return types.NewErr("join: invalid input: %v", l.Get(i))
		}
		if i > 0 {
			size += len(d)
		}
		if size += len(s); size > limit {
			return types.NewErr("join would build a string of more than %d bytes", limit)
		}
	}
	var b strings.Builder
	b.Grow(size)
	for i := types.Int(0); i < n; i++ {
		if i > 0 {
			b.WriteString(string(d))
		}
		b.WriteString(string(l.Get(i).(types.String)))
	}
	return types.String(b.String())
}

// unboundedFunctions refuses the functions of ext.Strings whose result CEL
// cannot bound before building it: format expands a list of any size, and
// each nested strings.quote may double its input, while both cost one unit.
type unboundedFunctions struct{}

func (unboundedFunctions) Name() string { return "celtemplate.unbounded_functions" }

func (unboundedFunctions) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	root := ast.NavigateAST(a)
	for _, fn := range []string{"format", "strings.quote"} {
		for _, call := range ast.MatchDescendants(root, ast.FunctionMatcher(fn)) {
			iss.ReportErrorAtID(call.ID(), "%s is not available in templates: its result can grow without bound", fn)
		}
	}
}

// activation resolves the variables of one evaluation. Objects become maps
// only when an expression refers to them.
type activation struct {
	vars           *Vars
	withRepository bool
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "repoDefault":
		return a.vars.RepoDefault, true
	case "packageDefault":
		return a.vars.PackageDefault, true
	case "upstream":
		return a.vars.Upstream.celValue(), true
	case "repository":
		if !a.withRepository {
			return nil, false
		}
		return a.vars.Repository.celValue(), true
	case "target":
		if a.vars.Target.value == nil {
			return map[string]any{}, true
		}
		return a.vars.Target.value, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

func (o Object) celValue() map[string]any {
	return map[string]any{
		"name":        o.Name,
		"namespace":   o.Namespace,
		"labels":      nonNil(o.Labels),
		"annotations": visibleAnnotations(o.Annotations),
	}
}

// visibleAnnotations are the annotations an expression may see: all but
// those that hold a serialised object (helper.SerialisesObject).
func visibleAnnotations(m map[string]string) map[string]string {
	return nonNil(helper.VisibleAnnotations(m))
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return emptyMap
	}
	return m
}
