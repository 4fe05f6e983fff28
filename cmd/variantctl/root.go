package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

const rootLong = `variantctl runs the PackageVariant and PackageVariantSet controllers offline,
against an in-memory Porch, and shows what they would produce.

Input: YAML files or directories (recursively; kpt package directories are
skipped) holding Repository, PackageVariant, PackageVariantSet,
PackageRevision and PackageRevisionResources objects (as kubectl get -o yaml
prints them) and any in-cluster objects that injectors or objectSelectors use.

variantctl rollout looks at and steers a set's rollout on a live cluster
(status, approve, pause, resume).

Exit status: 0 all Ready (or valid), 1 some are not (details on stderr),
2 the input cannot be used; diff: 0 no difference, 1 differences, 2 an error;
rollout: 0 done (or nothing to do), 2 refused or failed, with the reason.`

const rootExample = `  # What the example fleet's sets and variants make of its blueprint
  variantctl render -f examples/fleet --package blueprints/app=examples/packages/app

  # What a change to a set would do to a saved fleet
  variantctl diff --from examples/diff/live-snapshot.yaml -f examples/diff/edge-set.yaml

  # Shell completion for bash (also zsh, fish, powershell)
  source <(variantctl completion bash)`

// newRootCommand builds variantctl's command tree. execute runs a command
// once its options are complete and valid (runOptions; tests stop there).
func newRootCommand(streams genericiooptions.IOStreams, execute executeFunc) *cobra.Command {
	root := groupCommand(&cobra.Command{
		Use:           "variantctl",
		Short:         "Run the PackageVariant and PackageVariantSet controllers offline",
		Long:          rootLong,
		Example:       rootExample,
		SilenceErrors: true, // run says them, with the exit status
		SilenceUsage:  true,
	}, streams, "diff, render, expand, validate or rollout")
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newCommand(&renderOptions{IOStreams: streams}, execute),
		newCommand(&expandOptions{IOStreams: streams}, execute),
		newCommand(&validateOptions{IOStreams: streams}, execute),
		newCommand(&diffOptions{IOStreams: streams}, execute),
		newRolloutCommand(streams, execute),
	)
	return root
}

// groupCommand makes cmd a command that only holds others (commands
// says which, for the message): an unknown one is a usage error, and none
// prints the usage, with the status of a bad command line.
func groupCommand(cmd *cobra.Command, streams genericiooptions.IOStreams, commands string) *cobra.Command {
	cmd.Args = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q; want %s", args[0], commands)
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cmd.SetOut(streams.ErrOut)
		_ = cmd.Help()
		return exitStatus(exitBadInput)
	}
	return cmd
}

// executeFunc runs a command once its options are complete and valid.
type executeFunc func(context.Context, options) error

// command is what newCommand needs of a command's options: its cobra
// command (use, help, examples) with its flags bound to the options.
type command interface {
	options
	command() *cobra.Command
}

// newCommand wires o's command: parse the flags, then Complete, Validate
// and execute. Complete's and Validate's errors are usage errors (exit
// status 2, with a pointer to --help).
func newCommand(o command, execute executeFunc) *cobra.Command {
	cmd := o.command()
	args := cmd.Args
	if args == nil {
		args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q; give input files with -f", args[0])
			}
			return nil
		}
	}
	cmd.Args = func(cmd *cobra.Command, a []string) error {
		if err := args(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(cmd, args); err != nil {
			return usageError{err}
		}
		if err := o.Validate(); err != nil {
			return usageError{err}
		}
		return execute(cmd.Context(), o)
	}
	return cmd
}

