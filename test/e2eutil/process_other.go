//go:build !linux

package e2eutil

import "os/exec"

// dieWithParent does nothing where there is no parent-death signal: a
// process a panicking test leaves behind must be stopped by hand.
func dieWithParent(*exec.Cmd) {}
