package packagevariant

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// ByInjectedIndex keys a variant by "<namespace>/<group>/<kind>/<name>" for
// every in-cluster object its downstream package was last matched against
// (status.applied.injected), so an event on such an object reaches exactly
// the variants that use it.
const ByInjectedIndex = "byInjected"

func injectedIndexKey(namespace, group, kind, name string) string {
	return namespace + "/" + group + "/" + kind + "/" + name
}

func injectedIndexFunc(obj interface{}) ([]string, error) {
	pv, ok := obj.(*configv1alpha1.PackageVariant)
	if !ok || pv.Status.Applied == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(pv.Status.Applied.Injected))
	for _, ref := range pv.Status.Applied.Injected {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		keys = append(keys, injectedIndexKey(pv.Namespace, gv.Group, ref.Kind, ref.Name))
	}
	return keys, nil
}
