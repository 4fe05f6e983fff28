//go:build e2e && linux

package e2e

import (
	"fmt"
	"os"
	"syscall"
)

// maxRSS is the peak resident memory of a finished process.
func maxRSS(ps *os.ProcessState) string {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return fmt.Sprintf("%d MiB", ru.Maxrss/1024)
	}
	return "?"
}
