package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

const renderLong = `Run both controllers on the input until they settle; print the sets,
variants and the package revisions they created or changed (with their
files) as one YAML stream, or with --out write each draft's files to
DIR/<repository>/<package>/<workspace>/ and print a summary table.

Exit status: 0 every variant and set is Ready, 1 some are not (their
conditions and Warning events on stderr), 2 the input cannot be used.`

const renderExample = `  # Render the example fleet with its blueprint: one YAML stream on stdout
  variantctl render -f examples/fleet --package blueprints/app=examples/packages/app

  # Write each draft's files under out/ instead, and print a table
  variantctl render -f examples/fleet --package blueprints/app=examples/packages/app --out out/

  # Give the controllers two minutes, and show their logs of each sync on stderr
  variantctl render -f examples/fleet --package blueprints/app=examples/packages/app --timeout 2m -v 2`

// renderOptions are variantctl render's.
type renderOptions struct {
	genericiooptions.IOStreams
	input    inputFlags
	run      runFlags
	packages []string
	outDir   string

	// packageFlags are packages, parsed by Complete.
	packageFlags []input.PackageFlag
}

func (o *renderOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "render -f FILE_OR_DIR ... [--package REPO/PACKAGE[@REVISION]=DIR ...] [--out DIR]",
		Short:   "Run the controllers on the input and print what they made",
		Long:    renderLong,
		Example: renderExample,
	}
	o.input.add(cmd)
	o.run.add(cmd.Flags(), inputNamespaces)
	cmd.Flags().StringArrayVar(&o.packages, "package", nil, "load a kpt package directory as a Published revision: REPO/PACKAGE[@REVISION]=DIR (revision 1 by default; repeatable)")
	cmd.Flags().StringVar(&o.outDir, "out", "", "write each draft's files to DIR/<repository>/<package>/<workspace>/ and print a summary table instead of YAML")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// Complete parses the --package flags and sets up the logs.
func (o *renderOptions) Complete(_ *cobra.Command, _ []string) error {
	for _, p := range o.packages {
		f, err := input.ParsePackageFlag(p)
		if err != nil {
			return err
		}
		o.packageFlags = append(o.packageFlags, f)
	}
	configureLogs(o.run.verbosity, o.ErrOut)
	return nil
}

// Validate wants input.
func (o *renderOptions) Validate() error { return requireInput(o.input.files) }

// Run renders the input and reports what is not Ready.
func (o *renderOptions) Run(ctx context.Context) error {
	in, err := readInput(o.input.files, o.ErrOut)
	if err != nil {
		return err
	}
	ns, err := in.Namespace(o.run.namespace)
	if err != nil {
		return err
	}
	if ns == "" && len(o.packageFlags) > 0 {
		return fmt.Errorf("the input uses several namespaces; give --namespace for the packages of --package")
	}
	if err := in.AddPackages(ns, o.packageFlags); err != nil {
		return err
	}
	if len(in.Variants) == 0 && len(in.Sets) == 0 {
		return fmt.Errorf("the input holds no PackageVariant or PackageVariantSet; nothing to render")
	}
	out, err := offline.Run(ctx, in, offline.RunOptions{Namespace: ns, Timeout: o.run.timeout})
	if err != nil {
		return err
	}
	if o.outDir != "" {
		err = out.WriteDir(o.outDir, o.Out)
	} else {
		err = out.WriteYAML(o.Out)
	}
	if err != nil {
		return fmt.Errorf("write the output: %w", err)
	}
	return report("render", out, fmt.Sprintf("%d PackageVariantSets and %d PackageVariants Ready; %s",
		len(out.Sets), len(out.Variants), revisionSummary(out)), o.ErrOut)
}

func revisionSummary(out *offline.Outcome) string {
	counts := map[string]int{}
	for _, r := range out.Revisions {
		counts[r.Action]++
	}
	return fmt.Sprintf("package revisions: %d created, %d changed, %d deleted",
		counts[offline.ActionCreated], counts[offline.ActionChanged], counts[offline.ActionDeleted])
}
