package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// rolloutPauseOptions are variantctl rollout pause's and resume's.
type rolloutPauseOptions struct {
	rolloutFlags
	pause bool
}

func (o *rolloutPauseOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume SET",
		Short: "Let a paused rollout go on (spec.rollout.paused: false), and a halted wave go on beside its failures",
		Long: `Let the set's rollout go on: spec.rollout.paused becomes false, and a wave
that halted (more failed variants than spec.rollout.maxFailures) is
resumed: the annotation ` + configv1alpha2.ResumeWaveAnnotation + ` gets "<wave>@<rollout id>",
written only while the rollout is still the one read, and the wave's
failures halt nothing for the rest of that rollout. An Event on the set
records who resumed it.`,
		Example: "  variantctl rollout resume edge -n fleet",
		Args:    setArgs(1),
	}
	if o.pause {
		cmd.Use, cmd.Short, cmd.Example = "pause SET", "Start no new wave and no variant's change (spec.rollout.paused: true); what is open stays open", "  variantctl rollout pause edge -n fleet"
	}
	o.add(cmd)
	return cmd
}

func (o *rolloutPauseOptions) Complete(_ *cobra.Command, args []string) error {
	return o.complete(args)
}

// words are how pause and resume say what they do.
func (o *rolloutPauseOptions) words() words {
	if o.pause {
		return words{verb: "pause", done: "paused", state: "paused", reason: "RolloutPaused"}
	}
	return words{verb: "resume", done: "resumed", state: "not paused", reason: "RolloutResumed"}
}

// Run sets spec.rollout.paused, when it is not so already.
func (o *rolloutPauseOptions) Run(ctx context.Context) error {
	pvs, err := o.getRollout(ctx)
	if err != nil {
		return err
	}
	words := o.words()
	if !o.pause {
		return o.resume(ctx, pvs)
	}
	if pvs.Spec.Rollout.Paused {
		fmt.Fprintf(o.Out, "the rollout of %s is %s already\n", o.describe(), words.state)
		return nil
	}
	return o.setPaused(ctx, pvs)
}

// resume unpauses the rollout and resumes its halted wave, whichever of
// the two it needs.
func (o *rolloutPauseOptions) resume(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	st := pvs.Status.Rollout
	halted := ""
	if st != nil {
		if i := slices.IndexFunc(st.Waves, func(w configv1alpha2.WaveStatus) bool { return w.Phase == configv1alpha2.WaveHalted }); i >= 0 {
			halted = st.Waves[i].Name
		}
	}
	if !pvs.Spec.Rollout.Paused && halted == "" {
		fmt.Fprintf(o.Out, "the rollout of %s is not paused and no wave of it is halted: nothing to resume\n", o.describe())
		return nil
	}
	if pvs.Spec.Rollout.Paused {
		if err := o.setPaused(ctx, pvs); err != nil {
			return err
		}
	}
	if halted == "" {
		return nil
	}
	r := helper.Approval{Wave: halted, ID: st.ID}
	if pvs.Annotations[configv1alpha2.ResumeWaveAnnotation] == r.String() {
		fmt.Fprintf(o.Out, "wave %s of rollout %s on %s is resumed already; the controller has not reported it yet\n", halted, st.ID, o.describe())
		return nil
	}
	if err := o.annotate(ctx, pvs, st.ID, configv1alpha2.ResumeWaveAnnotation, r.String(), words{verb: "resume", done: "resumed", what: "wave " + halted}); err != nil {
		return err
	}
	user := whoAmI(ctx, o.clients)
	fmt.Fprintf(o.Out, "resumed halted wave %s of rollout %s on %s: its failed variants halt nothing now (as %s)\n", halted, st.ID, o.describe(), user)
	o.record(ctx, pvs, "WaveResumed", fmt.Sprintf("halted wave %s of rollout %s resumed by %s (variantctl rollout resume)", halted, st.ID, user))
	return nil
}

// setPaused sets spec.rollout.paused to o.pause.
func (o *rolloutPauseOptions) setPaused(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) error {
	words := o.words()
	patch := fmt.Sprintf(`{"spec":{"rollout":{"paused":%t}}}`, o.pause)
	if _, err := o.clients.config.ConfigV1alpha2().PackageVariantSets(o.namespace).Patch(ctx, o.set, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "variantctl"}); err != nil {
		return fmt.Errorf("%s the rollout of %s: %w", words.verb, o.describe(), err)
	}
	user := whoAmI(ctx, o.clients)
	fmt.Fprintf(o.Out, "%s the rollout of %s (as %s)\n", words.done, o.describe(), user)
	o.record(ctx, pvs, words.reason, fmt.Sprintf("rollout %s by %s (variantctl rollout %s)", words.done, user, words.verb))
	return nil
}
