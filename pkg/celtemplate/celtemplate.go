package celtemplate

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

const (
	// DefaultCostLimit is the Kubernetes per-call limit for CEL in CRD
	// validation rules and admission policies (roughly a tenth of a second
	// of CPU), so authors get the budget they already know. A set evaluates
	// every expression for every target, so a larger budget would let one
	// set hold a worker for long.
	DefaultCostLimit uint64 = 1_000_000
	// DefaultMaxExpressionLength is far beyond any one-line expression that
	// computes a name or a value, yet keeps parse and check time and the
	// memory of cached programs small (CEL itself allows 100,000).
	DefaultMaxExpressionLength = 10_000
	// DefaultMaxResultLength is well above any Kubernetes name (253) or
	// label value (63), large enough for a config value in packageContext,
	// and small enough that a few rogue expressions cannot push a
	// PackageVariant towards the 1.5 MiB limit of an object in etcd.
	DefaultMaxResultLength = 64 * 1024
)

// Object is what an expression sees of a Kubernetes object: only these
// four fields, because the rest of an object may hold data that the author
// of a PackageVariantSet should not be able to copy into a package.
type Object struct {
	// Name is metadata.name.
	Name string
	// Namespace is metadata.namespace.
	Namespace string
	// Labels are metadata.labels; nil is seen as an empty map.
	Labels map[string]string
	// Annotations are metadata.annotations; nil is seen as an empty map.
	Annotations map[string]string
}

// Target is the value of the target variable; build one with ObjectTarget
// or RepoPackageTarget. In the zero Target, target is an empty map, so
// every field access fails with "no such key".
type Target struct {
	value map[string]any
}

// ObjectTarget is the target of a repository selector or an object
// selector: the selected object, with the fields of an Object.
func ObjectTarget(o Object) Target {
	return Target{value: o.celValue()}
}

// RepoPackageTarget is the target of a repositories/packageNames list: a
// map with the keys repo and package.
func RepoPackageTarget(repo, pkg string) Target {
	return Target{value: map[string]any{"repo": repo, "package": pkg}}
}

// Vars are the variables of one target.
type Vars struct {
	// RepoDefault is the repository name the target implies.
	RepoDefault string
	// PackageDefault is the package name the target implies.
	PackageDefault string
	// Upstream is the upstream PackageRevision.
	Upstream Object
	// Repository is the downstream Repository. It is ignored when
	// withRepository is false (downstream.repoExpr).
	Repository Object
	// Target is the target itself.
	Target Target
}

// Options limit what one expression may cost. A zero or negative field
// takes its Default value.
type Options struct {
	// CostLimit is the CEL cost one evaluation may reach; evaluation stops
	// when it is exceeded (see DefaultCostLimit).
	CostLimit uint64
	// MaxExpressionLength is the length of an expression in Unicode
	// characters (see DefaultMaxExpressionLength).
	MaxExpressionLength int
	// MaxResultLength is the length of a result in Unicode characters (see
	// DefaultMaxResultLength).
	MaxResultLength int
}

// SetKey identifies one generation of a PackageVariantSet.
type SetKey struct {
	// UID is the set's metadata.uid: a set deleted and created again under
	// the same name does not reuse the old programs.
	UID k8stypes.UID
	// Generation is the set's metadata.generation, which changes with
	// every change of its spec (and so of its expressions).
	Generation int64
}

// Error is every error the Cache returns.
type Error struct {
	// Field is the path of the expression, e.g.
	// spec.targets[1].template.labelExprs[0].valueExpr.
	Field string
	// Message says what is wrong: CEL's own text, or why the result or the
	// expression was refused.
	Message string
}

// Error returns Field and Message, separated by a colon.
func (e *Error) Error() string {
	return e.Field + ": " + e.Message
}

// Cache compiles each expression once per PackageVariantSet generation and
// evaluates it. It is safe for concurrent use; create it with NewCache.
//
// Only the newest generation of a set seen so far is kept, so the cache
// holds at most the expressions of one spec per set (times two, with and
// without the repository variable).
type Cache struct {
	opts Options
	// envs[0] lacks the repository variable, envs[1] has it.
	envs [2]*cel.Env

	mu   sync.Mutex
	sets map[k8stypes.UID]*setPrograms

	// compiles counts compilations, so tests can prove what was reused.
	compiles atomic.Int64
}

type setPrograms struct {
	generation int64
	programs   map[programKey]compiled
}

type programKey struct {
	expr           string
	withRepository bool
}

// compiled is a program, or the reason expr does not compile: failures are
// cached too, so a broken set is not recompiled on every sync.
type compiled struct {
	program cel.Program
	message string
}

