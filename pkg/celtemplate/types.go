package celtemplate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// The declared types of upstream, repository and target. They exist for the
// type checker only: an expression that reads a field an object does not
// expose (upstream.spec, target.foo) is a compile error, and one whose result
// is an object or a map is known not to be a string before it is evaluated.
// When evaluated, the values are still plain maps (see activation), so field
// selection, has() and indexing behave exactly as they do on maps.
const (
	objectTypeName = "celtemplate.Object"
	// targetTypeName declares the fields of both kinds of target: a
	// selected object, or a repositories/packageNames entry (repo and
	// package). Which kind a template gets is not known where expressions
	// are checked, so a field of the other kind compiles and fails when
	// evaluated, as a missing map key does.
	targetTypeName = "celtemplate.Target"
)

var (
	objectCELType = cel.ObjectType(objectTypeName)
	targetCELType = cel.ObjectType(targetTypeName)
	stringMapType = cel.MapType(cel.StringType, cel.StringType)

	// structFields lists exactly the fields an expression may read.
	structFields = map[string]map[string]*types.Type{
		objectTypeName: {
			"name":        cel.StringType,
			"namespace":   cel.StringType,
			"labels":      stringMapType,
			"annotations": stringMapType,
		},
		targetTypeName: {
			"name":        cel.StringType,
			"namespace":   cel.StringType,
			"labels":      stringMapType,
			"annotations": stringMapType,
			"repo":        cel.StringType,
			"package":     cel.StringType,
		},
	}
)

// exposedFields says, for an error message, what an expression may read.
const exposedFields = "upstream, repository and target expose only name, namespace, labels and annotations; a target from a repositories list exposes only repo and package"

// objectProvider declares the two object types on top of CEL's own types.
type objectProvider struct {
	types.Provider
}

func newObjectProvider() (*objectProvider, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return &objectProvider{Provider: reg}, nil
}

func (p *objectProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := structFields[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *objectProvider) FindStructFieldNames(name string) ([]string, bool) {
	fields, ok := structFields[name]
	if !ok {
		return p.Provider.FindStructFieldNames(name)
	}
	return slices.Sorted(maps.Keys(fields)), true
}

// FindStructFieldType gives the type of a field but no accessor: without
// one, CEL reads the field from the map the activation supplies.
func (p *objectProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	fields, ok := structFields[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	t, ok := fields[field]
	if !ok {
		return nil, false
	}
	return &types.FieldType{Type: t}, true
}

// NewValue refuses object literals: objects come from the cluster only.
func (p *objectProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := structFields[name]; ok {
		return types.NewErr("%s values cannot be created in an expression", name)
	}
	return p.Provider.NewValue(name, fields)
}

// objectOperators keep what expressions could do with the objects when
// they were declared as maps: index them by field name (target['package'])
// and test a field with in. Neither overload needs a binding: CEL indexes
// the map the activation supplies, and in has one implementation for every
// container.
func objectOperators() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function(operators.Index,
			cel.Overload("index_celtemplate_object_string", []*cel.Type{objectCELType, cel.StringType}, cel.DynType),
			cel.Overload("index_celtemplate_target_string", []*cel.Type{targetCELType, cel.StringType}, cel.DynType)),
		cel.Function(operators.In,
			cel.Overload("in_string_celtemplate_object", []*cel.Type{cel.StringType, objectCELType}, cel.BoolType),
			cel.Overload("in_string_celtemplate_target", []*cel.Type{cel.StringType, targetCELType}, cel.BoolType)),
	}
}

// objectKeys reports an index or an in test with a constant key that is not
// a field, as the checker reports upstream.spec: such an expression can only
// fail (or be false) whatever the object.
type objectKeys struct{}

func (objectKeys) Name() string { return "celtemplate.object_keys" }

func (objectKeys) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	root := ast.NavigateAST(a)
	check := func(obj, key ast.Expr) {
		name := a.GetType(obj.ID()).TypeName()
		fields, ok := structFields[name]
		if !ok || key.Kind() != ast.LiteralKind {
			return
		}
		k, ok := key.AsLiteral().(types.String)
		if !ok {
			return
		}
		if _, ok := fields[string(k)]; !ok {
			iss.ReportErrorAtID(key.ID(), "undefined field '%s'", string(k))
		}
	}
	for _, e := range ast.MatchDescendants(root, ast.FunctionMatcher(operators.Index)) {
		args := e.AsCall().Args()
		check(args[0], args[1])
	}
	for _, e := range ast.MatchDescendants(root, ast.FunctionMatcher(operators.In)) {
		args := e.AsCall().Args()
		check(args[1], args[0])
	}
}

// explainCompileError adds what a person needs to fix the most common
// compile errors.
func explainCompileError(msg string, withRepository bool) string {
	var notes []string
	if !withRepository && strings.Contains(msg, "undeclared reference to 'repository'") {
		notes = append(notes, "the repository variable is not available in downstream.repoExpr: that expression chooses the downstream repository, so it is evaluated before the Repository is known")
	}
	if strings.Contains(msg, "undefined field") {
		notes = append(notes, exposedFields)
	}
	for _, n := range notes {
		msg += "\n" + n
	}
	return msg
}

// typeName is how a message names the type of a result.
func typeName(v ref.Val) string {
	if v == nil {
		return "nothing"
	}
	if t, ok := v.Type().(ref.Type); ok {
		return t.TypeName()
	}
	return fmt.Sprintf("%T", v)
}
