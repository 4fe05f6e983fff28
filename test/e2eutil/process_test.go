package e2eutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shell runs script with sh: a stand-in for a server binary.
func shell(t *testing.T, opts ProcessOptions, script string) *Process {
	t.Helper()
	p, err := StartWith(opts, "fake-server", "/bin/sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.Exited() {
			p.Kill()
		}
	})
	return p
}

// waitOutput waits (bounded) until the process has written want.
func waitOutput(t *testing.T, p *Process, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.Output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output after 10s:\n%s", want, p.Tail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProcessStop(t *testing.T) {
	cases := map[string]struct {
		script      string
		grace       time.Duration
		wantErr     string
		wantOutputs []string
	}{
		"a server that exits on SIGTERM stops cleanly": {
			script:      `trap 'echo terminating; exit 0' TERM; echo ready; while :; do sleep 0.05; done`,
			wantOutputs: []string{"ready", "terminating"},
		},
		"the exit status of a failed shutdown is returned": {
			script:      `trap 'echo cannot shut down >&2; exit 3' TERM; echo ready; while :; do sleep 0.05; done`,
			wantErr:     "exit status 3",
			wantOutputs: []string{"ready", "cannot shut down"},
		},
		"a server that ignores SIGTERM is killed after the grace period": {
			script:      `trap '' TERM; echo ready; while :; do sleep 0.05; done`,
			grace:       200 * time.Millisecond,
			wantErr:     "did not exit within 200ms of SIGTERM; killed",
			wantOutputs: []string{"ready"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := shell(t, ProcessOptions{StopGrace: tc.grace}, tc.script)
			waitOutput(t, p, "ready")
			err := p.Stop()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Stop: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Stop: %v, want an error containing %q", err, tc.wantErr)
			}
			if !p.Exited() {
				t.Error("Exited() = false after Stop")
			}
			for _, want := range tc.wantOutputs {
				if !strings.Contains(p.Output(), want) {
					t.Errorf("output lacks %q:\n%s", want, p.Output())
				}
			}
		})
	}
}

func TestProcessKillAndTail(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "server.log")
	p := shell(t, ProcessOptions{LogFile: logFile, Env: []string{"E2EUTIL_GREETING=hello"}},
		`echo "$E2EUTIL_GREETING"; i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; echo ready; while :; do sleep 0.05; done`)
	waitOutput(t, p, "ready")
	if p.Exited() {
		t.Fatal("Exited() = true while running")
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err() = %v while running, want nil", err)
	}
	p.Kill()
	if !p.Exited() {
		t.Fatal("Exited() = false after Kill")
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done() not closed after Kill")
	}
	if p.Err() == nil {
		t.Error("Err() = nil after Kill, want the signal")
	}
	tail := p.Tail()
	if !strings.HasPrefix(tail, "--- fake-server output (end; exited: signal: killed) ---\n") {
		t.Errorf("Tail() header: %q", strings.SplitN(tail, "\n", 2)[0])
	}
	if !strings.HasSuffix(tail, "ready\n") || strings.Contains(tail, "hello") {
		t.Errorf("Tail() is not the end of the output:\n%s", tail)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(logged) != p.Output() {
		t.Errorf("log file differs from the output kept in memory (%d and %d bytes)", len(logged), len(p.Output()))
	}
	if !strings.HasPrefix(p.Output(), "hello\n") {
		t.Errorf("the environment did not reach the process: output starts %q", p.Output()[:20])
	}
}

func TestStartMissingBinary(t *testing.T) {
	_, err := Start("missing", filepath.Join(t.TempDir(), "no-such-binary"))
	if err == nil || !strings.Contains(err.Error(), "start missing") {
		t.Fatalf("error %v, want one naming the process", err)
	}
}
