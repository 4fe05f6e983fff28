// Package e2eutil holds what the end-to-end suite (test/e2e, build tag e2e)
// needs around its tests: binaries run in the background with their output
// kept, kubectl as the cluster admin, a kubeconfig for a ServiceAccount, the
// backends of porch.kpt.dev (porchsim-apiserver, or a Porch server the user
// brings, with its manifests) and the APIService switched between them, a
// git server for Porch's repositories, and the kube-apiserver's audit log
// read and counted.
//
// It has no build tag so that `go vet ./...` and `go test ./...` check it
// (the audit-log reader, the git server and the manifest reader have unit
// tests that need no cluster); only the tagged suite imports it.
package e2eutil
