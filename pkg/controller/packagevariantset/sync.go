package packagevariantset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// sync reconciles one PackageVariantSet. This first version only resolves
// the set from the cache; fan-out arrives with the PackageVariantSet issue.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("packageVariantSet", key.String())
	pvs, err := c.pvsLister.PackageVariantSets(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PackageVariantSet is gone")
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PackageVariantSet %s: %w", key, err)
	}
	logger.V(4).Info("Synced PackageVariantSet", "generation", pvs.Generation)
	return nil
}
