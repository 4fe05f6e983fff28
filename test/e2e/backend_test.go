//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// The backends of porch.kpt.dev.
const (
	backendPorchsim = "porchsim"
	backendPorch    = "porch"
)

// backend is a server of porch.kpt.dev the tests run against.
type backend struct {
	name string // backendPorchsim or backendPorch
	// port serves porch.kpt.dev on 127.0.0.1.
	port int
	proc *e2eutil.Process
}

// log is the server's output so far, for checks (porchsim logs overlapping
// writes) and failure messages.
func (b *backend) log() string { return b.proc.Output() }

// ns is the namespace a test named base uses on this backend: each
// backend's run has its own, so neither sees the other's Repositories'
// packages and a controller confined to it acts on its backend's only.
func (b *backend) ns(base string) string { return base + "-" + b.name }

// startBackend starts the server of backend name on a free port, its state
// under the work directory.
func startBackend(ctx context.Context, name, porchBin string, manifests e2eutil.PorchManifests) (*backend, error) {
	port, err := e2eutil.FreePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(env.workDir, name)
	b := &backend{name: name, port: port}
	switch name {
	case backendPorchsim:
		b.proc, err = e2eutil.StartPorchsim(ctx, e2eutil.PorchsimOptions{
			Binary: filepath.Join(env.bin, "porchsim-apiserver"), Kubeconfig: env.kubeconfig, Port: port, WorkDir: dir,
		})
		return b, err
	case backendPorch:
		if b.proc, err = e2eutil.StartPorch(ctx, e2eutil.PorchOptions{Binary: porchBin, Kubeconfig: env.kubeconfig, Port: port, WorkDir: dir}); err != nil {
			return nil, err
		}
		// Its built-in functions are known once it has read its
		// FunctionConfigs, within seconds; a Porch that logs it in other
		// words costs this wait and a warning.
		err := wait.PollUntilContextTimeout(ctx, poll, 30*time.Second, true, func(context.Context) (bool, error) {
			if b.proc.Exited() {
				return false, fmt.Errorf("porch-server exited while loading its FunctionConfigs\n%s", b.proc.Tail())
			}
			return e2eutil.PorchLoadedFunctionConfigs(b.log(), manifests), nil
		})
		if err != nil && b.proc.Exited() {
			return nil, err
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: warning: could not confirm from its log that porch-server loaded its FunctionConfigs; built-in functions may not be available yet\n")
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown backend %q", name)
}

// forEachBackend runs f as a subtest per backend, with porch.kpt.dev
// switched to it first. A subtest's cleanups (its controllers stopped among
// them) run before the next backend is switched in: a controller's
// informers must never relist from a backend that lacks its revisions.
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	for _, b := range env.backends {
		t.Run(b.name, func(t *testing.T) {
			b.serve(t)
			f(t, b)
		})
	}
}

// serve points porch.kpt.dev at b and reports how long the aggregator took.
func (b *backend) serve(t *testing.T) {
	t.Helper()
	sw, err := e2eutil.SwitchPorchAPIService(context.Background(), env.adminConfig, env.kubectl, b.port, 0)
	if err != nil {
		t.Fatalf("switch porch.kpt.dev to %s: %v\n%s", b.name, err, b.proc.Tail())
	}
	if sw.Unchanged {
		reportf(t, "porch.kpt.dev served by %s (port %d): unchanged", b.name, b.port)
		return
	}
	reportf(t, "porch.kpt.dev switched to %s (port %d): aggregator let go of the old server in %s, answered from the new one %s later",
		b.name, b.port, sw.Refused.Round(time.Millisecond), sw.Answered.Round(time.Millisecond))
}

// grepLines keeps the lines of text that contain substr.
func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
