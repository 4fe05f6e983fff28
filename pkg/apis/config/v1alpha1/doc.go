// Package v1alpha1 holds the config.porch.kpt.dev/v1alpha1 API:
// PackageVariant, served by this project's CRD, and a client-side type for
// Porch's Repository CRD (which Porch installs and owns; the controllers only
// read it).
//
// +k8s:deepcopy-gen=package
// +groupName=config.porch.kpt.dev
package v1alpha1
