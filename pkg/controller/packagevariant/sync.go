package packagevariant

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// sync reconciles one PackageVariant. This first version only resolves the
// variant from the cache; draft management arrives with the PackageVariant
// loop issue.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("packageVariant", key.String())
	pv, err := c.pvLister.PackageVariants(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PackageVariant is gone")
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PackageVariant %s: %w", key, err)
	}
	logger.V(4).Info("Synced PackageVariant", "generation", pv.Generation)
	return nil
}
