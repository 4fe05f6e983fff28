package celtemplate

import (
	"errors"
	"strings"
	"testing"
)

// FuzzEvaluate feeds arbitrary expressions and label values to Evaluate: it
// must never panic (expressions come from anyone who may create a
// PackageVariantSet), and every error must be an *Error naming the field.
// `go test` runs only the seeds; run
// `go test -fuzz FuzzEvaluate ./pkg/celtemplate/` to search further.
func FuzzEvaluate(f *testing.F) {
	f.Add("repository.name + '-' + packageDefault", true, "useast1")
	f.Add("repository.name", false, "")
	f.Add("target.labels['region'].replace('e', target.labels['region'])", true, "eeeeeeee")
	f.Add("[1, 2].map(x, [3, 4].map(y, x / (y - 4)))", false, "x")
	f.Add("'\\xff' + upstream.annotations.x + ", true, "\xff")
	f.Add("target.labels.all(k, k.matches(target.labels[k]))", false, "(")
	f.Add("upstream.labels.join(',')", false, "a")
	f.Add("dyn(target)['labels']['region'].split('').join('-')", false, "a-b")

	c := NewCache(Options{CostLimit: 10_000, MaxExpressionLength: 1000, MaxResultLength: 100})
	f.Fuzz(func(t *testing.T, expr string, withRepository bool, label string) {
		vars := testVars()
		vars.Target = ObjectTarget(Object{Name: label, Labels: map[string]string{"region": label, label: "v"}})
		const field = "spec.targets[0].template.downstream.repoExpr"
		_, err := c.Evaluate(testBudget(), testSet, field, expr, withRepository, vars)
		checkErr(t, field, err)
		checkErr(t, field, c.Check(testSet, field, expr, withRepository))
	})
}

func checkErr(t *testing.T, field string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is a %T, want *Error", err, err)
	}
	if e.Field != field || e.Message == "" {
		t.Fatalf("error %#v, want Field %q and a message", e, field)
	}
	// Evaluate recovers from panics, but one recovered is still a bug to
	// report upstream.
	if strings.Contains(e.Message, "internal error") {
		t.Fatalf("CEL panicked: %s", e.Message)
	}
}
