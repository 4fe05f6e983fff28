// Package mutate applies a PackageVariant's mutations to the files of a
// package: package context data, Kptfile pipeline functions and config
// injection, in that order (the order the design document gives, so each
// mutation sees the result of the one before).
//
// Everything here is a pure function over a map of file path to content: the
// controller reads PackageRevisionResources, calls Apply, and writes back only
// when Result.Changed says so. In-cluster objects for config injection come in
// through an ObjectGetter, so this package never talks to the API server.
//
// YAML is edited as nodes (sigs.k8s.io/kustomize/kyaml/yaml), never by
// round-tripping through Go structs: comments, key order and fields this
// package does not know survive every edit. Files, and documents within a
// file, that a mutation did not change are returned byte for byte, and a
// second Apply of the same input changes nothing, so that a controller that
// reconciles an up-to-date variant never writes and never makes a new draft.
package mutate
