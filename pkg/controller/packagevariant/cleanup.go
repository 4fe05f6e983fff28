package packagevariant

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

func hasFinalizer(pv *configv1alpha1.PackageVariant) bool {
	for _, f := range pv.Finalizers {
		if f == configv1alpha1.Finalizer {
			return true
		}
	}
	return false
}

// addFinalizer makes sure the variant cannot disappear before its
// downstream revisions were deleted or orphaned.
func (c *Controller) addFinalizer(ctx context.Context, pv *configv1alpha1.PackageVariant) (*configv1alpha1.PackageVariant, error) {
	upd := pv.DeepCopy()
	upd.Finalizers = append(upd.Finalizers, configv1alpha1.Finalizer)
	updated, err := c.client.ConfigV1alpha1().PackageVariants(pv.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("add finalizer to PackageVariant %s/%s: %w", pv.Namespace, pv.Name, err)
	}
	c.written.Record(pv.ResourceVersion, updated)
	return updated, nil
}

// cleanup runs while the variant is being deleted: every revision it owns
// goes through the deletion policy, and only when all of them succeeded is
// the finalizer removed. The reference controller drops the finalizer even
// after a failure, leaving packages behind.
func (c *Controller) cleanup(ctx context.Context, pv *configv1alpha1.PackageVariant) error {
	if !hasFinalizer(pv) {
		return nil
	}
	// A draft the variant created that the cache does not show yet is
	// found by the live list below.
	var failed []string
	var firstErr error
	for _, pr := range c.ownedRevisions(pv) {
		if err := c.release(ctx, pv, pr, "PackageVariant "+pv.Name+" is being deleted"); err != nil {
			failed = append(failed, pr.Name)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		upd := pv.DeepCopy()
		upd.Status = calculateStatus(pv, &outcome{cleanup: &cleanupFailure{revisions: failed, err: firstErr}})
		if err := c.writeStatus(ctx, pv, upd); err != nil {
			klog.FromContext(ctx).V(2).Info("Could not report cleanup failure", "err", err)
		}
		return fmt.Errorf("clean up downstream revisions of %s/%s: %w", pv.Namespace, pv.Name, firstErr)
	}
	// The cache may not show every revision the variant owns yet (an
	// adoption it has not seen): once the finalizer is gone the garbage
	// collector would delete those whatever the policy. Only a live list
	// showing nothing owned in the downstream package lets it go.
	left, err := c.liveOwnedRevisions(ctx, pv)
	if err != nil {
		return fmt.Errorf("list downstream revisions of %s/%s before removing its finalizer: %w", pv.Namespace, pv.Name, err)
	}
	if len(left) > 0 {
		var names []string
		for _, pr := range left {
			if err := c.release(ctx, pv, pr, "PackageVariant "+pv.Name+" is being deleted"); err != nil {
				return fmt.Errorf("clean up downstream revisions of %s/%s: %w", pv.Namespace, pv.Name, err)
			}
			names = append(names, pr.Name)
		}
		return fmt.Errorf("released %s, which the cache did not show as the variant's yet; the finalizer stays until a live list shows nothing left", conditions.List(names, len(names)))
	}
	upd := pv.DeepCopy()
	var kept []string
	for _, f := range upd.Finalizers {
		if f != configv1alpha1.Finalizer {
			kept = append(kept, f)
		}
	}
	upd.Finalizers = kept
	removed, err := c.client.ConfigV1alpha1().PackageVariants(pv.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove finalizer from PackageVariant %s/%s: %w", pv.Namespace, pv.Name, err)
	}
	c.forgetDrafts(pv.UID)
	c.unsaved.forget(pv.UID)
	c.conflicts.Delete(pv.UID)
	c.renderRetries.forget(pv.UID)
	// The write without the finalizer stays remembered until the variant's
	// DELETED event: a sync from a cache that still shows the finalizer
	// must see it gone, not clean up (and write) again.
	c.written.Record(pv.ResourceVersion, removed)
	klog.FromContext(ctx).V(2).Info("Cleaned up; finalizer removed", "policy", deletionPolicy(pv))
	return nil
}

// liveOwnedRevisions lists, from the server, the revisions of the
// variant's downstream package that carry an owner reference to it.
func (c *Controller) liveOwnedRevisions(ctx context.Context, pv *configv1alpha1.PackageVariant) ([]*porchv1alpha1.PackageRevision, error) {
	ds := pv.Spec.Downstream
	if ds == nil || ds.Repo == "" || ds.Package == "" {
		return nil, nil
	}
	list, err := c.client.PorchV1alpha1().PackageRevisions(pv.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"spec.repository": ds.Repo, "spec.packageName": ds.Package}.AsSelector().String(),
	})
	if err != nil {
		return nil, err
	}
	var out []*porchv1alpha1.PackageRevision
	for i := range list.Items {
		pr := &list.Items[i]
		// The selector is the server's to apply; check anyway.
		if pr.Spec.RepositoryName == ds.Repo && pr.Spec.PackageName == ds.Package && hasOwner(pr, pv.UID) {
			out = append(out, pr)
		}
	}
	return out, nil
}

func describePackage(repo, pkg string) string {
	return strings.Join([]string{repo, pkg}, "/")
}