// NewCache returns an empty cache whose expressions are limited by opts.
func NewCache(opts Options) *Cache {
	if opts.CostLimit == 0 {
		opts.CostLimit = DefaultCostLimit
	}
	if opts.MaxExpressionLength <= 0 {
		opts.MaxExpressionLength = DefaultMaxExpressionLength
	}
	if opts.MaxResultLength <= 0 {
		opts.MaxResultLength = DefaultMaxResultLength
	}
	c := &Cache{opts: opts, sets: map[k8stypes.UID]*setPrograms{}}
	for i, withRepository := range []bool{false, true} {
		env, err := newEnv(opts, withRepository)
		if err != nil {
			// The environment is built from constants only: failing here is
			// a programming error that every test would catch.
			panic(fmt.Sprintf("celtemplate: build CEL environment: %v", err))
		}
		c.envs[i] = env
	}
	return c
}

// Evaluate evaluates expr with vars and returns its string result,
// compiling expr only if this generation of the set has not compiled it
// before. field is the path of expr, used in errors. withRepository is
// false for downstream.repoExpr only: there the repository variable is not
// declared, so a reference to it is a compile error.
//
// The evaluation's cost is charged to budget: once the budget is spent,
// Evaluate returns a *BudgetError without evaluating; when the budget's
// context ends, the evaluation stops and Evaluate returns the context's
// error.
func (c *Cache) Evaluate(budget *Budget, set SetKey, field, expr string, withRepository bool, vars Vars) (string, error) {
	if budget.spent > budget.limit {
		return "", &BudgetError{Field: field, Limit: budget.limit, Spent: budget.spent}
	}
	if err := budget.ctx.Err(); err != nil {
		return "", fmt.Errorf("evaluate %s: %w", field, err)
	}
	p, err := c.program(set, field, expr, withRepository)
	if err != nil {
		return "", err
	}
	return c.eval(budget, p, field, withRepository, &vars)
}

// Check compiles expr without evaluating it, so that validation can report
// every broken expression of a set at once. The program is cached for the
// Evaluate calls that follow.
func (c *Cache) Check(set SetKey, field, expr string, withRepository bool) error {
	if _, err := c.program(set, field, expr, withRepository); err != nil {
		return err
	}
	return nil
}

// Forget drops the programs of a set that is gone.
func (c *Cache) Forget(uid k8stypes.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sets, uid)
}

// program returns the program of expr, compiling it unless this generation
// of the set already did.
func (c *Cache) program(set SetKey, field, expr string, withRepository bool) (cel.Program, *Error) {
	// Checked before the cache so that a huge expression is neither parsed
	// nor kept as a map key.
	if n := utf8.RuneCountInString(expr); n > c.opts.MaxExpressionLength {
		return nil, &Error{Field: field, Message: fmt.Sprintf("expression is %d characters long, more than the limit of %d", n, c.opts.MaxExpressionLength)}
	}
	key := programKey{expr: expr, withRepository: withRepository}
	c.mu.Lock()
	s := c.sets[set.UID]
	if s != nil && s.generation == set.Generation {
		if p, ok := s.programs[key]; ok {
			c.mu.Unlock()
			return p.result(field)
		}
	}
	c.mu.Unlock()

	// Compiled without the lock: compiling may take milliseconds and the
	// other workers are busy with other sets. Two workers compiling the
	// same expression at once is harmless; the first result is kept.
	p := c.compile(expr, withRepository)

	c.mu.Lock()
	defer c.mu.Unlock()
	s = c.sets[set.UID]
	switch {
	case s == nil || s.generation < set.Generation:
		s = &setPrograms{generation: set.Generation, programs: map[programKey]compiled{}}
		c.sets[set.UID] = s
	case s.generation > set.Generation:
		// A worker still busy with an older generation must not evict the
		// programs of the newer one; its result is simply not kept.
		return p.result(field)
	}
	if existing, ok := s.programs[key]; ok {
		return existing.result(field)
	}
	s.programs[key] = p
	return p.result(field)
}

func (p compiled) result(field string) (cel.Program, *Error) {
	if p.message != "" {
		return nil, &Error{Field: field, Message: p.message}
	}
	return p.program, nil
}

