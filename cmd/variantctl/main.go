// Command variantctl runs the PackageVariant and PackageVariantSet
// controllers offline, against an in-memory Porch, so a person can see what
// variants and sets would produce before they reach a cluster.
//
//	variantctl render   -f FILE_OR_DIR ... [--package REPO/PACKAGE[@REVISION]=DIR ...] [--out DIR]
//	variantctl expand   -f FILE_OR_DIR ...
//	variantctl validate -f FILE_OR_DIR ...
//	variantctl diff     -f FILE_OR_DIR ... [--delete] [--kubeconfig PATH] [--context NAME] [-n NAMESPACE] [--from DIR] [-o yaml|json]
//	variantctl diff     --package REPO/PACKAGE[@REVISION]=DIR [-f FILE_OR_DIR ...] [--from DIR] ...
//
// Exit status: 0 when every variant and set is Ready (render, expand) or
// valid (validate); 1 when some are not; 2 when the input cannot be used.
// diff: 0 no difference, 1 differences, 2 an error (as kubectl diff).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// Exit statuses.
const (
	exitOK       = 0
	exitNotReady = 1
	exitBadInput = 2
)

const usage = `variantctl runs the PackageVariant and PackageVariantSet controllers offline,
against an in-memory Porch, and shows what they would produce.

Usage:
  variantctl render   -f FILE_OR_DIR ... [--package REPO/PACKAGE[@REVISION]=DIR ...] [--out DIR]
      Run both controllers on the input until they settle; print the sets,
      variants and the package revisions they created or changed (with their
      files) as one YAML stream, or with --out write each draft's files to
      DIR/<repository>/<package>/<workspace>/ and print a summary table.
  variantctl expand   -f FILE_OR_DIR ...
      Print only the PackageVariants the sets would create (needs the
      Repositories and selected objects, not the packages); input validate
      refuses is refused the same way, before anything is expanded.
  variantctl validate -f FILE_OR_DIR ...
      Check PackageVariants and PackageVariantSets as the controllers do,
      CEL expressions type-checked, cost-estimated and dry-run; print every
      problem.

  variantctl diff     -f FILE_OR_DIR ... [--delete] [--kubeconfig PATH] [--context NAME]
                      [-n NAMESPACE] [--from SNAPSHOT] [-o yaml|json]
      Show what applying the files (or with --delete, deleting their
      objects) would make the controllers do to the live fleet: sets and
      variants added, changed or removed, package revisions created,
      replaced, deleted or proposed for deletion, and each package's file
      changes. Reads the cluster only (a read-only client: it cannot write),
      or with --from a saved snapshot (kubectl get ... -o yaml). kubectl's
      client flags work as they do for kubectl (--server, --as, --token,
      --request-timeout ...). Exit status 0 no difference, 1 differences,
      2 an error.
  variantctl diff     --package REPO/PACKAGE[@REVISION]=DIR [-f FILE_OR_DIR ...] ...
      Preview publishing the kpt package in DIR as the next revision of
      REPO/PACKAGE (-f optional): the diff above, then every variant that
      follows the package: upgraded now, later (held back by a rollout,
      with its wave), not affected (pinned), failing to render.

Input: YAML files or directories (recursively; kpt package directories are
skipped) holding Repository, PackageVariant, PackageVariantSet,
PackageRevision and PackageRevisionResources objects (as kubectl get -o yaml
prints them) and any in-cluster objects that injectors or objectSelectors use.

Exit status: 0 all Ready (or valid), 1 some are not (details on stderr),
2 the input cannot be used.

Run "variantctl COMMAND -h" for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// flags common to the commands.
type common struct {
	files     stringList
	namespace string
	timeout   time.Duration
	verbosity int
	// otherInput, when set, says whether flags other than -f give the
	// command something to work on (diff's --package): -f is then
	// optional.
	otherInput func() bool
}

func (c *common) register(fs *flag.FlagSet, withRun bool) {
	fs.Var(&c.files, "f", "a YAML file or a directory of them (repeatable)")
	fs.Var(&c.files, "filename", "same as -f")
	if withRun {
		fs.StringVar(&c.namespace, "namespace", "", "namespace of objects that name none (default: the one namespace the input uses, else \"default\")")
		fs.DurationVar(&c.timeout, "timeout", offline.DefaultTimeout, "how long the controllers may take to settle")
		fs.IntVar(&c.verbosity, "v", 0, "log verbosity of the controllers (0: no logs; 2: each sync)")
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "render":
		return render(ctx, rest, stdout, stderr)
	case "expand":
		return expand(ctx, rest, stdout, stderr)
	case "validate":
		return validate(rest, stdout, stderr)
	case "diff":
		return diff(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "variantctl: unknown command %q; want diff, render, expand or validate\n\n%s", cmd, usage)
		return exitBadInput
	}
}

// parse parses a command's flags; ok false means exit with the status.
// newCommand is the flag set of command name, with the common flags
// registered into c (withRun: also those of the commands that run the
// controllers).
func newCommand(name string, c *common, withRun bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	c.register(fs, withRun)
	return fs
}

// parseInput parses the command line and reads the input it names; when the
// command is to stop, it returns the exit code and false.
func parseInput(fs *flag.FlagSet, c *common, args []string, stderr io.Writer) (*input.Input, int, bool) {
	if code, ok := parse(fs, c, args, stderr); !ok {
		return nil, code, false
	}
	in, ok := readInput(fs.Name(), c.files, stderr)
	if !ok {
		return nil, exitBadInput, false
	}
	return in, 0, true
}

func parse(fs *flag.FlagSet, c *common, args []string, stderr io.Writer) (int, bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitBadInput, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "variantctl %s: unexpected argument %q; give input files with -f\n", fs.Name(), fs.Arg(0))
		return exitBadInput, false
	}
	if len(c.files) == 0 && (c.otherInput == nil || !c.otherInput()) {
		fmt.Fprintf(stderr, "variantctl %s: no input; give at least one -f FILE_OR_DIR\n", fs.Name())
		return exitBadInput, false
	}
	configureLogs(c.verbosity, stderr)
	return 0, true
}

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

// readInput reads -f inputs, printing notes and problems; ok false means
// the input cannot be used.
func readInput(cmd string, files []string, stderr io.Writer) (*input.Input, bool) {
	in, err := input.ReadPaths(files)
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if err != nil {
		printInputError(cmd, err, stderr)
		return nil, false
	}
	return in, true
}

func printInputError(cmd string, err error, stderr io.Writer) {
	var errs input.Errors
	if errors.As(err, &errs) {
		fmt.Fprintf(stderr, "variantctl %s: the input cannot be used:\n", cmd)
		for _, e := range errs {
			fmt.Fprintf(stderr, "  %s\n", e)
		}
		return
	}
	fmt.Fprintf(stderr, "variantctl %s: %v\n", cmd, err)
}

func render(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := newCommand("render", &c, true)
	var packages stringList
	fs.Var(&packages, "package", "load a kpt package directory as a Published revision: REPO/PACKAGE[@REVISION]=DIR (revision 1 by default; repeatable)")
	outDir := fs.String("out", "", "write each draft's files to DIR/<repository>/<package>/<workspace>/ and print a summary table instead of YAML")
	in, code, ok := parseInput(fs, &c, args, stderr)
	if !ok {
		return code
	}
	var flags []input.PackageFlag
	for _, p := range packages {
		f, err := input.ParsePackageFlag(p)
		if err != nil {
			fmt.Fprintf(stderr, "variantctl render: %v\n", err)
			return exitBadInput
		}
		flags = append(flags, f)
	}
	ns, err := in.Namespace(c.namespace)
	if err != nil {
		fmt.Fprintf(stderr, "variantctl render: %v\n", err)
		return exitBadInput
	}
	if ns == "" && len(flags) > 0 {
		fmt.Fprintln(stderr, "variantctl render: the input uses several namespaces; give --namespace for the packages of --package")
		return exitBadInput
	}
	if err := in.AddPackages(ns, flags); err != nil {
		fmt.Fprintf(stderr, "variantctl render: %v\n", err)
		return exitBadInput
	}
	if len(in.Variants) == 0 && len(in.Sets) == 0 {
		fmt.Fprintln(stderr, "variantctl render: the input holds no PackageVariant or PackageVariantSet; nothing to render")
		return exitBadInput
	}
	out, err := offline.Run(ctx, in, offline.RunOptions{Namespace: ns, Timeout: c.timeout})
	if err != nil {
		printInputError("render", err, stderr)
		return exitBadInput
	}
	if *outDir != "" {
		err = out.WriteDir(*outDir, stdout)
	} else {
		err = out.WriteYAML(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "variantctl render: write the output: %v\n", err)
		return exitBadInput
	}
	return report("render", out, fmt.Sprintf("%d PackageVariantSets and %d PackageVariants Ready; %s",
		len(out.Sets), len(out.Variants), revisionSummary(out)), stderr)
}

// report prints what is not Ready (or the summary when all is) and returns
// the exit status.
func report(cmd string, out *offline.Outcome, summary string, stderr io.Writer) int {
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
		return exitNotReady
	}
	fmt.Fprintln(stderr, summary)
	return exitOK
}

func revisionSummary(out *offline.Outcome) string {
	counts := map[string]int{}
	for _, r := range out.Revisions {
		counts[r.Action]++
	}
	return fmt.Sprintf("package revisions: %d created, %d changed, %d deleted",
		counts[offline.ActionCreated], counts[offline.ActionChanged], counts[offline.ActionDeleted])
}
