package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

const diffLong = `Show what applying the files (or with --delete, deleting their objects)
would make the controllers do to the live fleet: sets and variants added,
changed or removed, package revisions created, replaced, deleted or
proposed for deletion, and each package's file changes. Reads the cluster
only (a read-only client: it cannot write), or with --from a saved snapshot
(kubectl get ... -o yaml). kubectl's client flags work as they do for
kubectl (--kubeconfig, --context, --server, --as, --token,
--request-timeout ...).

With --package REPO/PACKAGE[@REVISION]=DIR (-f then optional), preview
publishing the kpt package in DIR as the next revision of REPO/PACKAGE: the
diff above, then every variant that follows the package: upgraded now,
later (held back by a rollout, with its wave), not affected (pinned),
failing to render, and the collisions of each variant's changes with the
new revision.

Exit status, as kubectl diff's: 0 no difference, 1 differences, 2 an error.`

const diffExample = `  # What applying a change would do to the fleet of the kubeconfig's current context
  variantctl diff -f examples/diff/edge-set.yaml

  # The same as a read-only ServiceAccount, in namespace platform, for a bot
  variantctl diff -f examples/diff/edge-set.yaml --context prod --as system:serviceaccount:platform:reader -n platform -o json

  # Without a cluster: against a saved fleet (kubectl get ... -o yaml)
  variantctl diff --from examples/diff/live-snapshot.yaml -f examples/diff/edge-set.yaml

  # What deleting the set would do
  variantctl diff --from examples/diff/live-snapshot.yaml --delete -f examples/diff/edge-set.yaml

  # Preview publishing the blueprint's next revision, without the files' diffs
  variantctl diff --from examples/diff/live-snapshot.yaml --package blueprints/app=examples/upgrade/app --brief`

// diffNamespaces is where diff puts the objects of -f that name no
// namespace.
const diffNamespaces = `the kubeconfig context's; with --from the one namespace the snapshot uses, else "default"`

// diffOptions are variantctl diff's.
type diffOptions struct {
	genericiooptions.IOStreams
	input inputFlags
	run   runFlags
	// config is kubectl's client flags, all but --namespace (variantctl's
	// own: the namespace of objects that name none, else the kubeconfig
	// context's) and --cache-dir (nothing is cached).
	config       *genericclioptions.ConfigFlags
	from         []string
	packages     []string
	output       string
	outDir       string
	del          bool
	brief        bool
	showInjected bool

	// clusterFlags are the names of config's flags; clusterFlagsGiven
	// those on the command line, sorted (Complete).
	clusterFlags      []string
	clusterFlagsGiven []string
}

func (o *diffOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "diff -f FILE_OR_DIR ... | --package REPO/PACKAGE[@REVISION]=DIR",
		Short:   "Show what a change would make the controllers do to the live fleet",
		Long:    diffLong,
		Example: diffExample,
	}
	fs := cmd.Flags()
	o.input.add(cmd)
	o.run.add(fs, diffNamespaces)
	fs.StringArrayVar(&o.from, "from", nil, "read the fleet from a saved snapshot (kubectl get ... -o yaml; a file or directory, repeatable) instead of a cluster")
	fs.BoolVar(&o.del, "delete", false, "show what deleting the objects of the files would do, instead of applying them")
	fs.StringVarP(&o.output, "output", "o", "", "output format: yaml or json (default: text for people)")
	fs.StringArrayVar(&o.packages, "package", nil, "preview publishing a new revision of a package: REPO/PACKAGE[@REVISION]=DIR, a kpt package directory (revision: the next one; repeatable); -f is then optional")
	fs.BoolVar(&o.brief, "brief", false, "leave the files' diffs out of the text output (each changed package revision still says what its files are compared with); -o yaml|json always carry them")
	fs.StringVar(&o.outDir, "out", "", "also write the files of each draft the change makes (and, with --package, each draft a variant held back by a rollout gets when its wave opens) to DIR/<namespace>/<repository>/<package>/<workspace>/, as the drafts hold them: injected values unmasked")
	fs.BoolVar(&o.showInjected, "show-injected", false, "show the values injected from in-cluster objects (ConfigMap data, other kinds' spec) in the files' diffs; by default they are masked as *** (*** (before) / *** (after) when they changed), as kubectl diff masks Secrets, so a CI log does not print the cluster's configuration")
	_ = cmd.MarkFlagDirname("out")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))

	o.config = genericclioptions.NewConfigFlags(false)
	o.config.Namespace = nil
	o.config.CacheDir = nil
	cluster := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	o.config.AddFlags(cluster)
	cluster.VisitAll(func(f *pflag.Flag) { o.clusterFlags = append(o.clusterFlags, f.Name) })
	fs.AddFlagSet(cluster)
	_ = cmd.RegisterFlagCompletionFunc("context", o.completeContexts)
	return cmd
}

// completeContexts offers the contexts of the kubeconfig the flags name,
// as kubectl does.
func (o *diffOptions) completeContexts(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	cfg, err := o.config.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := slices.Sorted(maps.Keys(cfg.Contexts))
	return names, cobra.ShellCompDirectiveNoFileComp
}

