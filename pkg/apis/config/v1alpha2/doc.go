// Package v1alpha2 holds the config.porch.kpt.dev/v1alpha2 API:
// PackageVariantSet, served by this project's CRD.
//
// +k8s:deepcopy-gen=package
// +groupName=config.porch.kpt.dev
package v1alpha2
