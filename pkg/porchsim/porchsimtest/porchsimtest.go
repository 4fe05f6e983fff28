// Package porchsimtest holds what the tests of porchsim, of its API server
// and of cmd/porchsim-apiserver share: PackageRevision builders, the wait
// for a server to serve and the checks of a request's error. It imports no
// part of porchsim, so porchsim's own tests can use it.
package porchsimtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// NewDraft is a new PackageRevision, as a client creates it: the package
// repo/pkg in workspace ws, made by task. It has no name: Porch names it.
func NewDraft(namespace, repo, pkg, ws string, task porchv1alpha1.Task) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec: porchv1alpha1.PackageRevisionSpec{
			RepositoryName: repo,
			PackageName:    pkg,
			WorkspaceName:  porchv1alpha1.WorkspaceName(ws),
			Tasks:          []porchv1alpha1.Task{task},
		},
	}
}

// CloneTask is a clone of the revision named upstream.
func CloneTask(upstream string) porchv1alpha1.Task {
	return porchv1alpha1.Task{
		Type: porchv1alpha1.TaskTypeClone,
		Clone: &porchv1alpha1.PackageCloneTaskSpec{
			Upstream: porchv1alpha1.UpstreamPackage{UpstreamRef: &porchv1alpha1.PackageRevisionRef{Name: upstream}},
		},
	}
}

// WaitReady waits until the server at rc answers /readyz with 200. It
// fails the test after 30 seconds, or as soon as the server stops first,
// which it tells by a value on done (put back for the caller's cleanup,
// so done needs a buffer of one).
func WaitReady[T any](t testing.TB, rc *rest.Config, done chan T) {
	t.Helper()
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatalf("http client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case v := <-done:
			done <- v
			return false, fmt.Errorf("server stopped before serving: %v", v)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rc.Host+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("server not ready: %v", err)
	}
}

// ErrOf is the error of a call that also returns a value, for the cases
// of a table that are each one request.
func ErrOf[T any](_ T, err error) error { return err }

// WantErr checks the error of the request what against want: one
// containing want, or none when want is empty; either miss ends the test.
// It reports whether an error was wanted, so that the case can check the
// refusal changed nothing and stop there.
func WantErr(t testing.TB, what string, err error, want string) (wanted bool) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: got %v, want an error containing %q", what, err, want)
	}
	return true
}
