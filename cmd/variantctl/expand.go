package main

import (
	"context"
	"fmt"
	"io"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
)

func expand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := newCommand("expand", &c, true)
	in, code, ok := parseInput(fs, &c, args, stderr)
	if !ok {
		return code
	}
	if len(in.Sets) == 0 {
		fmt.Fprintln(stderr, "variantctl expand: the input holds no PackageVariantSet; nothing to expand")
		return exitBadInput
	}
	// Refuse what validate refuses, in its words and with its status: the
	// YAML on stdout is then empty rather than a partial expansion.
	if !checkSpecs(in, stderr, stderr) {
		return exitNotReady
	}
	ns, err := in.Namespace(c.namespace)
	if err != nil {
		fmt.Fprintf(stderr, "variantctl expand: %v\n", err)
		return exitBadInput
	}
	for _, n := range in.AddStandInUpstreams(ns) {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	out, err := offline.Run(ctx, in, offline.RunOptions{Namespace: ns, Timeout: c.timeout, SetsOnly: true})
	if err != nil {
		printInputError("expand", err, stderr)
		return exitBadInput
	}
	// Only the variants the sets made, and only the sets' readiness
	// counts: nothing makes drafts, so no variant becomes Ready.
	variants := &offline.Outcome{}
	for _, v := range out.Variants {
		if ownedBySet(v) {
			variants.Variants = append(variants.Variants, withoutStatus(v))
		}
	}
	if err := variants.WriteYAML(stdout); err != nil {
		fmt.Fprintf(stderr, "variantctl expand: write the output: %v\n", err)
		return exitBadInput
	}
	sets := &offline.Outcome{Sets: out.Sets, Events: out.Events, Settled: out.Settled}
	return report("expand", sets, fmt.Sprintf("%d PackageVariantSets expanded to %d PackageVariants",
		len(out.Sets), len(variants.Variants)), stderr)
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
