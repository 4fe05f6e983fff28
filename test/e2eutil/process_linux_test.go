package e2eutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHelperStartAndDie is not a test: TestProcessDiesWithParent runs the
// test binary with it as a parent that starts a process and exits without
// stopping it, as a test that panics does.
func TestHelperStartAndDie(t *testing.T) {
	if os.Getenv("E2EUTIL_HELPER_START_AND_DIE") == "" {
		t.Skip("run by TestProcessDiesWithParent")
	}
	p, err := Start("orphan", "/bin/sh", "-c", "while :; do sleep 0.05; done")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Printf("pid %d\n", p.Pid())
	os.Exit(0)
}

// TestProcessDiesWithParent: a process started by a test binary that dies
// is killed by the kernel, not left running.
func TestProcessDiesWithParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartAndDie$")
	cmd.Env = append(os.Environ(), "E2EUTIL_HELPER_START_AND_DIE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var pid int
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), "pid "); ok {
			pid, _ = strconv.Atoi(rest)
		}
	}
	if pid == 0 {
		t.Fatalf("the helper printed no pid:\n%s", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
			t.Fatalf("process %d still runs 10s after the test binary that started it exited", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, killed but not yet reaped by
// whoever adopted it, does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
