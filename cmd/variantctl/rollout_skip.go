package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// rolloutSkipOptions are variantctl rollout skip's.
type rolloutSkipOptions struct {
	rolloutFlags
	variants []string
}

func (o *rolloutSkipOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skip SET VARIANT...",
		Short: "Pass variants over in the set's current rollout: neither opened nor waited for, their failures halt nothing",
		Long: `Pass PackageVariants of the set over in its current rollout: the annotation
` + configv1alpha2.SkipVariantsAnnotation + ` gets "<variant>,...@<rollout id>" (the
variants it skips already, and these), written only while the rollout is
still the one read. A skipped variant keeps what it carries; the next
rollout (a new upstream revision or template) takes it again. Each
variant must be one the set controls. An Event on the set records who
skipped them.`,
		Example: `  # A variant failed and halted the rollout: go on without it
  variantctl rollout skip edge edge-edge-03-app -n fleet`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return fmt.Errorf("name the PackageVariantSet and at least one of its PackageVariants")
			}
			return nil
		},
	}
	o.add(cmd)
	return cmd
}

func (o *rolloutSkipOptions) Complete(_ *cobra.Command, args []string) error {
	o.variants = args[1:]
	return o.complete(args)
}

// Run writes the skip, or says why it cannot.
func (o *rolloutSkipOptions) Run(ctx context.Context) error {
	pvs, err := o.getRollout(ctx)
	if err != nil {
		return err
	}
	st := pvs.Status.Rollout
	if st == nil || st.ID == "" {
		return fmt.Errorf("%s: the controller has not reported a rollout yet (status.rollout is empty): check that it runs, then try again", o.describe())
	}
	if err := o.owned(ctx, pvs); err != nil {
		return err
	}
	skip := helper.Skip{ID: st.ID}
	if prev, ok := helper.ParseSkip(pvs.Annotations[configv1alpha2.SkipVariantsAnnotation]); ok && prev.ID == st.ID {
		skip.Variants = prev.Variants
	}
	var added []string
	for _, name := range o.variants {
		if !slices.Contains(skip.Variants, name) {
			skip.Variants = append(skip.Variants, name)
			added = append(added, name)
		}
	}
	if len(added) == 0 {
		fmt.Fprintf(o.Out, "rollout %s of %s skips %s already\n", st.ID, o.describe(), strings.Join(o.variants, ", "))
		return nil
	}
	if err := o.annotate(ctx, pvs, st.ID, configv1alpha2.SkipVariantsAnnotation, skip.String(), words{verb: "skip", done: "skipped", what: strings.Join(added, ", ")}); err != nil {
		return err
	}
	user := whoAmI(ctx, o.clients)
	fmt.Fprintf(o.Out, "rollout %s of %s skips %s (as %s)\n", st.ID, o.describe(), strings.Join(added, ", "), user)
	o.record(ctx, pvs, "VariantsSkipped", fmt.Sprintf("%s skipped in rollout %s by %s (variantctl rollout skip)", strings.Join(added, ", "), st.ID, user))
	return nil
}

// owned refuses a variant that does not exist or that the set does not
// control: a skip of it would skip nothing.
func (o *rolloutSkipOptions) owned(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	for _, name := range o.variants {
		pv, err := o.clients.config.ConfigV1alpha1().PackageVariants(o.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get packagevariant %s/%s: %w", o.namespace, name, err)
		}
		if !metav1.IsControlledBy(pv, pvs) {
			return fmt.Errorf("packagevariant %s/%s is not a variant of %s: a skip of it would skip nothing (its variants: kubectl get packagevariants -n %s -l %s=%s)",
				o.namespace, name, o.describe(), o.namespace, configv1alpha2.SetLabel, pvs.UID)
		}
	}
	return nil
}
