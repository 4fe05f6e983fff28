package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// diff exit statuses, as kubectl diff's: 0 no difference, 1 differences,
// 2 an error (exitBadInput).
const exitDifferent = 1

func diff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := newCommand("diff", &c, true)
	var from stringList
	fs.Var(&from, "from", "read the fleet from a saved snapshot (kubectl get ... -o yaml; a file or directory, repeatable) instead of a cluster")
	cluster := clusterFlags(fs)
	fs.StringVar(&c.namespace, "n", "", "same as --namespace")
	del := fs.Bool("delete", false, "show what deleting the objects of the files would do, instead of applying them")
	output := fs.String("o", "", "output format: yaml or json (default: text for people)")
	var packages stringList
	fs.Var(&packages, "package", "preview publishing a new revision of a package: REPO/PACKAGE[@REVISION]=DIR, a kpt package directory (revision: the next one; repeatable); -f is then optional")
	c.otherInput = func() bool { return len(packages) > 0 }
	brief := fs.Bool("brief", false, "leave the files' diffs out of the text output (each changed package revision still says what its files are compared with); -o yaml|json always carry them")
	outDir := fs.String("out", "", "also write the files of each draft the change makes (and, with --package, each draft a variant held back by a rollout gets when its wave opens) to DIR/<namespace>/<repository>/<package>/<workspace>/, as the drafts hold them: injected values unmasked")
	showInjected := fs.Bool("show-injected", false, "show the values injected from in-cluster objects (ConfigMap data, other kinds' spec) in the files' diffs; by default they are masked as *** (*** (before) / *** (after) when they changed), as kubectl diff masks Secrets, so a CI log does not print the cluster's configuration")
	if code, ok := parse(fs, &c, args, stderr); !ok {
		return code
	}
	switch *output {
	case "", "text", "yaml", "json":
	default:
		fmt.Fprintf(stderr, "variantctl diff: -o %q is not an output format; want yaml or json\n", *output)
		return exitBadInput
	}
	upgrades, ok := readUpgrades(packages, stderr)
	if !ok {
		return exitBadInput
	}
	change, ok := readInput("diff", c.files, stderr)
	if !ok {
		return exitBadInput
	}
	if len(upgrades) == 0 && len(change.Variants) == 0 && len(change.Sets) == 0 && len(change.Repositories) == 0 && len(change.Objects) == 0 {
		fmt.Fprintln(stderr, "variantctl diff: the files hold no PackageVariantSet, PackageVariant, Repository or in-cluster object; nothing to diff")
		return exitBadInput
	}
	if !*del && !checkSpecs(change, stderr, stderr) {
		return exitBadInput
	}

	start := time.Now()
	var live *fleet
	if len(from) > 0 {
		if set := cluster.given(fs); len(set) > 0 {
			fmt.Fprintf(stderr, "variantctl diff: --from reads a snapshot, not a cluster; drop --%s\n", strings.Join(set, ", --"))
			return exitBadInput
		}
		live = readSnapshot(from, c.namespace, stderr)
	} else {
		live = readCluster(ctx, cluster.ConfigFlags, change, c.namespace, len(upgrades) > 0, stderr)
	}
	if live == nil {
		return exitBadInput
	}

	d, stats, err := fleetdiff.Run(ctx, live.input, change, fleetdiff.Options{Namespace: live.namespace, Delete: *del, Timeout: c.timeout, Live: live.objects, ShowInjected: *showInjected, Upgrades: upgrades})
	if err != nil {
		var inputErrs input.Errors
		if errors.As(err, &inputErrs) {
			printInputError("diff", err, stderr)
		} else {
			fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
		}
		return exitBadInput
	}
	switch *output {
	case "yaml":
		err = d.WriteYAML(stdout)
	case "json":
		err = d.WriteJSON(stdout)
	default:
		if *brief {
			err = d.WriteTextBrief(stdout)
		} else {
			err = d.WriteText(stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "variantctl diff: write the output: %v\n", err)
		return exitBadInput
	}
	if *outDir != "" {
		written, err := d.WriteDrafts(*outDir)
		if err != nil {
			fmt.Fprintf(stderr, "variantctl diff: write the drafts' files under %s: %v\n", *outDir, err)
			return exitBadInput
		}
		fmt.Fprintf(stderr, "wrote the files of %d drafts under %s\n", len(written), *outDir)
	}
	live.report(stderr, stats, start)
	if d.NotSettled != "" {
		fmt.Fprintf(stderr, "variantctl diff: the controllers did not settle: %s; the difference is incomplete\n", d.NotSettled)
		return exitBadInput
	}
	if d.Empty() {
		return exitOK
	}
	return exitDifferent
}

