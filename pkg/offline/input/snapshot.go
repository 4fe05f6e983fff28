package input

import (
	"context"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

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
	repos, err := client.ConfigV1alpha1().Repositories(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Repositories: %w", err)
	}
	for i := range repos.Items {
		if err := add(&repos.Items[i], configV1alpha1, "Repository"); err != nil {
			return err
		}
	}
	sets, err := client.ConfigV1alpha2().PackageVariantSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list PackageVariantSets: %w", err)
	}
	for i := range sets.Items {
		if err := add(&sets.Items[i], configV1alpha2, "PackageVariantSet"); err != nil {
			return err
		}
	}
	pvs, err := client.ConfigV1alpha1().PackageVariants(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list PackageVariants: %w", err)
	}
	for i := range pvs.Items {
		if err := add(&pvs.Items[i], configV1alpha1, "PackageVariant"); err != nil {
			return err
		}
	}
	prs, err := client.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list PackageRevisions: %w", err)
	}
	for i := range prs.Items {
		pr := &prs.Items[i]
		if err := add(pr, porchV1alpha1, "PackageRevision"); err != nil {
			return err
		}
		if !files {
			continue
		}
		prr, err := client.PorchV1alpha1().PackageRevisionResources(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get PackageRevisionResources %s/%s: %w", pr.Namespace, pr.Name, err)
		}
		if err := add(prr, porchV1alpha1, "PackageRevisionResources"); err != nil {
			return err
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
