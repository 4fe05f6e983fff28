package e2eutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PorchsimOptions say how StartPorchsim runs cmd/porchsim-apiserver.
type PorchsimOptions struct {
	// Binary is the porchsim-apiserver binary.
	Binary string
	// Kubeconfig reaches the cluster: porchsim mirrors its Repositories and
	// delegates authentication and authorization to it, so it needs the
	// admin's (or an identity with system:auth-delegator, the
	// extension-apiserver-authentication-reader Role and read access to
	// repositories.config.porch.kpt.dev).
	Kubeconfig string
	// Port is the port on 127.0.0.1 to serve on; SwitchPorchAPIService
	// points the cluster at it.
	Port int
	// WorkDir receives the self-signed serving certificate (cert/) and, when
	// LogFile is empty, the log (porchsim-apiserver.log). Its own directory
	// per server: the default certificate directory is shared by every
	// porchsim on the machine.
	WorkDir string
	// LogFile overrides where the output is also written.
	LogFile string
	// Args are further flags (--package, --package-namespace, -v ...).
	Args []string
	// Timeout bounds the wait for the port (default 60s).
	Timeout time.Duration
}

// StartPorchsim starts porchsim-apiserver serving porch.kpt.dev from memory
// on 127.0.0.1:o.Port and waits until it accepts connections. The port must
// be free: a server already there would be taken for porchsim.
//
// porchsim-apiserver renders strictly (a function that Porch does not build
// in fails the render), as a real Porch started by StartPorch does with no
// function runner: both backends run the same functions.
func StartPorchsim(ctx context.Context, o PorchsimOptions) (*Process, error) {
	if o.Binary == "" || o.Kubeconfig == "" || o.Port == 0 || o.WorkDir == "" {
		return nil, fmt.Errorf("start porchsim-apiserver: Binary, Kubeconfig, Port and WorkDir are required")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", o.Port)
	if Listening(addr) {
		return nil, fmt.Errorf("start porchsim-apiserver: %s is in use already", addr)
	}
	certDir := filepath.Join(o.WorkDir, "cert")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("create porchsim certificate directory: %w", err)
	}
	logFile := o.LogFile
	if logFile == "" {
		logFile = filepath.Join(o.WorkDir, "porchsim-apiserver.log")
	}
	args := append([]string{
		"--kubeconfig", o.Kubeconfig,
		"--secure-port", fmt.Sprint(o.Port),
		"--bind-address", "127.0.0.1",
		"--cert-dir", certDir,
	}, o.Args...)
	p, err := StartWith(ProcessOptions{LogFile: logFile}, "porchsim-apiserver", o.Binary, args...)
	if err != nil {
		return nil, err
	}
	if err := waitListening(ctx, p, addr, o.Timeout); err != nil {
		return nil, err
	}
	return p, nil
}