// compile parses and checks expr and proves what can be proved before any
// target is known: the types (only declared variables and exposed fields,
// a result that may be a string), the estimated cost against the cost
// limit, and an evaluation with every variable unknown (see dryRun).
func (c *Cache) compile(expr string, withRepository bool) (p compiled) {
	c.compiles.Add(1)
	// The parser and checker are large and their input comes from any user
	// who may create a set; a panic in a worker would stop the controller.
	defer func() {
		if r := recover(); r != nil {
			p = compiled{message: fmt.Sprintf("internal error compiling the expression: %v", r)}
		}
	}()
	env := c.envs[0]
	if withRepository {
		env = c.envs[1]
	}
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return compiled{message: explainCompileError(err.Error(), withRepository)}
	}
	switch t := ast.OutputType(); t.Kind() {
	case types.StringKind, types.DynKind, types.AnyKind, types.TypeParamKind:
		// A string, or maybe one (dyn(...), obj['name']): the dry run or
		// the evaluation tells.
	default:
		return compiled{message: "must evaluate to a string, got " + t.String()}
	}
	if estimate, bounded, err := estimateCost(env, ast); err != nil {
		return compiled{message: "estimate the cost: " + err.Error()}
	} else if bounded && estimate > c.opts.CostLimit {
		return compiled{message: fmt.Sprintf("estimated cost %d exceeds the cost limit of %d (for objects with up to %d labels and %d annotations); "+
			"comprehensions (all, exists, filter, map ...) nested in comprehensions are the usual cause", estimate, c.opts.CostLimit, estimatedMaxEntries, estimatedMaxEntries)}
	}
	prg, err := env.Program(ast, cel.CostLimit(c.opts.CostLimit), cel.EvalOptions(cel.OptTrackCost), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return compiled{message: err.Error()}
	}
	if msg := c.dryRun(env, ast); msg != "" {
		return compiled{message: msg}
	}
	return compiled{program: prg}
}

// dryRun evaluates the expression once with every variable unknown, as if
// for a target of which nothing is known. CEL's partial evaluation yields
// an unknown for any part that depends on a variable, so a result that is
// not unknown is the result for every target: an error there (1/0, int('x'),
// a refused replace) or a value that is not a string would make every
// evaluation fail, and is reported now. What depends on the values
// (10 / size(repository.labels), a missing label) is left to evaluation.
//
// A cost limit reached in the dry run is not reported: with unknowns, && and
// || cannot short-circuit, so the dry run may do work an evaluation skips.
// The static estimate and the limit of each evaluation cover cost.
func (c *Cache) dryRun(env *cel.Env, ast *cel.Ast) string {
	prg, err := env.Program(ast, cel.CostLimit(c.opts.CostLimit), cel.EvalOptions(cel.OptPartialEval))
	if err != nil {
		return err.Error()
	}
	out, _, err := prg.Eval(env.UnknownVars())
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) {
			return ""
		}
		return "fails for every target: " + err.Error()
	}
	switch v := out.(type) {
	case *types.Unknown:
		return ""
	case types.String:
		if n := utf8.RuneCountInString(string(v)); n > c.opts.MaxResultLength {
			return fmt.Sprintf("result is %d characters long, more than the limit of %d", n, c.opts.MaxResultLength)
		}
		return ""
	default:
		return "must evaluate to a string, got " + typeName(out) + " for every target"
	}
}

func (c *Cache) eval(budget *Budget, prg cel.Program, field string, withRepository bool, vars *Vars) (s string, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = "", &Error{Field: field, Message: fmt.Sprintf("internal error evaluating the expression: %v", r)}
		}
	}()
	out, details, evalErr := prg.ContextEval(budget.ctx, &activation{vars: vars, withRepository: withRepository})
	var cancelled interpreter.EvalCancelledError
	overLimit := errors.As(evalErr, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded
	var cost uint64
	if details != nil && details.ActualCost() != nil {
		cost = *details.ActualCost()
	}
	if overLimit && cost < c.opts.CostLimit {
		cost = c.opts.CostLimit // the whole limit was spent
	}
	if err := budget.charge(field, cost); err != nil {
		return "", err
	}
	switch {
	case evalErr == nil:
	case overLimit:
		return "", &Error{Field: field, Message: fmt.Sprintf("evaluation exceeded the cost limit of %d: %v", c.opts.CostLimit, evalErr)}
	case budget.ctx.Err() != nil:
		return "", fmt.Errorf("evaluate %s: %w", field, budget.ctx.Err())
	default:
		return "", &Error{Field: field, Message: evalErr.Error()}
	}
	str, ok := out.(types.String)
	if !ok {
		return "", &Error{Field: field, Message: "must evaluate to a string, got " + typeName(out)}
	}
	if n := utf8.RuneCountInString(string(str)); n > c.opts.MaxResultLength {
		return "", &Error{Field: field, Message: fmt.Sprintf("result is %d characters long, more than the limit of %d", n, c.opts.MaxResultLength)}
	}
	return string(str), nil
}