// Complete notes which of kubectl's client flags were given and sets up
// the logs.
func (o *diffOptions) Complete(cmd *cobra.Command, _ []string) error {
	for _, name := range o.clusterFlags {
		if cmd.Flags().Changed(name) {
			o.clusterFlagsGiven = append(o.clusterFlagsGiven, name)
		}
	}
	slices.Sort(o.clusterFlagsGiven)
	configureLogs(o.run.verbosity, o.ErrOut)
	return nil
}

// Validate refuses flags that do not go together, before anything is read.
func (o *diffOptions) Validate() error {
	switch o.output {
	case "", "text", "yaml", "json":
	default:
		return fmt.Errorf("-o %q is not an output format; want yaml or json", o.output)
	}
	if len(o.packages) == 0 {
		if err := requireInput(o.input.files); err != nil {
			return err
		}
	}
	for _, p := range o.packages {
		if _, err := input.ParsePackageFlag(p); err != nil {
			return err
		}
	}
	if len(o.from) > 0 && len(o.clusterFlagsGiven) > 0 {
		return fmt.Errorf("--from reads a snapshot, not a cluster; drop --%s", strings.Join(o.clusterFlagsGiven, ", --"))
	}
	return nil
}

// Run diffs the change against the live fleet: exit status 1 when it
// makes a difference.
func (o *diffOptions) Run(ctx context.Context) error {
	upgrades, err := readUpgrades(o.packages)
	if err != nil {
		return err
	}
	change, err := o.readChange(len(upgrades) > 0)
	if err != nil {
		return err
	}
	start := time.Now()
	var live *fleet
	if len(o.from) > 0 {
		live, err = readSnapshot(o.from, o.run.namespace, o.ErrOut)
	} else {
		live, err = readCluster(ctx, o.config, change, o.run.namespace, len(upgrades) > 0)
	}
	if err != nil {
		return err
	}
	d, stats, err := fleetdiff.Run(ctx, live.input, change, fleetdiff.Options{Namespace: live.namespace, Delete: o.del,
		Timeout: o.run.timeout, Live: live.objects, ShowInjected: o.showInjected, Upgrades: upgrades})
	if err != nil {
		return err
	}
	if err := o.write(d); err != nil {
		return err
	}
	live.report(o.ErrOut, stats, start)
	if d.NotSettled != "" {
		return fmt.Errorf("the controllers did not settle: %s; the difference is incomplete", d.NotSettled)
	}
	if d.Empty() {
		return nil
	}
	return exitStatus(exitDifferent)
}

// readChange reads the files of -f: something to diff, valid unless they
// are deleted.
func (o *diffOptions) readChange(upgrading bool) (*input.Input, error) {
	change, err := readInput(o.input.files, o.ErrOut)
	if err != nil {
		return nil, err
	}
	if !upgrading && len(change.Variants) == 0 && len(change.Sets) == 0 && len(change.Repositories) == 0 && len(change.Objects) == 0 {
		return nil, fmt.Errorf("the files hold no PackageVariantSet, PackageVariant, Repository or in-cluster object; nothing to diff")
	}
	if !o.del && !checkSpecs(change, o.ErrOut, o.ErrOut) {
		return nil, exitStatus(exitBadInput)
	}
	return change, nil
}

// write prints the difference in the chosen format and, with --out,
// writes the drafts' files.
func (o *diffOptions) write(d *fleetdiff.Diff) error {
	var err error
	switch {
	case o.output == "yaml":
		err = d.WriteYAML(o.Out)
	case o.output == "json":
		err = d.WriteJSON(o.Out)
	case o.brief:
		err = d.WriteTextBrief(o.Out)
	default:
		err = d.WriteText(o.Out)
	}
	if err != nil {
		return fmt.Errorf("write the output: %w", err)
	}
	if o.outDir == "" {
		return nil
	}
	written, err := d.WriteDrafts(o.outDir)
	if err != nil {
		return fmt.Errorf("write the drafts' files under %s: %w", o.outDir, err)
	}
	fmt.Fprintf(o.ErrOut, "wrote the files of %d drafts under %s\n", len(written), o.outDir)
	return nil
}

// readUpgrades reads the package directories of diff's --package flags.
// The revision is the next one unless the flag names it.
func readUpgrades(flags []string) ([]fleetdiff.Upgrade, error) {
	var out []fleetdiff.Upgrade
	for _, v := range flags {
		f, err := input.ParsePackageFlag(v)
		if err != nil {
			return nil, err
		}
		if ref, _, _ := strings.Cut(v, "="); !strings.Contains(ref, "@") {
			f.Revision = 0
		}
		files, err := input.ReadPackageDir(f.Dir)
		if err != nil {
			return nil, fmt.Errorf("--package %s: %w", v, err)
		}
		out = append(out, fleetdiff.Upgrade{Repo: f.Repo, Package: f.Package, Revision: f.Revision, Files: files, Dir: f.Dir})
	}
	return out, nil
}
