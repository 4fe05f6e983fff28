package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
)

func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	var c common
	c.register(fs, false)
	if code, ok := parse(fs, &c, args, stderr); !ok {
		return code
	}
	in, ok := readInput("validate", c.files, stderr)
	if !ok {
		return exitBadInput
	}
	if len(in.Variants) == 0 && len(in.Sets) == 0 {
		fmt.Fprintln(stderr, "variantctl validate: the input holds no PackageVariant or PackageVariantSet")
		return exitBadInput
	}
	problems := 0
	report := func(kind, ns, name string, src fmt.Stringer, errs []string) {
		for _, e := range errs {
			problems++
			fmt.Fprintf(stdout, "%s: %s %s: %s\n", src, kind, qualified(ns, name), e)
		}
	}
	for _, pv := range in.Variants {
		report("PackageVariant", pv.Obj.Namespace, pv.Obj.Name, pv.Source, packagevariant.Validate(pv.Obj))
	}
	for _, pvs := range in.Sets {
		report("PackageVariantSet", pvs.Obj.Namespace, pvs.Obj.Name, pvs.Source, packagevariantset.Validate(pvs.Obj))
	}
	if problems > 0 {
		fmt.Fprintf(stderr, "%d problems in %d PackageVariants and %d PackageVariantSets\n", problems, len(in.Variants), len(in.Sets))
		return exitNotReady
	}
	fmt.Fprintf(stdout, "%d PackageVariants and %d PackageVariantSets are valid\n", len(in.Variants), len(in.Sets))
	return exitOK
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