// readUpgrades reads the package directories of diff's --package flags.
// The revision is the next one unless the flag names it.
func readUpgrades(flags []string, stderr io.Writer) ([]fleetdiff.Upgrade, bool) {
	var out []fleetdiff.Upgrade
	for _, v := range flags {
		f, err := input.ParsePackageFlag(v)
		if err != nil {
			fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
			return nil, false
		}
		if ref, _, _ := strings.Cut(v, "="); !strings.Contains(ref, "@") {
			f.Revision = 0
		}
		files, err := input.ReadPackageDir(f.Dir)
		if err != nil {
			fmt.Fprintf(stderr, "variantctl diff: --package %s: %v\n", v, err)
			return nil, false
		}
		out = append(out, fleetdiff.Upgrade{Repo: f.Repo, Package: f.Package, Revision: f.Revision, Files: files, Dir: f.Dir})
	}
	return out, true
}

// fleet is the live fleet a diff starts from, read from a cluster or a
// snapshot.
type fleet struct {
	input *input.Input
	// objects serves the cluster's in-cluster objects (nil for a
	// snapshot, which holds them in input).
	objects offline.ClusterObjects
	// namespace is for objects of the change that name none.
	namespace string
	// requests counts what was sent to the cluster (nil for a snapshot).
	requests *Requests
}

// report prints what reading the fleet cost.
func (f *fleet) report(stderr io.Writer, stats *fleetdiff.Stats, start time.Time) {
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	source := "read from the snapshot"
	if f.requests != nil {
		source = fmt.Sprintf("%d requests to the cluster", f.requests.Sent())
	}
	fmt.Fprintf(stderr, "read %d PackageVariantSets, %d PackageVariants, %d PackageRevisions and the files of %d (%s) in %s; peak heap %d MiB\n",
		len(f.input.Sets), len(f.input.Variants), len(f.input.Revisions), len(stats.FilesRead), source,
		time.Since(start).Round(time.Millisecond), mem.HeapSys>>20)
}

// readSnapshot reads a saved fleet; nil when it cannot be used (said on
// stderr).
func readSnapshot(paths []string, ns string, stderr io.Writer) *fleet {
	in, err := input.ReadSnapshot(paths)
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if err != nil {
		printInputError("diff", err, stderr)
		return nil
	}
	if ns == "" {
		if ns, err = in.Namespace(""); err != nil {
			ns = input.DefaultNamespace
		}
	}
	return &fleet{input: in, namespace: ns}
}

// readCluster reads the fleet of the namespaces the change touches through
// a read-only client; nil when the cluster cannot be read (said on stderr).
// readCluster reads the fleet in the namespaces the change names, and in
// ns (the namespace of objects that name none) when upgrading is set
// (diff --package publishes the new revisions there).
func readCluster(ctx context.Context, flags *genericclioptions.ConfigFlags, change *input.Input, ns string, upgrading bool, stderr io.Writer) *fleet {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		fmt.Fprintf(stderr, "variantctl diff: cannot use the kubeconfig: %v\n", err)
		return nil
	}
	if ns == "" {
		if ns, _, err = flags.ToRawKubeConfigLoader().Namespace(); err != nil || ns == "" {
			ns = input.DefaultNamespace
		}
	}
	// client-go's default of 5 requests a second would make a change
	// touching a thousand packages wait minutes for its reads; kubectl
	// allows 50.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	f := &fleet{namespace: ns, requests: &Requests{}}
	readOnly := ReadOnlyConfig(cfg, f.requests)
	client, err := versioned.NewForConfig(readOnly)
	if err != nil {
		fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
		return nil
	}
	namespaces := change.Namespaces(ns)
	if upgrading && !slices.Contains(namespaces, ns) {
		namespaces = append(namespaces, ns)
	}
	if f.input, err = input.ReadCluster(ctx, client, namespaces); err != nil {
		fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
		return nil
	}
	objects, err := NewLiveObjects(readOnly, namespaces)
	if err != nil {
		fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
		return nil
	}
	f.objects = objects
	return f
}

// kubeFlags are kubectl's flags for reaching a cluster (--kubeconfig,
// --context, --server, --token, --as, --request-timeout ...), from
// cli-runtime, registered on a Go flag set.
type kubeFlags struct {
	*genericclioptions.ConfigFlags
	names map[string]bool
}

// clusterFlags registers kubectl's cluster flags on fs, all but
// --namespace (variantctl's own: the namespace of objects that name none,
// else the kubeconfig context's) and --cache-dir (nothing is cached).
func clusterFlags(fs *flag.FlagSet) kubeFlags {
	cf := genericclioptions.NewConfigFlags(false)
	cf.Namespace = nil
	cf.CacheDir = nil
	pfs := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	cf.AddFlags(pfs)
	k := kubeFlags{ConfigFlags: cf, names: map[string]bool{}}
	pfs.VisitAll(func(f *pflag.Flag) {
		fs.Var(f.Value, f.Name, f.Usage)
		k.names[f.Name] = true
		if f.Shorthand != "" {
			fs.Var(f.Value, f.Shorthand, "same as --"+f.Name)
			k.names[f.Shorthand] = true
		}
	})
	return k
}

// given are the cluster flags set on the command line, sorted.
func (k kubeFlags) given(fs *flag.FlagSet) []string {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if k.names[f.Name] {
			set = append(set, f.Name)
		}
	})
	sort.Strings(set)
	return set
}
