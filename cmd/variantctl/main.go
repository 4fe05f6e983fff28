// Command variantctl runs the PackageVariant and PackageVariantSet
// controllers offline, against an in-memory Porch, so a person can see what
// variants and sets would produce before they reach a cluster.
//
//	variantctl render   -f FILE_OR_DIR ... [--package REPO/PACKAGE[@REVISION]=DIR ...] [--out DIR]
//	variantctl expand   -f FILE_OR_DIR ...
//	variantctl validate -f FILE_OR_DIR ...
//	variantctl diff     -f FILE_OR_DIR ... [--delete] [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [--from DIR] [-o yaml|json]
//	variantctl diff     --package REPO/PACKAGE[@REVISION]=DIR [-f FILE_OR_DIR ...] [--from DIR] ...
//	variantctl rollout  status|approve|pause|resume SET [WAVE] [-n NAMESPACE] [--kubeconfig PATH] ...
//	variantctl completion bash|zsh|fish|powershell
//
// The command tree is cobra's, with kubectl's client flags from
// cli-runtime; each command is an options struct with Complete, Validate
// and Run, as kubectl's are.
//
// Exit status: 0 when every variant and set is Ready (render, expand) or
// valid (validate); 1 when some are not; 2 when the input cannot be used,
// a flag is unknown or its value bad. diff: 0 no difference, 1
// differences, 2 an error (as kubectl diff).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// Exit statuses.
const (
	exitOK       = 0
	exitNotReady = 1
	exitBadInput = 2
	// exitDifferent is diff's status for differences, as kubectl diff's.
	exitDifferent = 1
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns its exit status. Errors are
// said on stderr here, once, prefixed with the command that failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: stdout, ErrOut: stderr}, runOptions)
	root.SetArgs(withKnownDashes(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var status exitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	name := "variantctl"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	printError(stderr, name, err)
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", name)
	}
	return exitBadInput
}

// exitStatus ends a command with that status; what it means was already
// said on stderr (the variants not Ready, the problems found).
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// usageError is a command line variantctl cannot run: an unknown command
// or flag, a bad flag value, flags that do not go together, no input.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef is a usageError with that message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// printError says why cmd ("variantctl render") failed; problems of the
// input are listed one a line, each naming its file, document, object and
// field.
func printError(stderr io.Writer, cmd string, err error) {
	var errs input.Errors
	if errors.As(err, &errs) {
		fmt.Fprintf(stderr, "%s: the input cannot be used:\n", cmd)
		for _, e := range errs {
			fmt.Fprintf(stderr, "  %s\n", e)
		}
		return
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
}

// options is a command as kubectl's are: Complete fills what the flags
// imply, Validate refuses what cannot run, before anything is read; Run
// does the work.
type options interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runOptions runs a command whose options are complete and valid.
func runOptions(ctx context.Context, o options) error { return o.Run(ctx) }
