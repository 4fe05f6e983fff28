package celtemplate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

const testField = "spec.targets[1].template.labelExprs[0].valueExpr"

var testSet = SetKey{UID: "uid-1", Generation: 1}

// testVars are the variables of a repository-selector target whose
// downstream repository was renamed by downstream.repo.
func testVars() Vars {
	return Vars{
		RepoDefault:    "cluster-01",
		PackageDefault: "foo",
		Upstream: Object{
			Name:        "catalog.foo.v1",
			Namespace:   "default",
			Labels:      map[string]string{"tier": "base"},
			Annotations: map[string]string{"x": "from-upstream"},
		},
		Repository: Object{
			Name:        "cluster-01-deploy",
			Namespace:   "default",
			Labels:      map[string]string{"region": "uswest1"},
			Annotations: map[string]string{"owner": "team-a"},
		},
		Target: ObjectTarget(Object{
			Name:        "cluster-01",
			Namespace:   "default",
			Labels:      map[string]string{"region": "useast1", "org": "hr"},
			Annotations: map[string]string{"note": "selected"},
		}),
	}
}

func TestEvaluate(t *testing.T) {
	cases := map[string]struct {
		reason         string
		expr           string
		withRepository bool
		vars           func(*Vars)
		want           string
	}{
		"RepoDefault": {
			reason: "repoDefault is the repository name the target implies",
			expr:   "repoDefault",
			want:   "cluster-01",
		},
		"PackageDefault": {
			reason: "packageDefault is the package name the target implies",
			expr:   "packageDefault",
			want:   "foo",
		},
		"UpstreamFields": {
			reason: "upstream exposes name, namespace, labels and annotations",
			expr:   "upstream.name + '/' + upstream.namespace + '/' + upstream.labels['tier'] + '/' + upstream.annotations['x']",
			want:   "catalog.foo.v1/default/base/from-upstream",
		},
		"RepositoryFields": {
			reason:         "repository is the downstream Repository, which may differ from the target",
			expr:           "repository.name + '-' + packageDefault + '-' + repository.labels['region'] + '-' + repository.annotations.owner + '-' + repository.namespace",
			withRepository: true,
			want:           "cluster-01-deploy-foo-uswest1-team-a-default",
		},
		"TargetObject": {
			reason: "for a selector target, target is the selected object",
			expr:   "target.labels['region'] + '-' + target.name + '-' + target.namespace + '-' + target.annotations['note']",
			want:   "useast1-cluster-01-default-selected",
		},
		"TargetRepoPackage": {
			reason: "for a repository/package list target, target has the keys repo and package",
			expr:   "target.repo + ':' + target['package']",
			vars:   func(v *Vars) { v.Target = RepoPackageTarget("cluster-02", "bar") },
			want:   "cluster-02:bar",
		},
		"NilLabelsAreEmptyMaps": {
			reason: "nil labels and annotations are empty maps, so size and has work instead of failing on null",
			expr:   "string(size(upstream.labels)) + string(size(upstream.annotations)) + string(has(upstream.labels.tier))",
			vars:   func(v *Vars) { v.Upstream.Labels, v.Upstream.Annotations = nil, nil },
			want:   "00false",
		},
		"RepoExprWithoutRepository": {
			reason: "downstream.repoExpr sees every variable but repository",
			expr:   "target.labels['region'] == 'useast1' ? repoDefault + '-east' : repoDefault",
			want:   "cluster-01-east",
		},
		"StringExtensions": {
			reason: "the string functions of the CEL extension library are available",
			expr:   "target.labels.org.upperAscii() + '-' + upstream.name.replace('.', '-') + '-' + upstream.name.split('.')[1] + '-' + ['a', 'b'].join('+')",
			want:   "HR-catalog-foo-v1-foo-a+b",
		},
		"Macros": {
			reason: "the standard macros work over labels",
			expr:   "target.labels.exists(k, k == 'org') ? 'has-org' : 'no-org'",
			want:   "has-org",
		},
		"SerialisedObjectsHidden": {
			reason: "annotations that hold a whole object (kubectl's last-applied-configuration, any JSON object with apiVersion and kind) are not seen; the others are",
			expr:   "string(size(target.annotations)) + '-' + string('kubectl.kubernetes.io/last-applied-configuration' in target.annotations) + '-' + string('copy' in target.annotations) + '-' + target.annotations.note + '-' + target.annotations.json",
			vars: withTarget(Object{Name: "settings", Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Secret","data":{"password":"c2VjcmV0"}}`,
				"copy": ` {"kind": "ConfigMap", "apiVersion": "v1", "data": {"k": "v"}}`,
				"note": "kept",
				"json": `{"a": 1}`,
			}}),
			want: `2-false-false-kept-{"a": 1}`,
		},
		"ObjectsAsMaps": {
			reason: "objects can still be indexed by field name and tested with in, as when they were declared as maps",
			expr:   "upstream['name'] + '-' + string('labels' in target) + '-' + dyn(target)['labels']['region']",
			want:   "catalog.foo.v1-true-useast1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vars := testVars()
			if tc.vars != nil {
				tc.vars(&vars)
			}
			got, err := NewCache(Options{}).Evaluate(testBudget(), testSet, testField, tc.expr, tc.withRepository, vars)
			if err != nil {
				t.Fatalf("%s\nEvaluate(%q): unexpected error: %v", tc.reason, tc.expr, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nEvaluate(%q): -want, +got:\n%s", tc.reason, tc.expr, diff)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	cases := map[string]struct {
		reason         string
		opts           Options
		expr           string
		withRepository bool
		vars           func(*Vars)
		// wantMessage are substrings of the message.
		wantMessage []string
	}{
		"SyntaxError": {
			reason:      "a syntax error is reported with CEL's message",
			expr:        "repoDefault +",
			wantMessage: []string{"Syntax error"},
		},
		"RepositoryInRepoExpr": {
			reason:      "repository is not declared for downstream.repoExpr, and the message says why",
			expr:        "repository.name",
			wantMessage: []string{"undeclared reference to 'repository'", "not available in downstream.repoExpr"},
		},
		"UndeclaredVariable": {
			reason:         "a variable that does not exist is a compile error",
			expr:           "cluster.name",
			withRepository: true,
			wantMessage:    []string{"undeclared reference to 'cluster'"},
		},
		"NoSuchKey": {
			reason:      "a missing label is a runtime error naming the key",
			expr:        "target.labels['zone']",
			wantMessage: []string{"no such key: zone"},
		},
		"OnlyFourFieldsOfAnObject": {
			reason:      "fields other than name, namespace, labels and annotations are not declared, so reading one is a compile error",
			expr:        "upstream.spec",
			wantMessage: []string{"undefined field 'spec'", "expose only name, namespace, labels and annotations"},
		},
		"OtherKindOfTarget": {
			reason:      "target declares the fields of both kinds of target, so a field of the other kind fails only when evaluated",
			expr:        "target.repo",
			wantMessage: []string{"no such key: repo"},
		},
		"ZeroTarget": {
			reason:      "without a target, target is an empty map",
			expr:        "target.name",
			vars:        func(v *Vars) { v.Target = Target{} },
			wantMessage: []string{"no such key: name"},
		},
		"DivisionByZero": {
			reason:      "runtime errors keep CEL's message",
			expr:        "string(size(repoDefault) / (size(packageDefault) - 3))",
			wantMessage: []string{"division by zero"},
		},
		"NotAStringAtCompileTime": {
			reason:      "a result whose type is known not to be a string is refused when compiled",
			expr:        "1 + 2",
			wantMessage: []string{"must evaluate to a string, got int"},
		},
		"NotAStringAtRuntime": {
			reason:      "a dyn result that turns out not to be a string is refused when evaluated",
			expr:        "target.labels",
			wantMessage: []string{"must evaluate to a string, got map"},
		},
		"ExpressionTooLong": {
			reason:      "an expression longer than MaxExpressionLength is not compiled",
			opts:        Options{MaxExpressionLength: 10},
			expr:        "'abcdefghijk'",
			wantMessage: []string{"expression is 13 characters long, more than the limit of 10"},
		},
		"ResultTooLong": {
			reason:      "a result longer than MaxResultLength is refused",
			opts:        Options{MaxResultLength: 5},
			expr:        "'αβγδεζ'",
			wantMessage: []string{"result is 6 characters long, more than the limit of 5"},
		},
		"CostLimitExceeded": {
			reason: "an evaluation that costs more than CostLimit is stopped: here an object with more labels than the estimate assumes",
			opts:   Options{CostLimit: 10_000},
			expr:   "target.labels.all(k, k != '') ? 'a' : 'b'",
			vars: func(v *Vars) {
				labels := map[string]string{}
				for i := range 5000 {
					labels[fmt.Sprint(i)] = "v"
				}
				v.Target = ObjectTarget(Object{Labels: labels})
			},
			wantMessage: []string{"evaluation exceeded the cost limit of 10000", "actual cost limit exceeded"},
		},
		"EstimatedCostExceeded": {
			reason:      "an expression whose estimated cost exceeds CostLimit is refused before it is evaluated",
			opts:        Options{CostLimit: 100},
			expr:        "string(size([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(a, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(b, a * b))))",
			wantMessage: []string{"estimated cost", "exceeds the cost limit of 100"},
		},

		"FormatRefused": {
			reason:      "format can build a string of any size for one unit of cost",
			expr:        "'%s'.format([repoDefault])",
			wantMessage: []string{"format is not available in templates"},
		},
		"QuoteRefused": {
			reason:      "each nested strings.quote may double its input for one unit of cost",
			expr:        "strings.quote(repoDefault)",
			wantMessage: []string{"strings.quote is not available in templates"},
		},
		"ReplaceTooLong": {
			reason: "replace refuses to build a string that could exhaust memory",
			// 2 * 10^6 bytes: more than minBuiltStringLimit, less than
			// the cost limit would notice before it is built. The
			// estimate assumes a label value of at most 63 characters,
			// so only the evaluation sees this one.
			expr:        "target.labels['region'].replace('e', '" + strings.Repeat("b", 1000) + "')",
			vars:        withTarget(Object{Labels: map[string]string{"region": strings.Repeat("e", 2000)}}),
			wantMessage: []string{"replace would build a string of more than 1048576 bytes"},
		},
		"ReplaceEstimated": {
			reason:      "the static estimate prices replace by the string it builds",
			expr:        "'aaaaaaaaaa'.replace('a', '" + strings.Repeat("b", 1000) + "').replace('b', '" + strings.Repeat("c", 1000) + "')",
			wantMessage: []string{"estimated cost", "exceeds the cost limit of 1000000"},
		},
		"ReplaceStillCharged": {
			reason:      "the guarded replace keeps the cost model of the extension library when evaluated",
			opts:        Options{CostLimit: 20_000},
			expr:        "target.annotations['note'].replace('a', 'bbbbbbbbbbbbbbbbbbbb')",
			vars:        withTarget(Object{Annotations: map[string]string{"note": strings.Repeat("a", 50_000)}}),
			wantMessage: []string{"evaluation exceeded the cost limit of 20000"},
		},
		"JoinTooLong": {
			reason: "join refuses to build a string that could exhaust memory",
			// 251 references to one 5000-byte literal cost little, yet
			// join would build 1.25 MB from them.
			expr:        "target.labels['region'].split(',').map(a, '" + strings.Repeat("x", 5000) + "').join()",
			vars:        withTarget(Object{Labels: map[string]string{"region": strings.Repeat(",", 250)}}),
			wantMessage: []string{"join would build a string of more than 1048576 bytes"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vars := testVars()
			if tc.vars != nil {
				tc.vars(&vars)
			}
			got, err := NewCache(tc.opts).Evaluate(testBudget(), testSet, testField, tc.expr, tc.withRepository, vars)
			if err == nil {
				t.Fatalf("%s\nEvaluate(%q) = %q, want an error", tc.reason, tc.expr, got)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%s\nEvaluate(%q): error %v is a %T, want *Error", tc.reason, tc.expr, err, err)
			}
			if e.Field != testField {
				t.Errorf("%s\nEvaluate(%q): Field = %q, want %q", tc.reason, tc.expr, e.Field, testField)
			}
			for _, want := range tc.wantMessage {
				if !strings.Contains(e.Message, want) {
					t.Errorf("%s\nEvaluate(%q): Message %q does not contain %q", tc.reason, tc.expr, e.Message, want)
				}
			}
			if want := testField + ": " + e.Message; err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		reason         string
		expr           string
		withRepository bool
		wantMessage    string // empty: no error
	}{
		"Valid": {
			reason:         "a valid expression passes without variables",
			expr:           "repository.name + '-' + target.labels['region']",
			withRepository: true,
		},
		"OnePassWithinTheEstimate": {
			reason:         "one pass over labels or annotations with string functions stays within the estimated cost",
			expr:           "target.annotations.filter(k, k.startsWith('x/')).map(k, target.annotations[k].replace(',', ';')).join(',') + repository.labels.map(k, k + '=' + repository.labels[k]).join(',')",
			withRepository: true,
		},
		"ObjectsAsMaps": {
			reason: "objects can be indexed by a field name and tested with in",
			expr:   "'repo' in target ? target['package'] : upstream['name']",
		},
		"RuntimeErrorNotReported": {
			reason: "a key that may be missing is only known when evaluated",
			expr:   "target.labels['zone']",
		},
		"CompileError": {
			reason:      "compile errors are reported",
			expr:        "repository.name",
			wantMessage: "undeclared reference to 'repository'",
		},
		"NotAString": {
			reason:      "a result statically not a string is reported",
			expr:        "size(repoDefault)",
			wantMessage: "must evaluate to a string, got int",
		},
		"UnexposedField": {
			reason:         "a field an object does not expose is a compile error, not a missing key found per target",
			expr:           "repository.spec.secret",
			withRepository: true,
			wantMessage:    "undefined field 'spec'",
		},
		"UnexposedTargetField": {
			reason:      "target declares the fields of a selected object and of a list entry, nothing else",
			expr:        "target.foo",
			wantMessage: "undefined field 'foo'",
		},
		"UnexposedFieldByKey": {
			reason:      "indexing an object by a constant key is checked like a field",
			expr:        "upstream['spec']",
			wantMessage: "undefined field 'spec'",
		},
		"UnexposedFieldInHas": {
			reason:      "has() of a field that is never there is a compile error",
			expr:        "has(target.foo) ? 'a' : 'b'",
			wantMessage: "undefined field 'foo'",
		},
		"UnexposedFieldInIn": {
			reason:      "an in test of a constant key that is never there is a compile error",
			expr:        "'spec' in upstream ? 'a' : 'b'",
			wantMessage: "undefined field 'spec'",
		},
		"MapResult": {
			reason:         "labels are declared as a map of strings, so returning them is known not to be a string",
			expr:           "repository.labels",
			withRepository: true,
			wantMessage:    "must evaluate to a string, got map(string, string)",
		},
		"DynMapResult": {
			reason:      "a dyn result that is a map whatever the target is found by the dry run",
			expr:        "dyn({'a': 'b'})",
			wantMessage: "must evaluate to a string, got map for every target",
		},
		"DivisionByZero": {
			reason:      "a division by zero that does not depend on the target fails the dry run",
			expr:        "string(1/0)",
			wantMessage: "fails for every target: division by zero",
		},
		"DivisionByZeroInComprehension": {
			reason:      "the dry run evaluates comprehensions over constants",
			expr:        "[1, 0].map(x, string(10 / x)).join(',')",
			wantMessage: "fails for every target: division by zero",
		},
		"ConversionError": {
			reason:      "any error independent of the target fails the dry run",
			expr:        "string(int('ten')) + repoDefault",
			wantMessage: "fails for every target",
		},
		"NestedComprehension": {
			reason:         "a comprehension over labels nested in another exceeds the limit for objects with many labels",
			expr:           "repository.labels.all(a, repository.labels.all(b, a != b)) ? 'y' : 'n'",
			withRepository: true,
			wantMessage:    "exceeds the cost limit of 1000000",
		},
		"LongConstantRange": {
			reason:      "a million iterations over constants exceed the limit for every target",
			expr:        "string(size([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(a, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(b, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(c, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(d, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(e, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(f, f))))))))",
			wantMessage: "estimated cost",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := NewCache(Options{}).Check(testSet, testField, tc.expr, tc.withRepository)
			if tc.wantMessage == "" {
				if err != nil {
					t.Fatalf("%s\nCheck(%q): unexpected error: %v", tc.reason, tc.expr, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Field != testField || !strings.Contains(e.Message, tc.wantMessage) {
				t.Fatalf("%s\nCheck(%q) = %v, want an *Error for %s containing %q", tc.reason, tc.expr, err, testField, tc.wantMessage)
			}
		})
	}
}

// TestCheckLeavesDataToEvaluation: what depends on a target's values is not
// refused by Check (a set may be right for every target it has), only by
// Evaluate for the target where it fails.
func TestCheckLeavesDataToEvaluation(t *testing.T) {
	cases := map[string]struct {
		reason string
		expr   string
		// vars for an evaluation that fails, and the message it gives.
		vars        func(*Vars)
		wantMessage string
	}{
		"DivisionBySize": {
			reason:      "10 / size(labels) fails only for an object without labels",
			expr:        "string(10 / size(repository.labels))",
			vars:        func(v *Vars) { v.Repository.Labels = nil },
			wantMessage: "division by zero",
		},
		"ErrorInABranch": {
			reason:      "an error in a branch some targets do not take",
			expr:        "repoDefault == 'cluster-01' ? string(1/0) : repoDefault",
			wantMessage: "division by zero",
		},
		"MissingLabel": {
			reason:      "a label some objects lack",
			expr:        "repository.labels['zone']",
			wantMessage: "no such key: zone",
		},
		"FieldOfTheOtherKindOfTarget": {
			reason:      "Check does not know the kind of target, so target.repo compiles",
			expr:        "target.repo",
			wantMessage: "no such key: repo",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCache(Options{})
			if err := c.Check(testSet, testField, tc.expr, true); err != nil {
				t.Fatalf("%s\nCheck(%q): unexpected error: %v", tc.reason, tc.expr, err)
			}
			vars := testVars()
			if tc.vars != nil {
				tc.vars(&vars)
			}
			_, err := c.Evaluate(testBudget(), testSet, testField, tc.expr, true, vars)
			if err == nil || !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("%s\nEvaluate(%q) = %v, want an error containing %q", tc.reason, tc.expr, err, tc.wantMessage)
			}
		})
	}
}

// TestCacheCompiles follows one cache through a set's life and counts the
// compilations at each step.
func TestCacheCompiles(t *testing.T) {
	c := NewCache(Options{})
	const expr = "repoDefault + '-x'"
	gen1 := SetKey{UID: "a", Generation: 1}
	gen2 := SetKey{UID: "a", Generation: 2}
	steps := []struct {
		reason       string
		do           func() error
		wantCompiles int64
	}{
		{"the first evaluation compiles", func() error { return eval(c, gen1, expr, false) }, 1},
		{"the same expression in the same generation is reused", func() error { return eval(c, gen1, expr, false) }, 1},
		{"Check reuses the program too", func() error { return c.Check(gen1, "other.field", expr, false) }, 1},
		{"with the repository variable it is another program", func() error { return eval(c, gen1, expr, true) }, 2},
		{"another set compiles its own", func() error { return eval(c, SetKey{UID: "b", Generation: 1}, expr, false) }, 3},
		{"a new generation compiles again", func() error { return eval(c, gen2, expr, false) }, 4},
		{"the new generation reuses its program", func() error { return eval(c, gen2, expr, false) }, 4},
		{"a late caller of the old generation compiles without caching", func() error { return eval(c, gen1, expr, false) }, 5},
		{"and has not evicted the new generation", func() error { return eval(c, gen2, expr, false) }, 5},
		{"a broken expression compiles once", func() error { return wantError(c.Check(gen2, "f", "1 +", false)) }, 6},
		{"and its error is cached", func() error { return wantError(c.Check(gen2, "f", "1 +", false)) }, 6},
		{"a too-long expression is never compiled", func() error {
			return wantError(c.Check(gen2, "f", strings.Repeat("a", DefaultMaxExpressionLength+1), false))
		}, 6},
		{"Forget drops the programs of the set", func() error { c.Forget("a"); return eval(c, gen2, expr, false) }, 7},
		{"Forget left other sets alone", func() error { return eval(c, SetKey{UID: "b", Generation: 1}, expr, false) }, 7},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.reason, err)
		}
		if got := c.compiles.Load(); got != s.wantCompiles {
			t.Fatalf("step %d (%s): %d compilations, want %d", i, s.reason, got, s.wantCompiles)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.sets["b"].programs); n != 1 {
		t.Errorf("set b holds %d programs, want 1", n)
	}
}

func eval(c *Cache, set SetKey, expr string, withRepository bool) error {
	got, err := c.Evaluate(testBudget(), set, "f", expr, withRepository, testVars())
	if err == nil && got != "cluster-01-x" {
		return fmt.Errorf("got %q", got)
	}
	return err
}

func wantError(err error) error {
	if err == nil {
		return errors.New("no error")
	}
	return nil
}

// TestEvaluateConcurrent has workers share a cache across sets and
// generations, as the controller's workers do; run it with -race.
func TestEvaluateConcurrent(t *testing.T) {
	c := NewCache(Options{})
	exprs := []string{
		"repoDefault + '-' + target.labels['region']",
		"repository.name.upperAscii()",
		"upstream.annotations['x']",
	}
	want := []string{"cluster-01-useast1", "CLUSTER-01-DEPLOY", "from-upstream"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				set := SetKey{UID: k8stypes.UID(fmt.Sprintf("set-%d", i%3)), Generation: int64(i / 50)}
				j := (w + i) % len(exprs)
				got, err := c.Evaluate(testBudget(), set, "f", exprs[j], true, testVars())
				if err == nil && got != want[j] {
					err = fmt.Errorf("Evaluate(%q) = %q, want %q", exprs[j], got, want[j])
				}
				if err != nil {
					errs <- err
					return
				}
				if i%70 == 0 {
					c.Forget(set.UID)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCostLimit shows that the default limit lets a moderate comprehension
// through, that a small limit stops it, and that the default stops a
// million iterations.
func TestCostLimit(t *testing.T) {
	const ten = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
	nested := func(depth int) string {
		e := "a0"
		for i := depth - 1; i >= 0; i-- {
			e = fmt.Sprintf("%s.map(a%d, %s)", ten, i, e)
		}
		return "string(size(" + e + "))"
	}
	cases := map[string]struct {
		reason    string
		costLimit uint64
		expr      string
		wantErr   bool
	}{
		"DefaultAllowsTenThousand": {
			reason: "ten thousand iterations fit in the default limit",
			expr:   nested(4),
		},
		"SmallLimitStopsTenThousand": {
			reason:    "a small limit stops the same expression",
			costLimit: 1000,
			expr:      nested(4),
			wantErr:   true,
		},
		"DefaultStopsAMillion": {
			reason:  "a million iterations exceed the default limit",
			expr:    nested(6),
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NewCache(Options{CostLimit: tc.costLimit}).Evaluate(testBudget(), testSet, testField, tc.expr, false, testVars())
			if !tc.wantErr {
				if err != nil || got != "10" {
					t.Fatalf("%s\nEvaluate = %q, %v; want \"10\"", tc.reason, got, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Message, "cost limit") {
				t.Fatalf("%s\nEvaluate = %q, %v; want a cost limit *Error", tc.reason, got, err)
			}
		})
	}
}

func BenchmarkEvaluateCached(b *testing.B) {
	c := NewCache(Options{})
	vars := testVars()
	const expr = "repository.name + '-' + target.labels['region']"
	if _, err := c.Evaluate(testBudget(), testSet, testField, expr, true, vars); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Evaluate(testBudget(), testSet, testField, expr, true, vars); err != nil {
			b.Fatal(err)
		}
	}
}

// testBudget is a budget no test reaches, on a context that does not end.
func testBudget() *Budget { return NewBudget(context.Background(), 0) }

// withTarget makes o the target the expression sees.
func withTarget(o Object) func(*Vars) {
	return func(v *Vars) { v.Target = ObjectTarget(o) }
}
