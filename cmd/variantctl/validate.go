package main

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

func validate(args []string, stdout, stderr io.Writer) int {
	var c common
	fs := newCommand("validate", &c, false)
	in, code, ok := parseInput(fs, &c, args, stderr)
	if !ok {
		return code
	}
	if len(in.Variants) == 0 && len(in.Sets) == 0 {
		fmt.Fprintln(stderr, "variantctl validate: the input holds no PackageVariant or PackageVariantSet")
		return exitBadInput
	}
	if !checkSpecs(in, stdout, stderr) {
		return exitNotReady
	}
	fmt.Fprintf(stdout, "%d PackageVariants and %d PackageVariantSets are valid\n", len(in.Variants), len(in.Sets))
	return exitOK
}

// specProblems checks every PackageVariant and PackageVariantSet of the
// input with the controllers' own validation (CEL expressions compiled,
// type-checked, their cost estimated and dry-run), and returns one line per
// problem naming the file, the object and the field. What a cluster's API
// server would refuse (names, namespaces, objects given twice) was refused
// when the input was read.
func specProblems(in *input.Input) []string {
	var lines []string
	report := func(kind, ns, name string, src fmt.Stringer, errs []string) {
		for _, e := range errs {
			lines = append(lines, fmt.Sprintf("%s: %s %s: %s", src, kind, qualified(ns, name), e))
		}
	}
	for _, pv := range in.Variants {
		report("PackageVariant", pv.Obj.Namespace, pv.Obj.Name, pv.Source, validation.Messages(validation.ValidatePackageVariant(pv.Obj)))
	}
	cel := celtemplate.NewCache(celtemplate.Options{})
	for _, pvs := range in.Sets {
		set := celtemplate.SetKey{UID: pvs.Obj.UID, Generation: pvs.Obj.Generation}
		check := func(fldPath *field.Path, expr string, withRepository bool) error {
			return cel.Check(set, fldPath.String(), expr, withRepository)
		}
		report("PackageVariantSet", pvs.Obj.Namespace, pvs.Obj.Name, pvs.Source, validation.Messages(validation.ValidatePackageVariantSet(pvs.Obj, check)))
	}
	return lines
}

// checkSpecs prints the problems of specProblems to out and a count to
// stderr; false when there are any. validate and expand refuse the same
// input with the same words this way.
func checkSpecs(in *input.Input, out, stderr io.Writer) bool {
	problems := specProblems(in)
	for _, p := range problems {
		fmt.Fprintln(out, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "%d problems in %d PackageVariants and %d PackageVariantSets\n", len(problems), len(in.Variants), len(in.Sets))
		return false
	}
	return true
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
