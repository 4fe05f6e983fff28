package packagevariantset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// Condition types and reasons of a PackageVariantSet, the reference
// controller's.
const (
	ConditionStalled = conditions.Stalled
	ConditionReady   = conditions.Ready

	ReasonValidationError   = "ValidationError"
	ReasonUpstreamNotFound  = "UpstreamNotFound"
	ReasonNoMatchingTargets = "NoMatchingTargets"
	ReasonUnexpectedError   = "UnexpectedError"
	ReasonValid             = conditions.ReasonValid
	ReasonReconciled        = "Reconciled"
)

const readyMessage = "package variants successfully reconciled"

func setCondition(pvs *configv1alpha2.PackageVariantSet, condType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(&pvs.Status.Conditions, pvs.Generation, condType, status, reason, message)
}

// setStalled reports a problem only a person can fix, on both conditions,
// as the reference does.
func setStalled(pvs *configv1alpha2.PackageVariantSet, reason, message string) {
	conditions.SetStalled(&pvs.Status.Conditions, pvs.Generation, reason, message, reason, message)
}

func setValid(pvs *configv1alpha2.PackageVariantSet) {
	conditions.SetValid(&pvs.Status.Conditions, pvs.Generation)
}

func setNotReady(pvs *configv1alpha2.PackageVariantSet, reason, message string) {
	conditions.SetReady(&pvs.Status.Conditions, pvs.Generation, metav1.ConditionFalse, reason, message)
}

// writeStatus writes the status when it differs from what the cache holds.
func (c *Controller) writeStatus(ctx context.Context, old, pvs *configv1alpha2.PackageVariantSet) error {
	pvs.Status.ObservedGeneration = pvs.Generation
	if equality.Semantic.DeepEqual(old.Status, pvs.Status) {
		return nil
	}
	updated, err := c.client.ConfigV1alpha2().PackageVariantSets(pvs.Namespace).UpdateStatus(ctx, pvs, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of PackageVariantSet %s/%s: %w", pvs.Namespace, pvs.Name, err)
	}
	c.statusWrites.Store(updated.UID, updated.ResourceVersion)
	c.written.Record(old.ResourceVersion, updated)
	return nil
}
