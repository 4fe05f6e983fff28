package rollout

import (
	"fmt"
	"slices"
	"strings"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// listed is how many names a message lists before "and N more".
const listed = 3

// tally is what one pass over a wave's variants finds, once the open ones
// carry the change (Decide makes one or two such passes per wave).
type tally struct {
	States
	// updated carry the change, the open ones included; started carry it
	// without having finished or failed it, the open ones left out (a
	// failed variant frees its maxConcurrent slot: within maxFailures the
	// wave goes on); notUpdated do not carry it, the open ones counted as
	// not carrying it.
	updated, started, notUpdated int
	// done: every variant carries the change (none just opened) and
	// finished it or failed (whether the failures are within maxFailures
	// is the caller's to check).
	done bool
}

func tallyOf(vs []Variant, open map[string]bool) tally {
	t := tally{done: true}
	for _, v := range vs {
		if v.Skipped {
			t.Skipped++
			if v.Updated {
				t.updated++
			}
			continue
		}
		opened := len(open) > 0 && open[v.Name]
		switch {
		case v.Failed != "":
			t.Failed++
		case v.Updated && v.Finished:
			t.Finished++
		case v.Updated || opened:
			t.Open++
		default:
			t.Pending++
		}
		if v.Updated || opened {
			t.updated++
		}
		if !v.Updated {
			t.notUpdated++
		} else if !v.Finished && v.Failed == "" {
			t.started++
		}
		if !v.Updated || opened || (v.Failed == "" && !v.Finished) {
			t.done = false
		}
	}
	return t
}

// fill sets a wave's counts: its variants, those carrying the change once
// the open ones get it, those that finished it, and those that failed.
func (t tally) fill(ws *configv1alpha2.WaveStatus, variants int) {
	ws.Variants, ws.Finished, ws.Failed, ws.Updated, ws.Skipped = int32(variants), int32(t.Finished), int32(t.Failed), int32(t.updated), int32(t.Skipped)
}

func failedList(vs []Variant) string {
	var items []string
	for _, v := range vs {
		if v.Failed != "" && !v.Skipped {
			items = append(items, fmt.Sprintf("%s (%s)", v.Name, v.Failed))
		}
	}
	return conditions.List(items, listed)
}

// progress says where a progressing wave stands: "2 of 5 finished, 1
// waiting for approval (a.b.packagevariant-2), 2 not started yet".
func progress(vs []Variant, open map[string]bool) string {
	var finished, skipped int
	var waiting, blocked, failed, pending []string
	for _, v := range vs {
		switch {
		case v.Skipped:
			skipped++
		case v.Failed != "":
			failed = append(failed, fmt.Sprintf("%s (%s)", v.Name, v.Failed))
		case !v.Updated && !open[v.Name]:
			pending = append(pending, v.Name)
		case v.Finished && v.Updated:
			finished++
		case v.Blocked != "":
			blocked = append(blocked, fmt.Sprintf("%s (%s)", v.Name, v.Blocked))
		case v.WaitingFor != "":
			waiting = append(waiting, v.WaitingFor)
		}
	}
	parts := []string{fmt.Sprintf("%d of %d finished", finished, len(vs))}
	if len(waiting) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for approval (%s)", len(waiting), conditions.List(waiting, listed)))
	}
	if len(blocked) > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked (%s)", len(blocked), conditions.List(blocked, listed)))
	}
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", len(failed), conditions.List(failed, listed)))
	}
	if len(pending) > 0 {
		parts = append(parts, fmt.Sprintf("%d not started yet", len(pending)))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	return strings.Join(parts, ", ")
}

// listStates lists in ws the variants of vs a person looks for (see
// WaveStatus.VariantStates): those that failed or are skipped, and with
// unfinished (the wave has not finished), every one that carries the
// change once the open ones get it.
func listStates(ws *configv1alpha2.WaveStatus, vs []Variant, open map[string]bool, unfinished bool) {
	ws.VariantStates, ws.VariantStatesNotListed = nil, 0
	for _, v := range vs {
		s := configv1alpha2.VariantState{Name: v.Name}
		switch {
		case v.Skipped:
			s.State = configv1alpha2.VariantSkipped
		case v.Failed != "":
			s.State, s.Detail = configv1alpha2.VariantFailed, v.Failed
		case !unfinished || !(v.Updated || open[v.Name]):
			continue
		case v.Finished && v.Updated:
			s.State = configv1alpha2.VariantFinished
		case v.Blocked != "":
			s.State, s.Detail = configv1alpha2.VariantBlocked, v.Blocked
		case v.WaitingFor != "":
			s.State, s.Detail = configv1alpha2.VariantWaitingForApproval, v.WaitingFor
		default:
			s.State = configv1alpha2.VariantOpen
		}
		ws.VariantStates = append(ws.VariantStates, s)
	}
	slices.SortFunc(ws.VariantStates, func(a, b configv1alpha2.VariantState) int { return strings.Compare(a.Name, b.Name) })
	if n := len(ws.VariantStates); n > configv1alpha2.MaxVariantStatesListed {
		ws.VariantStates, ws.VariantStatesNotListed = ws.VariantStates[:configv1alpha2.MaxVariantStatesListed:configv1alpha2.MaxVariantStatesListed], int32(n-configv1alpha2.MaxVariantStatesListed)
	}
}
