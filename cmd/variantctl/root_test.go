package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// parsed parses a command line as variantctl does and returns the
// options of the command it names, complete and valid, without running
// it; err is what run would report.
func parsed(args ...string) (options, error) {
	var got options
	var stdout, stderr bytes.Buffer
	root := newRootCommand(genericiooptions.IOStreams{Out: &stdout, ErrOut: &stderr}, func(_ context.Context, o options) error {
		got = o
		return nil
	})
	root.SetArgs(withKnownDashes(root, args))
	err := root.ExecuteContext(context.Background())
	return got, err
}

// examples are the command lines of every command's --help examples,
// without "variantctl": each line that starts with it, or a shell's
// process substitution of it, up to a shell operator.
func examples(t *testing.T) map[string][]string {
	t.Helper()
	root := newRootCommand(genericiooptions.IOStreams{}, runOptions)
	out := map[string][]string{}
	var all []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range all {
		if c.Name() == "completion" || c.Name() == "help" {
			continue // cobra's own
		}
		n := 0
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") || line == "" {
				continue
			}
			_, cmdline, ok := strings.Cut(line, "variantctl ")
			if !ok {
				t.Errorf("variantctl %s: example %q runs no variantctl", c.Name(), line)
				continue
			}
			cmdline, _, _ = strings.Cut(cmdline, ")")
			out[line] = strings.Fields(cmdline)
			n++
		}
		if n == 0 {
			t.Errorf("%s has no examples", c.CommandPath())
		}
	}
	return out
}

// TestHelpExamples keeps the examples of --help true: every example's
// command line is accepted (its flags parse, Complete and Validate pass),
// and each that needs no cluster runs against the repository's examples
// and exits 0 or 1 (never 2, an unusable command line or input), printing
// something.
func TestHelpExamples(t *testing.T) {
	all := examples(t)
	for line, args := range all {
		if _, err := parsed(args...); err != nil {
			t.Errorf("example %q is not accepted: %v", line, err)
		}
	}
	t.Chdir("../..") // the examples name the repository's files
	for line, args := range all {
		if args[0] == "diff" && !slices.Contains(args, "--from") || args[0] == "rollout" {
			continue // reads a cluster
		}
		t.Run(line, func(t *testing.T) {
			args := slices.Clone(args)
			if i := slices.Index(args, "--out"); i >= 0 {
				args[i+1] = t.TempDir() // not into the repository
			}
			var stdout bytes.Buffer
			// the controllers' logs (-v 2) write to stderr from their
			// goroutines while the test reads it
			var stderr e2eutil.SyncBuffer
			code := run(context.Background(), args, &stdout, &stderr)
			if code != exitOK && code != exitNotReady {
				t.Errorf("exit status %d, want 0 or 1\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			if stdout.Len() == 0 {
				t.Errorf("printed nothing on stdout\nstderr:\n%s", stderr.String())
			}
		})
	}
	configureLogs(0, nil) // the -v 2 example's logs end with it
}

// TestFlagSpellings: every spelling of a flag earlier variantctl (on Go's
// flag package) accepted still means the same: long flags with one dash,
// shorthands with two, -f and --filename, -n and --namespace.
func TestFlagSpellings(t *testing.T) {
	cases := map[string]struct {
		args  []string
		check func(o options) bool
	}{
		"render's long flags with one dash": {
			[]string{"render", "-filename", "a.yaml", "-package", "r/p=dir", "-out", "o", "-timeout=90s", "-namespace", "ns"},
			func(o options) bool {
				r := o.(*renderOptions)
				return slices.Equal(r.input.files, []string{"a.yaml"}) && slices.Equal(r.packages, []string{"r/p=dir"}) &&
					r.outDir == "o" && r.run.timeout == 90*time.Second && r.run.namespace == "ns"
			},
		},
		"shorthands with two dashes, -v": {
			[]string{"expand", "--f", "a.yaml", "--f=b.yaml", "--n", "ns", "-v", "2"},
			func(o options) bool {
				e := o.(*expandOptions)
				return slices.Equal(e.input.files, []string{"a.yaml", "b.yaml"}) && e.run.namespace == "ns" && e.run.verbosity == 2
			},
		},
		"a value that looks like a flag is a value": {
			[]string{"validate", "-f", "-out"},
			func(o options) bool { return slices.Equal(o.(*validateOptions).input.files, []string{"-out"}) },
		},
		"diff's flags, kubectl's among them": {
			[]string{"diff", "-f", "a.yaml", "-delete", "-brief", "-show-injected", "-o", "json", "-n", "ns", "--kubeconfig", "k", "-context", "c", "-s", "https://x", "--as", "me"},
			func(o options) bool {
				d := o.(*diffOptions)
				return d.del && d.brief && d.showInjected && d.output == "json" && d.run.namespace == "ns" &&
					*d.config.KubeConfig == "k" && *d.config.Context == "c" && *d.config.APIServer == "https://x" && *d.config.Impersonate == "me" &&
					slices.Equal(d.clusterFlagsGiven, []string{"as", "context", "kubeconfig", "server"})
			},
		},
		"diff --package alone, --from": {
			[]string{"diff", "--package", "blueprints/app=dir", "--from", "snap.yaml", "--output=yaml"},
			func(o options) bool {
				d := o.(*diffOptions)
				return slices.Equal(d.packages, []string{"blueprints/app=dir"}) && slices.Equal(d.from, []string{"snap.yaml"}) && d.output == "yaml"
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parsed(tc.args...)
			if err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			if !tc.check(o) {
				t.Errorf("%v parsed to %+v", tc.args, o)
			}
		})
	}
}

// TestUsageErrors: an unknown command or flag, a bad flag value, flags
// that do not go together: exit status 2 and a message naming the command
// and what is wrong, with a pointer to --help; nothing on stdout.
func TestUsageErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown command":          {[]string{"frobnicate"}, `variantctl: unknown command "frobnicate"`},
		"unknown flag":             {[]string{"validate", "-f", "a.yaml", "--nosuch"}, "variantctl validate: unknown flag: --nosuch"},
		"unknown shorthand":        {[]string{"expand", "-f", "a.yaml", "-x"}, "variantctl expand: unknown shorthand flag: 'x' in -x"},
		"flag of another command":  {[]string{"validate", "-f", "a.yaml", "--timeout", "1s"}, "variantctl validate: unknown flag: --timeout"},
		"bad duration":             {[]string{"render", "-f", "a.yaml", "--timeout", "soon"}, `variantctl render: invalid argument "soon" for "--timeout" flag`},
		"a timeout of 0":           {[]string{"render", "-f", "a.yaml", "--timeout", "0s"}, `variantctl render: invalid argument "0s" for "--timeout" flag: want a duration above 0, such as 2m`},
		"a negative timeout":       {[]string{"diff", "-f", "a.yaml", "--timeout=-5s"}, `variantctl diff: invalid argument "-5s" for "--timeout" flag: want a duration above 0`},
		"bad verbosity":            {[]string{"render", "-f", "a.yaml", "-v", "x"}, `variantctl render: invalid argument "x" for "-v, --v" flag`},
		"bad boolean":              {[]string{"diff", "-f", "a.yaml", "--delete=maybe"}, `variantctl diff: invalid argument "maybe" for "--delete" flag`},
		"missing value":            {[]string{"diff", "-f"}, "variantctl diff: flag needs an argument: 'f' in -f"},
		"bad output":               {[]string{"diff", "-f", "a.yaml", "-o", "xml"}, `variantctl diff: -o "xml" is not an output format; want yaml or json`},
		"bad --package":            {[]string{"diff", "--package", "app=dir"}, `variantctl diff: --package "app=dir": no REPO/PACKAGE`},
		"an argument":              {[]string{"render", "a.yaml"}, `variantctl render: unexpected argument "a.yaml"; give input files with -f`},
		"no input":                 {[]string{"validate"}, "variantctl validate: no input; give at least one -f FILE_OR_DIR"},
		"a snapshot and a cluster": {[]string{"diff", "-f", "a.yaml", "--from", "s.yaml", "-s", "https://x"}, "variantctl diff: --from reads a snapshot, not a cluster; drop --server"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := variantctl(t, tc.args...)
			r.want(t, exitBadInput)
			help := "Run 'variantctl --help' for usage."
			if tc.args[0] != "frobnicate" {
				help = "Run 'variantctl " + tc.args[0] + " --help' for usage."
			}
			mustContain(t, "stderr", r.stderr, tc.want, help)
			if r.stdout != "" {
				t.Errorf("stdout:\n%s", r.stdout)
			}
		})
	}
}

