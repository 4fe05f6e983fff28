package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
)

// TestInvalidVariantStalls checks that every problem reaches the Stalled
// condition, joined by "; ", and that a stale Conflict condition goes.
func TestInvalidVariantStalls(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	pv.Generation = 4
	pv.Spec.Downstream = nil
	pv.Spec.DeletionPolicy = "y"
	pv.Status.Conditions = []metav1.Condition{{Type: ConditionConflict, Status: metav1.ConditionTrue, Reason: ReasonConflict}}
	f := newFixture(t)
	c, _ := f.newController(ctx)
	if err := c.reconcile(ctx, pv); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	want := []metav1.Condition{
		{Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: ReasonValidationError, ObservedGeneration: 4,
			Message: `missing required field spec.downstream; spec.deletionPolicy can only be "orphan" or "delete"`},
		{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonError, ObservedGeneration: 4,
			Message: "invalid packagevariant object: fix the problems the Stalled condition lists"},
		{Type: ConditionPublished, Status: metav1.ConditionFalse, Reason: configv1alpha1.ReasonNotPublished, ObservedGeneration: 4,
			Message: "the variant is invalid: fix the problems the Stalled condition lists"},
	}
	if diff := cmp.Diff(want, pv.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"),
		cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if meta.FindStatusCondition(pv.Status.Conditions, ConditionConflict) != nil {
		t.Errorf("an invalid variant must not keep a Conflict condition")
	}
	if got := f.WriteActions(); len(got) != 0 {
		t.Errorf("an invalid variant must not touch any package; got %d API calls", len(got))
	}
}
