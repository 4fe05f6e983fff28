// Package v1alpha1 holds client-side Go types for Porch's porch.kpt.dev/v1alpha1
// API: PackageRevision and PackageRevisionResources. Porch serves these from
// its aggregated API server; they are never CRDs. The types are written from
// Porch's published schema to be wire compatible (same group, version, kind,
// JSON field names and value types).
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.kpt.porch.v1alpha1
// +groupName=porch.kpt.dev
package v1alpha1
