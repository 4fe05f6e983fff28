package rollout

import (
	"fmt"
	"strings"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// listed is how many names a message lists before "and N more".
const listed = 3

// count sets a wave's counts: its variants carrying the change once the
// open ones get it, those that finished it, and those that failed.
func count(ws *configv1alpha2.WaveStatus, vs []Variant, open map[string]bool) {
	s := states(vs, open)
	ws.Variants, ws.Finished, ws.Failed, ws.Updated = int32(len(vs)), int32(s.Finished), int32(s.Failed), 0
	for _, v := range vs {
		if v.Updated || open[v.Name] {
			ws.Updated++
		}
	}
}

// states counts the variants of a wave by state, once the open ones carry
// the change.
func states(vs []Variant, open map[string]bool) States {
	var s States
	for _, v := range vs {
		switch {
		case v.Failed != "":
			s.Failed++
		case v.Updated && v.Finished:
			s.Finished++
		case v.Updated || open[v.Name]:
			s.Open++
		default:
			s.Pending++
		}
	}
	return s
}

// done reports whether every variant of a wave carries the change and
// finished it or failed (whether the failures are within maxFailures is
// the caller's to check).
func done(vs []Variant, open map[string]bool) bool {
	for _, v := range vs {
		if !v.Updated || open[v.Name] {
			return false
		}
		if v.Failed == "" && !v.Finished {
			return false
		}
	}
	return true
}

func failedList(vs []Variant) string {
	var items []string
	for _, v := range vs {
		if v.Failed != "" {
			items = append(items, fmt.Sprintf("%s (%s)", v.Name, v.Failed))
		}
	}
	return conditions.List(items, listed)
}

// progress says where a progressing wave stands: "2 of 5 finished, 1
// waiting for approval (a.b.packagevariant-2), 2 not started yet".
func progress(vs []Variant, open map[string]bool) string {
	var finished int
	var waiting, failed, pending []string
	for _, v := range vs {
		switch {
		case v.Failed != "":
			failed = append(failed, fmt.Sprintf("%s (%s)", v.Name, v.Failed))
		case !v.Updated && !open[v.Name]:
			pending = append(pending, v.Name)
		case v.Finished && v.Updated:
			finished++
		case v.WaitingFor != "":
			waiting = append(waiting, v.WaitingFor)
		}
	}
	parts := []string{fmt.Sprintf("%d of %d finished", finished, len(vs))}
	if len(waiting) > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for approval (%s)", len(waiting), conditions.List(waiting, listed)))
	}
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", len(failed), conditions.List(failed, listed)))
	}
	if len(pending) > 0 {
		parts = append(parts, fmt.Sprintf("%d not started yet", len(pending)))
	}
	return strings.Join(parts, ", ")
}
