package conditions

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestList(t *testing.T) {
	cases := map[string]struct {
		reason string
		items  []string
		n      int
		want   string
	}{
		"None":      {reason: "nothing to list", n: 3, want: ""},
		"One":       {reason: "a single item as it is", items: []string{"a"}, n: 3, want: "a"},
		"AtLimit":   {reason: "n items all listed, sorted", items: []string{"c", "a", "b"}, n: 3, want: "a; b; c"},
		"OverLimit": {reason: "the first n sorted, then the count of the rest", items: []string{"e", "d", "c", "b", "a"}, n: 3, want: "a; b; c; and 2 more"},
		"Sentences": {reason: "items with commas of their own stay apart", items: []string{"x, y and z are wrong", "a is missing"}, n: 3, want: "a is missing; x, y and z are wrong"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append([]string(nil), tc.items...)
			if diff := cmp.Diff(tc.want, List(tc.items, tc.n)); diff != "" {
				t.Errorf("%s: List (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(before, tc.items); diff != "" {
				t.Errorf("List changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMake(t *testing.T) {
	var conds []metav1.Condition
	Make(&conds, 3, StalledNotReady("ValidationError", "spec.x is missing", "Error", "invalid: see Stalled")...)
	Make(&conds, 3, Edit{Type: "Paused", Status: metav1.ConditionTrue, Reason: "Paused", Message: "paused"})
	want := []metav1.Condition{
		{Type: Stalled, Status: metav1.ConditionTrue, Reason: "ValidationError", Message: "spec.x is missing", ObservedGeneration: 3},
		{Type: Ready, Status: metav1.ConditionFalse, Reason: "Error", Message: "invalid: see Stalled", ObservedGeneration: 3},
		{Type: "Paused", Status: metav1.ConditionTrue, Reason: "Paused", Message: "paused", ObservedGeneration: 3},
	}
	ignoreTime := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".LastTransitionTime" }, cmp.Ignore())
	if diff := cmp.Diff(want, conds, ignoreTime); diff != "" {
		t.Errorf("Make of StalledNotReady and a set (-want +got):\n%s", diff)
	}
	readySince := conds[1].LastTransitionTime
	// In order: the removal first, then the new Stalled; the unchanged
	// Ready keeps its transition time and takes the new generation.
	Make(&conds, 4, Remove("Paused"), Valid(), Edit{Type: Ready, Status: metav1.ConditionFalse, Reason: "Error", Message: "invalid: see Stalled"})
	if len(conds) != 2 {
		t.Fatalf("Remove left %d conditions, want 2: %+v", len(conds), conds)
	}
	if c := conds[0]; c.Status != metav1.ConditionFalse || c.Reason != ReasonValid || c.Message != ValidMessage || c.ObservedGeneration != 4 {
		t.Errorf("Valid: %+v", c)
	}
	if c := conds[1]; c.ObservedGeneration != 4 || c.LastTransitionTime != readySince {
		t.Errorf("an unchanged Ready takes the generation and keeps its transition time %v: %+v", readySince, c)
	}
}

func TestKeepTransitionTimes(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	now := metav1.NewTime(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	stored := []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionTrue, LastTransitionTime: old},
		{Type: Stalled, Status: metav1.ConditionFalse, LastTransitionTime: old},
	}
	desired := []metav1.Condition{
		{Type: Ready, Status: metav1.ConditionTrue, LastTransitionTime: now},
		{Type: Stalled, Status: metav1.ConditionTrue, LastTransitionTime: now},
		{Type: "New", Status: metav1.ConditionTrue, LastTransitionTime: now},
	}
	KeepTransitionTimes(stored, desired)
	got := []metav1.Time{desired[0].LastTransitionTime, desired[1].LastTransitionTime, desired[2].LastTransitionTime}
	if diff := cmp.Diff([]metav1.Time{old, now, now}, got); diff != "" {
		t.Errorf("transition times: only an unchanged status keeps the stored one (-want +got):\n%s", diff)
	}
}
