package celtemplate

import (
	"context"
	"fmt"
)

// DefaultSyncBudget is the CEL cost all the evaluations of one sync of a
// set may reach together: the Kubernetes budget of CEL for one validation
// call (ten times the per-expression DefaultCostLimit). A set of a few
// thousand targets with expressions that compute names and labels spends a
// few hundred thousand; an expression near its own limit, evaluated for
// every target, would hold a worker for minutes.
const DefaultSyncBudget uint64 = 10_000_000

// interruptEvery is how many comprehension iterations run between checks
// of the evaluation's context.
const interruptEvery = 100

// Budget is what one sync of a set may spend evaluating: a total CEL cost,
// and a context every evaluation stops on. It is used by one goroutine.
type Budget struct {
	ctx   context.Context
	limit uint64
	spent uint64
}

// NewBudget returns a budget of limit (DefaultSyncBudget when 0) whose
// evaluations stop when ctx ends.
func NewBudget(ctx context.Context, limit uint64) *Budget {
	if limit == 0 {
		limit = DefaultSyncBudget
	}
	return &Budget{ctx: ctx, limit: limit}
}

// Spent is the cost spent so far.
func (b *Budget) Spent() uint64 { return b.spent }

// BudgetError means the evaluations of one sync exceeded the budget; Field
// is the expression whose evaluation went over it.
type BudgetError struct {
	Field string
	Limit uint64
	Spent uint64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the set's expressions reached the CEL cost budget of one sync (%d) at %s, having spent %d: "+
		"make the expressions cheaper (comprehensions over labels and annotations are the usual cost) or split the set into smaller ones", e.Limit, e.Field, e.Spent)
}

// charge records cost spent by the evaluation of field; an error once the
// total is over the limit.
func (b *Budget) charge(field string, cost uint64) error {
	b.spent += cost
	if b.spent > b.limit {
		return &BudgetError{Field: field, Limit: b.limit, Spent: b.spent}
	}
	return nil
}
