package celtemplate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestBudgetStopsTheSync: the evaluations of one sync share a budget; the
// one that goes over it and every one after fail with a *BudgetError that
// names the expression and says what to do.
func TestBudgetStopsTheSync(t *testing.T) {
	c := NewCache(Options{})
	vars := testVars()
	expr := "target.labels.all(k, k.size() < 100) ? 'ok' : 'no'"
	b := NewBudget(context.Background(), 0)
	if _, err := c.Evaluate(b, testSet, testField, expr, true, vars); err != nil {
		t.Fatal(err)
	}
	per := b.Spent()
	if per == 0 {
		t.Fatal("an evaluation spent nothing of the budget")
	}
	b = NewBudget(context.Background(), 10*per)
	var err error
	n := 0
	for ; n < 100 && err == nil; n++ {
		_, err = c.Evaluate(b, testSet, fmt.Sprintf("spec.targets[%d].template.labelExprs[0].valueExpr", n), expr, true, vars)
	}
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("after %d evaluations: %v, want a *BudgetError", n, err)
	}
	if n != 11 {
		t.Errorf("the budget of ten evaluations stopped the %dth", n)
	}
	for _, want := range []string{"CEL cost budget of one sync", "spec.targets[10].template.labelExprs[0].valueExpr", "split the set"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if _, err := c.Evaluate(b, testSet, testField, "'cheap'", true, vars); !errors.As(err, &be) {
		t.Errorf("an evaluation after the budget was spent: %v, want a *BudgetError", err)
	}
}

// TestEvaluationStopsOnItsContext: an evaluation that would run for
// seconds stops when its context ends, with the context's error.
func TestEvaluationStopsOnItsContext(t *testing.T) {
	labels := map[string]string{}
	for i := range 250 {
		labels[fmt.Sprintf("label-%03d", i)] = "v"
	}
	vars := testVars()
	vars.Target = ObjectTarget(Object{Name: "t", Labels: labels})
	// 250^3 iterations: seconds of CPU, within a cost limit raised for it.
	expr := "target.labels.all(a, target.labels.all(b, target.labels.all(c, a + b + c != ''))) ? 'x' : 'y'"
	c := NewCache(Options{CostLimit: 1 << 50})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Evaluate(NewBudget(ctx, 1<<60), testSet, testField, expr, true, vars)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Evaluate = %v, want it stopped by its context (context.DeadlineExceeded)", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := c.Evaluate(NewBudget(cancelled, 0), testSet, testField, "'cheap'", true, vars); !errors.Is(err, context.Canceled) {
		t.Errorf("Evaluate on a cancelled context = %v, want context.Canceled", err)
	}
}
