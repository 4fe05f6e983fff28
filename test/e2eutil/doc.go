// Package e2eutil holds what the end-to-end suites (test/e2e, build tag
// e2e; test/e2eporch, build tag e2e_porch) need around their tests: binaries
// run in the background with their output kept, kubectl as the cluster
// admin, a kubeconfig for a ServiceAccount, the APIService of
// porch.kpt.dev switched between the real Porch and porchsim-apiserver, and
// the kube-apiserver's audit log read and counted.
//
// It has no build tag so that `go vet ./...` and `go test ./...` check it
// (the audit-log reader's unit tests need no cluster); only tagged tests
// import it.
package e2eutil
