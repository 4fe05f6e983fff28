package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
)

const expandLong = `Print only the PackageVariants the sets would create. No packages are
needed: an upstream that is not given gets a stand-in revision (noted on
stderr). Input that validate refuses is refused the same way, with the
same messages and exit status, before anything is expanded.

Exit status: 0 every set is Ready, 1 some are not (or the input is
invalid), 2 the input cannot be used.`

const expandExample = `  # The variants the example fleet's set makes (Repositories and ConfigMaps are enough)
  variantctl expand -f examples/fleet

  # Only some files, their objects in namespace platform when they name none
  variantctl expand -f examples/fleet/repositories.yaml -f examples/fleet/edge-set.yaml -n platform`

// expandOptions are variantctl expand's.
type expandOptions struct {
	genericiooptions.IOStreams
	input inputFlags
	run   runFlags
}

func (o *expandOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "expand -f FILE_OR_DIR ...",
		Short:   "Print the PackageVariants the sets would create",
		Long:    expandLong,
		Example: expandExample,
	}
	o.input.add(cmd)
	o.run.add(cmd.Flags(), inputNamespaces)
	return cmd
}

// Complete sets up the logs.
func (o *expandOptions) Complete(_ *cobra.Command, _ []string) error {
	configureLogs(o.run.verbosity, o.ErrOut)
	return nil
}

// Validate wants input.
func (o *expandOptions) Validate() error { return requireInput(o.input.files) }

// Run expands the sets of the input and prints their variants.
func (o *expandOptions) Run(ctx context.Context) error {
	in, err := readInput(o.input.files, o.ErrOut)
	if err != nil {
		return err
	}
	if len(in.Sets) == 0 {
		return fmt.Errorf("the input holds no PackageVariantSet; nothing to expand")
	}
	// Refuse what validate refuses, in its words and with its status: the
	// YAML on stdout is then empty rather than a partial expansion.
	if !checkSpecs(in, o.ErrOut, o.ErrOut) {
		return exitStatus(exitNotReady)
	}
	ns, err := in.Namespace(o.run.namespace)
	if err != nil {
		return err
	}
	for _, n := range in.AddStandInUpstreams(ns) {
		fmt.Fprintf(o.ErrOut, "note: %s\n", n)
	}
	out, err := offline.Run(ctx, in, offline.RunOptions{Namespace: ns, Timeout: o.run.timeout, SetsOnly: true})
	if err != nil {
		return err
	}
	// Only the variants the sets made, and only the sets' readiness
	// counts: nothing makes drafts, so no variant becomes Ready.
	variants := &offline.Outcome{}
	for _, v := range out.Variants {
		if ownedBySet(v) {
			variants.Variants = append(variants.Variants, withoutStatus(v))
		}
	}
	if err := variants.WriteYAML(o.Out); err != nil {
		return fmt.Errorf("write the output: %w", err)
	}
	sets := &offline.Outcome{Sets: out.Sets, Events: out.Events, Settled: out.Settled}
	return report("expand", sets, fmt.Sprintf("%d PackageVariantSets expanded to %d PackageVariants",
		len(out.Sets), len(variants.Variants)), o.ErrOut)
}

func ownedBySet(v *configv1alpha1.PackageVariant) bool {
	for _, ref := range v.OwnerReferences {
		if ref.Kind == "PackageVariantSet" {
			return true
		}
	}
	return false
}

func withoutStatus(v *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	v = v.DeepCopy()
	v.Status = configv1alpha1.PackageVariantStatus{}
	return v
}
