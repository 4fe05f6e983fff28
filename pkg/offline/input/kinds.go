package input

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

// A ServedKind is a kind an Input holds as typed objects: Porch's and the
// controllers' own.
type ServedKind struct {
	APIVersion, Kind string
	// Plural names its objects in messages: "PackageVariantSets".
	Plural string
	rule   nameRule
	empty  func() object
	list   func(ctx context.Context, client versioned.Interface, ns string) (runtime.Object, error)
}

type object interface {
	metav1.Object
	runtime.Object
}

// The kinds an Input holds as typed objects.
var (
	RepositoryKind               = ServedKind{configV1alpha1, "Repository", "Repositories", customResourceName, empty[configv1alpha1.Repository], listRepositories}
	PackageVariantSetKind        = ServedKind{configV1alpha2, "PackageVariantSet", "PackageVariantSets", customResourceName, empty[configv1alpha2.PackageVariantSet], listPackageVariantSets}
	PackageVariantKind           = ServedKind{configV1alpha1, "PackageVariant", "PackageVariants", customResourceName, empty[configv1alpha1.PackageVariant], listPackageVariants}
	PackageRevisionKind          = ServedKind{porchV1alpha1, "PackageRevision", "PackageRevisions", packageRevisionName, empty[porchv1alpha1.PackageRevision], listPackageRevisions}
	packageRevisionResourcesKind = ServedKind{porchV1alpha1, "PackageRevisionResources", "PackageRevisionResources", customResourceName, empty[porchv1alpha1.PackageRevisionResources], nil}
)

// FleetKinds are the kinds a fleet is listed by (from a cluster, from a
// Sim for a snapshot), in the order they are listed. PackageRevisionResources
// are not among them: Porch serves each from git, so they are read one at
// a time.
var FleetKinds = []ServedKind{RepositoryKind, PackageVariantSetKind, PackageVariantKind, PackageRevisionKind}

// servedKinds are all the kinds an Input holds as typed objects.
var servedKinds = append(FleetKinds[:len(FleetKinds):len(FleetKinds)], packageRevisionResourcesKind)

// servedKindOf returns the served kind of that apiVersion and kind.
func servedKindOf(tm metav1.TypeMeta) (ServedKind, bool) {
	for _, k := range servedKinds {
		if k.APIVersion == tm.APIVersion && k.Kind == tm.Kind {
			return k, true
		}
	}
	return ServedKind{}, false
}

func empty[T any, PT interface {
	*T
	object
}]() object {
	return PT(new(T))
}

func listRepositories(ctx context.Context, c versioned.Interface, ns string) (runtime.Object, error) {
	return c.ConfigV1alpha1().Repositories(ns).List(ctx, metav1.ListOptions{})
}

func listPackageVariantSets(ctx context.Context, c versioned.Interface, ns string) (runtime.Object, error) {
	return c.ConfigV1alpha2().PackageVariantSets(ns).List(ctx, metav1.ListOptions{})
}

func listPackageVariants(ctx context.Context, c versioned.Interface, ns string) (runtime.Object, error) {
	return c.ConfigV1alpha1().PackageVariants(ns).List(ctx, metav1.ListOptions{})
}

func listPackageRevisions(ctx context.Context, c versioned.Interface, ns string) (runtime.Object, error) {
	return c.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{})
}

// List lists the kind's objects in namespace ns ("" for all) through
// client, in one request: pointers into the List's items.
func (k ServedKind) List(ctx context.Context, client versioned.Interface, ns string) ([]runtime.Object, error) {
	if k.list == nil {
		return nil, fmt.Errorf("%s are not listed", k.Plural)
	}
	list, err := k.list(ctx, client, ns)
	if err != nil {
		return nil, err
	}
	return meta.ExtractList(list)
}

// Hold adds an object of a served kind, as a clientset lists it, to what in
// holds (variantctl diff reads a live fleet this way). A PackageRevision
// comes without its files: ReadPaths gives it those of its
// PackageRevisionResources, a live fleet's FileSource reads them when a
// run needs them.
func (in *Input) Hold(obj runtime.Object, src Source) {
	switch o := obj.(type) {
	case *configv1alpha1.Repository:
		in.Repositories = append(in.Repositories, Sourced[*configv1alpha1.Repository]{o, src})
	case *configv1alpha2.PackageVariantSet:
		in.Sets = append(in.Sets, Sourced[*configv1alpha2.PackageVariantSet]{o, src})
	case *configv1alpha1.PackageVariant:
		in.Variants = append(in.Variants, Sourced[*configv1alpha1.PackageVariant]{o, src})
	case *porchv1alpha1.PackageRevision:
		in.Revisions = append(in.Revisions, &Revision{PR: o, Source: src})
	case *porchv1alpha1.PackageRevisionResources:
		if in.resources == nil {
			in.resources = map[string]Sourced[*porchv1alpha1.PackageRevisionResources]{}
		}
		in.resources[o.Namespace+"/"+o.Name] = Sourced[*porchv1alpha1.PackageRevisionResources]{o, src}
	}
}
