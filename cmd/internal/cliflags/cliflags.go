// Package cliflags parses the flags of the project's servers
// (variant-controller, porchsim-apiserver) alike: klog's verbosity flags
// beside their own, --help on stdout, and a usage error on stderr that
// names the program.
package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// Exit codes Parse returns when the program is to stop.
const (
	ExitOK    = 0 // --help
	ExitUsage = 2 // bad flags
)

// Parse adds klog's -v and -vmodule to fs (only the verbosity flags: the
// log-file flags make no sense in a pod), sets its usage (summary, then the
// flags) and parses args, which must hold flags only. When the program is to
// stop, after --help or a usage error (said on stderr), it returns the exit
// code and true.
func Parse(fs *pflag.FlagSet, summary string, args []string, stdout, stderr io.Writer) (int, bool) {
	name := fs.Name()
	fs.SetOutput(stderr)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	for _, f := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(f))
	}
	fs.Usage = func() {
		fmt.Fprintf(stdout, "%s\n\nUsage:\n  %s [flags]\n\nFlags:\n%s", summary, name, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ExitOK, true
		}
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for the flags.\n", name, err, name)
		return ExitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q; it takes flags only\n", name, fs.Args())
		return ExitUsage, true
	}
	return 0, false
}
