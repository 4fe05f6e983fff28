package e2eutil

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the process when the test binary
// dies: a test that panics (go test's -timeout does) runs no cleanup, and a
// server left running would hold its port, and a controller would keep
// writing, into the next run.
func dieWithParent(cmd *exec.Cmd) {
	// Tied to the OS thread that forks (golang/go#27505); the Go runtime
	// does not end its threads unless a goroutine locked to one exits, which
	// nothing here does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