// withKnownDashes rewrites the spellings Go's flag package accepted and
// pflag does not, so command lines written for earlier variantctl keep
// working: a long flag with one dash (-out, -timeout=5s) and a shorthand
// with two (--f, --n).
func withKnownDashes(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	cmd.InitDefaultHelpFlag()
	fs := cmd.Flags()
	out := make([]string, len(args))
	copy(out, args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		dashes := len(a) - len(strings.TrimLeft(a, "-"))
		var f *pflag.Flag
		switch {
		case dashes == 1 && len(name) > 1 && fs.Lookup(name) != nil:
			f, out[i] = fs.Lookup(name), "-"+a
		case dashes == 2 && len(name) == 1 && fs.Lookup(name) == nil && fs.ShorthandLookup(name) != nil:
			f, out[i] = fs.ShorthandLookup(name), a[1:]
		case dashes > 0:
			f = fs.Lookup(name)
			if f == nil && len(name) == 1 {
				f = fs.ShorthandLookup(name)
			}
		}
		if f != nil && !hasValue && f.NoOptDefVal == "" {
			i++ // its value, whatever it looks like
		}
	}
	return out
}

// inputFlags are every command's: the input files.
type inputFlags struct {
	files []string
}

func (f *inputFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "a YAML file or a directory of them (repeatable)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
}

// inputNamespaces is where the objects of -f that name no namespace go.
const inputNamespaces = `the one namespace the input uses, else "default"`

// runFlags are those of the commands that run the controllers.
type runFlags struct {
	namespace string
	timeout   time.Duration
	verbosity int
}

// add registers the flags; namespaceDefault says where objects that name
// no namespace go when --namespace is not given.
func (f *runFlags) add(fs *pflag.FlagSet, namespaceDefault string) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace of objects that name none (default: "+namespaceDefault+")")
	f.timeout = offline.DefaultTimeout
	fs.Var((*positiveDuration)(&f.timeout), "timeout", "how long the controllers may take to settle (above 0)")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity of the controllers (0: no logs; 2: each sync)")
}

// positiveDuration is a duration flag that refuses 0 and less: a timeout
// that bounds nothing is a mistake to name, not one to replace silently
// with the default.
type positiveDuration time.Duration

func (d *positiveDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("want a duration above 0, such as 2m")
	}
	*d = positiveDuration(v)
	return nil
}

func (d *positiveDuration) String() string { return time.Duration(*d).String() }

func (d *positiveDuration) Type() string { return "duration" }

// configureLogs sends the controllers' logs to stderr at the chosen
// verbosity, or nowhere.
func configureLogs(v int, stderr io.Writer) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", fmt.Sprint(v))
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	if v > 0 {
		klog.SetOutput(stderr)
	} else {
		klog.SetOutput(io.Discard)
	}
}

// requireInput is Validate's check that there is something to work on.
func requireInput(files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("no input; give at least one -f FILE_OR_DIR")
	}
	return nil
}

// readInput reads -f inputs, printing notes on stderr.
func readInput(files []string, stderr io.Writer) (*input.Input, error) {
	in, err := input.ReadPaths(files)
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	return in, err
}

// report prints what is not Ready (or the summary when all is) and returns
// the exit status as an error (nil: all Ready).
func report(cmd string, out *offline.Outcome, summary string, stderr io.Writer) error {
	notReady := out.NotReady()
	if out.Settled != "" {
		fmt.Fprintf(stderr, "variantctl %s: %s; the output shows how far they got\n", cmd, out.Settled)
	}
	for _, e := range out.Events {
		if e.Type == "Warning" {
			fmt.Fprintf(stderr, "warning event on %s: %s: %s\n", e.Object, e.Reason, e.Message)
		}
	}
	for _, r := range out.Revisions {
		if len(r.NotRun) > 0 {
			// Porch with its function runner would run them: no reason
			// to fail, but the files shown lack what they would do.
			fmt.Fprintf(stderr, "warning: PackageRevision %s/%s: not run offline, only Porch's function runner can run %s; the files show the package without their changes\n",
				r.PR.Namespace, r.PR.Name, strings.Join(r.NotRun, ", "))
		}
	}
	for _, l := range out.Rollouts() {
		fmt.Fprintln(stderr, l)
	}
	if len(notReady) > 0 || out.Settled != "" {
		for _, l := range notReady {
			fmt.Fprintln(stderr, l)
		}
		return exitStatus(exitNotReady)
	}
	fmt.Fprintln(stderr, summary)
	return nil
}
