package packagevariantset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// Condition types and reasons of a PackageVariantSet, the reference
// controller's.
const (
	ConditionStalled = "Stalled"
	ConditionReady   = "Ready"

	ReasonValidationError   = "ValidationError"
	ReasonUpstreamNotFound  = "UpstreamNotFound"
	ReasonNoMatchingTargets = "NoMatchingTargets"
	ReasonUnexpectedError   = "UnexpectedError"
	ReasonValid             = "Valid"
	ReasonReconciled        = "Reconciled"
)

const readyMessage = "package variants successfully reconciled"

func setCondition(pvs *configv1alpha2.PackageVariantSet, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&pvs.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: pvs.Generation,
	})
}

// setStalled reports a problem only a person can fix, on both conditions,
// as the reference does.
func setStalled(pvs *configv1alpha2.PackageVariantSet, reason, message string) {
	setCondition(pvs, ConditionStalled, metav1.ConditionTrue, reason, message)
	setCondition(pvs, ConditionReady, metav1.ConditionFalse, reason, message)
}

func setValid(pvs *configv1alpha2.PackageVariantSet) {
	setCondition(pvs, ConditionStalled, metav1.ConditionFalse, ReasonValid, "all validation checks passed")
}

func setNotReady(pvs *configv1alpha2.PackageVariantSet, reason, message string) {
	setCondition(pvs, ConditionReady, metav1.ConditionFalse, reason, message)
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
