// Package conditions holds the status-condition rules both controllers
// share: the condition types and the Valid reason they have in common with
// the reference controllers, how a condition is set (always with the
// object's generation), how Stalled and Ready go together, which transition
// times a sync keeps, and the one format lists take in messages.
package conditions

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of both PackageVariants and PackageVariantSets.
const (
	// Ready is True when the object's packages (or variants) are as its
	// spec asks.
	Ready = "Ready"
	// Stalled is True when only a change of the object can help.
	Stalled = "Stalled"
)

// ReasonValid is Stalled=False's reason, and ValidMessage its message.
const (
	ReasonValid  = "Valid"
	ValidMessage = "all validation checks passed"
)

// Edit is one change a sync makes to an object's conditions: the
// condition of Type set as given, or removed when Status is empty. A sync
// computes its edits and makes them at once (Make).
type Edit struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Remove is the edit that removes condition condType.
func Remove(condType string) Edit { return Edit{Type: condType} }

// StalledNotReady is a problem only a person can fix: Stalled=True and
// Ready=False, each with its reason and message.
func StalledNotReady(stalledReason, stalledMessage, readyReason, readyMessage string) []Edit {
	return []Edit{
		{Stalled, metav1.ConditionTrue, stalledReason, stalledMessage},
		{Ready, metav1.ConditionFalse, readyReason, readyMessage},
	}
}

// Valid is Stalled=False: every validation check passed.
func Valid() Edit { return Edit{Stalled, metav1.ConditionFalse, ReasonValid, ValidMessage} }

// Make makes edits, in order, on the conditions of an object at
// generation: each condition is set with the generation, and an unchanged
// status keeps its lastTransitionTime (meta.SetStatusCondition).
func Make(conds *[]metav1.Condition, generation int64, edits ...Edit) {
	for _, e := range edits {
		if e.Status == "" {
			meta.RemoveStatusCondition(conds, e.Type)
			continue
		}
		meta.SetStatusCondition(conds, metav1.Condition{
			Type:               e.Type,
			Status:             e.Status,
			Reason:             e.Reason,
			Message:            e.Message,
			ObservedGeneration: generation,
		})
	}
}

// KeepTransitionTimes gives each condition of desired whose status is the
// stored one's the stored lastTransitionTime. A sync may set a condition
// one way and back (Stalled False while validating, True when the server
// refuses); only a change against what is stored is a transition. Without
// it such a sync writes a new time, its own write wakes it, and it never
// settles.
func KeepTransitionTimes(stored, desired []metav1.Condition) {
	for i := range desired {
		if s := meta.FindStatusCondition(stored, desired[i].Type); s != nil && s.Status == desired[i].Status {
			desired[i].LastTransitionTime = s.LastTransitionTime
		}
	}
}

// List formats items for a message, the same way everywhere: sorted,
// separated by "; " (items may be sentences with commas of their own), at
// most n of them, then "and N more": "a; b; c; and 4 more". items is not
// changed.
func List(items []string, n int) string {
	sorted := append([]string(nil), items...)
	sort.Strings(sorted)
	if len(sorted) <= n {
		return strings.Join(sorted, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(sorted[:n], "; "), len(sorted)-n)
}