// TestHelp: --help, -h, -help and help COMMAND print the command's help
// with its examples on stdout and exit 0; no command prints the usage on
// stderr and exits 2.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"diff", "--help"}, {"diff", "-h"}, {"diff", "-help"}, {"help", "diff"}} {
		r := variantctl(t, args...)
		r.want(t, exitOK)
		mustContain(t, "stdout of "+strings.Join(args, " "), r.stdout, "Examples:", "variantctl diff --from examples/diff/live-snapshot.yaml", "--kubeconfig string", "-o, --output string")
	}
	r := variantctl(t)
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "Available Commands:", "completion", "diff", "expand", "render", "validate")
}

// TestCompletion: cobra's completion scripts for each shell, and the
// completions they ask variantctl for: commands, flags, -o's formats, the
// kubeconfig's contexts.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := variantctl(t, "completion", shell)
		r.want(t, exitOK)
		mustContain(t, shell+" completion", r.stdout, "variantctl")
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://c}\n"+
		"contexts:\n- name: prod\n  context: {cluster: c}\n- name: staging\n  context: {cluster: c}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "re"}, []string{"render"}},
		{[]string{"__complete", "diff", "--kubeconfig", kubeconfig, "--context", ""}, []string{"prod\n", "staging\n"}},
		{[]string{"__complete", "render", "--pa"}, []string{"--package"}},
		{[]string{"__complete", "diff", "--kubec"}, []string{"--kubeconfig"}},
		{[]string{"__complete", "diff", "-o", ""}, []string{"yaml", "json"}},
	} {
		r := variantctl(t, tc.args...)
		r.want(t, exitOK)
		mustContain(t, strings.Join(tc.args, " "), r.stdout, tc.want...)
	}
}

// TestExampleFilesExist: the examples name files of the repository, so
// that a person can paste them in its root.
func TestExampleFilesExist(t *testing.T) {
	for line, args := range examples(t) {
		for i, a := range args {
			if !strings.HasPrefix(a, "examples/") {
				continue
			}
			path := a
			if _, dir, ok := strings.Cut(a, "="); ok && args[i-1] == "--package" {
				path = dir
			}
			if _, err := os.Stat(filepath.Join("../..", path)); err != nil {
				t.Errorf("example %q: %v", line, err)
			}
		}
	}
}
