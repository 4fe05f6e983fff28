package apiserver

import (
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

// packageRevisionResources serves packagerevisionresources from the Sim:
// get, list and update (and so patch), the verbs Porch serves. They are not
// watchable, as in Porch. An update stores the files of a Draft; the answer
// carries the render status.
type packageRevisionResources = resource[*porchv1alpha1.PackageRevisionResources, *porchv1alpha1.PackageRevisionResourcesList]

func newPackageRevisionResources(client porchclient.PackageRevisionResourcesGetter) *packageRevisionResources {
	return &packageRevisionResources{
		client: func(namespace string) typedClient[*porchv1alpha1.PackageRevisionResources, *porchv1alpha1.PackageRevisionResourcesList] {
			return client.PackageRevisionResources(namespace)
		},
		newObj: func() *porchv1alpha1.PackageRevisionResources { return &porchv1alpha1.PackageRevisionResources{} },
		newList: func() *porchv1alpha1.PackageRevisionResourcesList {
			return &porchv1alpha1.PackageRevisionResourcesList{}
		},
		// Porch's plural and singular are the same word.
		singular:       "packagerevisionresources",
		tableConvertor: packageRevisionResourcesTable,
	}
}
