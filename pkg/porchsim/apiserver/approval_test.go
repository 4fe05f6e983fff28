package apiserver

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// TestApprovalPublishesProposedRevisions: approval publishes a Proposed
// revision (revision number, latest label); it refuses a Draft and a stale
// resourceVersion, with Porch's statuses.
func TestApprovalPublishesProposedRevisions(t *testing.T) {
	s := startServer(t, newFleet(t), nil)
	ctx := context.Background()
	prs := s.client.PorchV1alpha1().PackageRevisions(ns)
	approve := func(pr *porchv1alpha1.PackageRevision) error {
		return s.client.PorchV1alpha1().RESTClient().Put().Namespace(ns).Resource("packagerevisions").
			Name(pr.Name).SubResource("approval").Body(pr).Do(ctx).Error()
	}
	draft := s.cloneDraft(t, "app", "packagevariant-1")
	draft.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	err := approve(draft)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cannot approve package with Draft lifecycle value; only Proposed packages can be approved") {
		t.Fatalf("approving a Draft: %v, want Porch's 422 saying only Proposed packages can be approved", err)
	}

	cur, err := prs.Get(ctx, draft.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	proposed, err := prs.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := cur.DeepCopy()
	stale.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	if err := approve(stale); err == nil || !strings.Contains(err.Error(), "the object has been modified") {
		t.Errorf("approving with a stale resourceVersion: %v, want a conflict", err)
	}
	proposed.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	if err := approve(proposed); err != nil {
		t.Fatalf("approve: %v", err)
	}
	got, err := prs.Get(ctx, draft.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished || got.Spec.Revision != 1 ||
		got.Labels[porchv1alpha1.LatestPackageRevisionLabel] != "true" {
		t.Errorf("after approval: lifecycle %s revision %d labels %v; want Published, 1, latest",
			got.Spec.Lifecycle, got.Spec.Revision, got.Labels)
	}
	got.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDraft
	if err := approve(got); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "package with Published lifecycle value can only be updated to 'ProposeDeletion'") {
		t.Errorf("approving back to Draft: %v, want Porch's 422", err)
	}
}
