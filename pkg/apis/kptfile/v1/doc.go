// Package v1 holds Go types for the kpt.dev/v1 Kptfile and the kpt function
// result list. The Kptfile is a file inside a package, not an API object:
// these types are for reading it and for embedding its Pipeline and Function
// shapes in the controllers' own API. Packages are edited as YAML nodes
// (see pkg/mutate), never by round-tripping through these structs, so that
// comments, key order and unknown fields survive.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=dev.kpt.v1
package v1

// KptFileName is the file name of a package's Kptfile.
const KptFileName = "Kptfile"

// APIVersion and Kind of a Kptfile.
const (
	KptFileAPIVersion = "kpt.dev/v1"
	KptFileKind       = "Kptfile"
)
