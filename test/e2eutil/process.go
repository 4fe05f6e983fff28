package e2eutil

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// DefaultStopGrace is how long Stop waits after SIGTERM before it kills: the
// controller's own --shutdown-grace-period (25s by default) fits in it.
const DefaultStopGrace = 30 * time.Second

// tailBytes is how much of a process's output Tail shows: the end of a log
// is where a failure is explained, and a test failure message must stay
// readable.
const tailBytes = 4000

// ProcessOptions change how Start runs a binary.
type ProcessOptions struct {
	// LogFile, when set, also receives the output (the file is created or
	// truncated), so that it outlives the test binary for a post-mortem.
	LogFile string
	// Env are NAME=value entries added to the test's own environment.
	Env []string
	// ReplaceEnv, when set, is the whole environment instead (Env is still
	// added to it).
	ReplaceEnv []string
	// StopGrace bounds how long Stop waits after SIGTERM (default
	// DefaultStopGrace).
	StopGrace time.Duration
}

// Process is a binary running in the background, its output (stdout and
// stderr, interleaved as written) kept in memory.
type Process struct {
	// Name labels the process in failure messages.
	Name  string
	cmd   *exec.Cmd
	out   *SyncBuffer
	grace time.Duration
	done  chan struct{}
	// err is cmd.Wait's result, set before done is closed.
	err error
}

// Start runs path with args in the background.
func Start(name, path string, args ...string) (*Process, error) {
	return StartWith(ProcessOptions{}, name, path, args...)
}

// StartWith runs path with args in the background, as opts say.
func StartWith(opts ProcessOptions, name, path string, args ...string) (*Process, error) {
	p := &Process{Name: name, out: &SyncBuffer{}, grace: opts.StopGrace, done: make(chan struct{})}
	if p.grace <= 0 {
		p.grace = DefaultStopGrace
	}
	var out io.Writer = p.out
	var logFile *os.File
	if opts.LogFile != "" {
		var err error
		if logFile, err = os.Create(opts.LogFile); err != nil {
			return nil, fmt.Errorf("create log file of %s: %w", name, err)
		}
		out = io.MultiWriter(p.out, logFile)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if opts.ReplaceEnv != nil {
		p.cmd.Env = append(append([]string{}, opts.ReplaceEnv...), opts.Env...)
	} else if len(opts.Env) > 0 {
		p.cmd.Env = append(os.Environ(), opts.Env...)
	}
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM and waits for the process to exit, at most the stop
// grace period; then it kills it. It returns the process's exit error (nil
// for a clean exit 0), or an error saying it had to be killed: a binary that
// does not shut down on SIGTERM is a finding.
func (p *Process) Stop() error {
	if p.Exited() {
		return p.err
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(p.grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed", p.Name, p.grace)
	}
}

// Kill ends the process at once, as a node failure would, and waits for it.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once it has exited (nil for exit 0, and
// while it runs).
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Output is everything the process wrote so far.
func (p *Process) Output() string { return p.out.String() }

// Tail is the end of the process's output, headed by its name, for failure
// messages.
func (p *Process) Tail() string {
	s := p.out.String()
	if len(s) > tailBytes {
		s = s[len(s)-tailBytes:]
	}
	state := "running"
	if p.Exited() {
		state = fmt.Sprintf("exited: %v", p.err)
		if p.err == nil {
			state = "exited: 0"
		}
	}
	return fmt.Sprintf("--- %s output (end; %s) ---\n%s", p.Name, state, s)
}

// SyncBuffer is a bytes.Buffer safe for a process's writes and a test's
// reads at the same time.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
