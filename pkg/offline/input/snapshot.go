package input

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

// WriteSnapshot writes what client serves in namespace ns ("" for all) as
// `kubectl get repositories,packagevariantsets,packagevariants,
// packagerevisions,packagerevisionresources -o yaml` prints it: one v1
// List with server metadata and status, followed by the given in-cluster
// objects. With files false the PackageRevisionResources are left out, as
// a snapshot of a large fleet would (variantctl diff --from then names any
// it needs).
func WriteSnapshot(ctx context.Context, client versioned.Interface, ns string, objects []*unstructured.Unstructured, files bool, w io.Writer) error {
	var items []interface{}
	add := func(obj runtime.Object, apiVersion, kind string) error {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		m["apiVersion"], m["kind"] = apiVersion, kind
		items = append(items, m)
		return nil
	}
	for _, k := range FleetKinds {
		objs, err := k.List(ctx, client, ns)
		if err != nil {
			return fmt.Errorf("list %s: %w", k.Plural, err)
		}
		for _, obj := range objs {
			if err := add(obj, k.APIVersion, k.Kind); err != nil {
				return err
			}
			pr, ok := obj.(*porchv1alpha1.PackageRevision)
			if !ok || !files {
				continue
			}
			prr, err := client.PorchV1alpha1().PackageRevisionResources(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get PackageRevisionResources %s/%s: %w", pr.Namespace, pr.Name, err)
			}
			if err := add(prr, packageRevisionResourcesKind.APIVersion, packageRevisionResourcesKind.Kind); err != nil {
				return err
			}
		}
	}
	for _, o := range objects {
		items = append(items, o.Object)
	}
	b, err := yaml.Marshal(map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]interface{}{"resourceVersion": ""}})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
