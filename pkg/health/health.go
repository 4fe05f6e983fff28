// Package health judges whether the in-cluster object that says what a
// variant's cluster runs (a Flux Kustomization, an Argo CD Application,
// Config Sync's RootSync ...) reports the variant's published revision as
// running and healthy. It compiles and runs a rollout's health check
// (issue 37): the expression that names each variant's object, and those
// that judge it; reading the object and gating waves on the result belong
// to the set's controller.
//
// A check is three CEL expressions in the shape of Flux's healthCheckExprs:
// inProgress, failed and current, each a bool over two variables: object,
// the whole object as a map (object.status.conditions ...), and revision,
// the variant's published revision (name, revision, published: a
// timestamp, commit: the git commit Porch published it as, "" when not
// known). They are tried in that order, after the generic rule that an
// object whose controller has not yet observed its latest generation is in
// progress: the first that is true decides; when none is, the object is in
// progress. A check without expressions judges by kstatus
// (sigs.k8s.io/cli-utils), which knows the common kinds and the Ready
// condition convention but nothing of revisions: it says the object is
// reconciled, not that it runs this revision.
//
// Expressions are standard CEL with optional field access
// (object.?status.?sync.?revision.orValue("")), each evaluation bounded by a
// cost limit; an expression that fails to evaluate (a field the object does
// not have yet) leaves the object in progress and says why.
//
// Pure: plain data in, plain data out; no clients.
package health

import (
	"errors"
	"fmt"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Status is what a health check says of a variant's cluster.
type Status string

const (
	// Current: the cluster runs the revision, healthy.
	Current Status = "Current"
	// InProgress: not yet (or not known yet).
	InProgress Status = "InProgress"
	// Failed: the cluster failed to run the revision healthy.
	Failed Status = "Failed"
)

// Result is a judgement with the reason a person reads.
type Result struct {
	Status  Status
	Message string
}

// Revision is the variant's published revision, as the expressions see it.
type Revision struct {
	Name      string
	Revision  int
	Published time.Time
	// Commit is the git commit of the revision ("" when not known).
	Commit string
}

// Exprs are a check's expressions; all empty: kstatus judges.
type Exprs struct {
	Current, InProgress, Failed string
}

// Judge is a compiled check, safe for concurrent use.
type Judge struct {
	// steps are the expressions in the order they are tried.
	steps []step
}

type step struct {
	status Status
	field  string
	prg    cel.Program
}

// costLimit bounds one evaluation, as the Kubernetes API server bounds a
// CRD's rule.
const costLimit = celtemplate.DefaultCostLimit

// maxExpressionLength bounds an expression's text.
const maxExpressionLength = 5000

// env is the environment of the judging expressions; nameEnv, of the name
// expression.
var (
	env     = newEnv("checks", "object", "revision")
	nameEnv = newEnv("names", "variant", "repository", "revision")
)

// newEnv is a CEL environment whose variables vars are maps by string,
// with optional field access and the length limit; what names it in the
// panic of a bug.
func newEnv(what string, vars ...string) *cel.Env {
	opts := []cel.EnvOption{cel.OptionalTypes(), cel.ParserExpressionSizeLimit(maxExpressionLength)}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.MapType(cel.StringType, cel.DynType)))
	}
	e, err := cel.NewEnv(opts...)
	if err != nil {
		panic(fmt.Sprintf("health: the CEL environment of %s: %v", what, err))
	}
	return e
}

// Compile compiles a check's expressions; fldPath is where they stand (the
// errors name each field). Current is required when any is given: a check
// that can only say "failed" or "in progress" would never let a wave on.
func Compile(e Exprs, fldPath *field.Path) (*Judge, field.ErrorList) {
	j := &Judge{}
	if e == (Exprs{}) {
		return j, nil
	}
	var errs field.ErrorList
	if e.Current == "" {
		errs = append(errs, field.Required(fldPath.Child("current"), "a check with expressions needs current: the one that says the revision runs healthy"))
	}
	for _, s := range []struct {
		status Status
		name   string
		expr   string
	}{{InProgress, "inProgress", e.InProgress}, {Failed, "failed", e.Failed}, {Current, "current", e.Current}} {
		if s.expr == "" {
			continue
		}
		prg, msg := compile(s.expr)
		if msg != "" {
			errs = append(errs, field.Invalid(fldPath.Child(s.name), s.expr, msg))
			continue
		}
		j.steps = append(j.steps, step{status: s.status, field: s.name, prg: prg})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return j, nil
}

func compile(expr string) (prg cel.Program, msg string) {
	// The parser and checker take input from anyone who may create a set;
	// a panic there must not stop the controller.
	defer func() {
		if r := recover(); r != nil {
			prg, msg = nil, fmt.Sprintf("internal error compiling the expression: %v", r)
		}
	}()
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, err.Error()
	}
	switch t := ast.OutputType(); t.Kind() {
	case types.BoolKind, types.DynKind, types.AnyKind:
	default:
		return nil, "must evaluate to a bool, got " + t.String()
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err.Error()
	}
	return prg, ""
}

// Judge says what obj reports of rev.
func (j *Judge) Judge(obj *unstructured.Unstructured, rev Revision) Result {
	if r, ok := generationPending(obj); ok {
		return r
	}
	if len(j.steps) == 0 {
		return byKstatus(obj)
	}
	vars := map[string]any{"object": obj.Object, "revision": revisionVar(rev)}
	for _, s := range j.steps {
		out, _, err := s.prg.Eval(vars)
		if err == nil {
			b, ok := out.Value().(bool)
			if !ok {
				err = fmt.Errorf("got %s, not a bool", out.Type().TypeName())
			} else if b {
				return Result{Status: s.status, Message: fmt.Sprintf("%s: %s is true", describe(obj), s.field)}
			} else {
				continue
			}
		}
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return Result{Status: InProgress, Message: fmt.Sprintf("%s: %s exceeded the cost limit of %d", describe(obj), s.field, costLimit)}
		}
		return Result{Status: InProgress, Message: fmt.Sprintf("%s: %s cannot be evaluated yet: %v", describe(obj), s.field, err)}
	}
	return Result{Status: InProgress, Message: fmt.Sprintf("%s: current is false", describe(obj))}
}

// generationPending is the generic rule every judgement starts with: the
// object's controller has not reported on its latest spec yet.
func generationPending(obj *unstructured.Unstructured) (Result, bool) {
	observed, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if err != nil || !found || observed >= obj.GetGeneration() {
		return Result{}, false
	}
	return Result{Status: InProgress, Message: fmt.Sprintf("%s: its controller has observed generation %d of %d", describe(obj), observed, obj.GetGeneration())}, true
}

// byKstatus judges by kstatus's rules for the object's kind.
func byKstatus(obj *unstructured.Unstructured) Result {
	r, err := status.Compute(obj)
	if err != nil {
		return Result{Status: InProgress, Message: fmt.Sprintf("%s: %v", describe(obj), err)}
	}
	msg := describe(obj)
	if r.Message != "" {
		msg += ": " + r.Message
	}
	switch r.Status {
	case status.CurrentStatus:
		return Result{Status: Current, Message: msg}
	case status.FailedStatus:
		return Result{Status: Failed, Message: msg}
	}
	return Result{Status: InProgress, Message: fmt.Sprintf("%s (%s)", msg, r.Status)}
}

func describe(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
	}
	return fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
}

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
