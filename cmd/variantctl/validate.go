package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

const validateLong = `Check PackageVariants and PackageVariantSets as the controllers do: CEL
expressions type-checked, cost-estimated and dry-run; print every problem,
naming the file, document, object and field.

Exit status: 0 valid, 1 some are not, 2 the input cannot be used.`

const validateExample = `  # Check the example fleet
  variantctl validate -f examples/fleet

  # Check one file
  variantctl validate -f examples/fleet/edge-set.yaml`

// validateOptions are variantctl validate's.
type validateOptions struct {
	genericiooptions.IOStreams
	input inputFlags
}

func (o *validateOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "validate -f FILE_OR_DIR ...",
		Short:   "Check PackageVariants and PackageVariantSets as the controllers do",
		Long:    validateLong,
		Example: validateExample,
	}
	o.input.add(cmd)
	return cmd
}

// Complete has nothing to fill: validate runs no controller.
func (o *validateOptions) Complete(_ *cobra.Command, _ []string) error { return nil }

// Validate wants input.
func (o *validateOptions) Validate() error { return requireInput(o.input.files) }

// Run prints every problem of the input's specs.
func (o *validateOptions) Run(context.Context) error {
	in, err := readInput(o.input.files, o.ErrOut)
	if err != nil {
		return err
	}
	if len(in.Variants) == 0 && len(in.Sets) == 0 {
		return fmt.Errorf("the input holds no PackageVariant or PackageVariantSet")
	}
	if !checkSpecs(in, o.Out, o.ErrOut) {
		return exitStatus(exitNotReady)
	}
	fmt.Fprintf(o.Out, "%d PackageVariants and %d PackageVariantSets are valid\n", len(in.Variants), len(in.Sets))
	return nil
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
