package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
)

// rolloutStatusOptions are variantctl rollout status's.
type rolloutStatusOptions struct {
	rolloutFlags
	watch bool
	// variants: list each variant of the set with its state.
	variants bool
	// now is the clock for ages (tests set it).
	now func() time.Time
}

func (o *rolloutStatusOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status SET",
		Short: "Show where the set's rollout stands, wave by wave, and what it waits for",
		Long: `Show the set's rollout as its controller reports it: the rollout id and the
upstream revision it rolls out, the RolledOut condition, and each wave with
its phase, how many variants it has, how many carry the change, published
it or failed, and when it started; each variant of the set with its wave
and its state (pending, open, waiting for approval, blocked, soaking,
published or healthy, failed, skipped, in no wave) and why; then what to do
next when a wave waits for approval, halted or the rollout is paused.`,
		Example: `  variantctl rollout status edge -n fleet

  # Follow it until it is rolled out (or Ctrl-C)
  variantctl rollout status edge -n fleet --watch

  # The waves only (a large fleet)
  variantctl rollout status edge -n fleet --variants=false`,
		Args: setArgs(1),
	}
	o.add(cmd)
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "print it again at each change, until the rollout is RolledOut or interrupted")
	cmd.Flags().BoolVar(&o.variants, "variants", true, "list each variant of the set with its wave and state (one more request per print)")
	return cmd
}

func (o *rolloutStatusOptions) Complete(_ *cobra.Command, args []string) error {
	if o.now == nil {
		o.now = time.Now
	}
	return o.complete(args)
}

// Run prints the rollout.
func (o *rolloutStatusOptions) Run(ctx context.Context) error {
	pvs, err := o.getRollout(ctx)
	if err != nil {
		return err
	}
	if !o.watch {
		return o.print(ctx, o.Out, pvs)
	}
	return o.follow(ctx)
}

// follow prints the rollout at each change (the same text is not printed
// twice) until it is RolledOut for the set's generation; the watch is
// client-go's, resumed when the server ends it.
func (o *rolloutStatusOptions) follow(ctx context.Context) error {
	sets := o.clients.config.ConfigV1alpha2().PackageVariantSets(o.namespace)
	byName := fields.OneTermEqualSelector("metadata.name", o.set).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = byName
			return sets.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return sets.Watch(ctx, opts)
		},
	}
	var last string
	// A client that cannot stream a list's items as watch events (a fake
	// one) says so, and the informer lists then watches.
	lwSemantics := cache.ToListWatcherWithWatchListSemantics(lw, o.clients.config)
	_, err := watchtools.UntilWithSync(ctx, lwSemantics, &configv1alpha2.PackageVariantSet{}, nil, func(ev watch.Event) (bool, error) {
		pvs, ok := ev.Object.(*configv1alpha2.PackageVariantSet)
		switch {
		case !ok:
			return false, nil
		case ev.Type == watch.Deleted:
			return false, fmt.Errorf("%s was deleted", o.describe())
		case pvs.Spec.Rollout == nil:
			return false, fmt.Errorf("%s has no spec.rollout any more", o.describe())
		}
		var b strings.Builder
		if err := o.print(ctx, &b, pvs); err != nil {
			return false, err
		}
		if b.String() != last {
			if last != "" {
				fmt.Fprintln(o.Out)
			}
			fmt.Fprint(o.Out, b.String())
			last = b.String()
		}
		c := meta.FindStatusCondition(pvs.Status.Conditions, rollout.ConditionRolledOut)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pvs.Generation, nil
	})
	if err != nil && ctx.Err() != nil {
		return nil // interrupted: what was printed is the answer
	}
	return err
}

// print prints the rollout of pvs, with its variants when o.variants.
func (o *rolloutStatusOptions) print(ctx context.Context, w io.Writer, pvs *configv1alpha2.PackageVariantSet) error {
	spec, st := pvs.Spec.Rollout, pvs.Status.Rollout
	if st == nil || st.ID == "" {
		fmt.Fprintf(w, "%s: the controller has not reported a rollout yet (status.rollout is empty)\n", o.describe())
		return nil
	}
	var rows []variantRow
	if o.variants {
		variants, err := o.setVariants(ctx, pvs)
		if err != nil {
			return err
		}
		rows = variantRows(pvs, variants)
	}
	fmt.Fprintf(w, "%s: rollout %s of upstream revision %d, %s finished\n", o.describe(), st.ID, st.UpstreamRevision, st.Progress)
	if c := meta.FindStatusCondition(pvs.Status.Conditions, rollout.ConditionRolledOut); c != nil {
		fmt.Fprintf(w, "%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tPHASE\tVARIANTS\tUPDATED\tFINISHED\tFAILED\tAPPROVAL\tSTARTED")
	for _, ws := range st.Waves {
		approval := configv1alpha2.WaveApprovalAutomatic
		if i := waveIndex(spec, ws.Name); i >= 0 && spec.Waves[i].Approval != "" {
			approval = spec.Waves[i].Approval
		}
		started := "-"
		if ws.StartedAt != nil {
			started = duration.HumanDuration(o.now().Sub(ws.StartedAt.Time)) + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", ws.Name, ws.Phase, ws.Variants, ws.Updated, ws.Finished, ws.Failed, approval, started)
	}
	_ = tw.Flush()
	printVariants(w, rows)
	if spec.Paused {
		fmt.Fprintf(w, "paused: no new wave or variant change starts; resume with: variantctl rollout resume %s -n %s\n", pvs.Name, pvs.Namespace)
	}
	for _, ws := range st.Waves {
		if ws.Skipped > 0 {
			fmt.Fprintf(w, "wave %s: %d variants skipped in this rollout (%s)\n", ws.Name, ws.Skipped, configv1alpha2.SkipVariantsAnnotation)
		}
		if ws.Resumed {
			fmt.Fprintf(w, "wave %s is resumed: its failures halt nothing in this rollout (%s)\n", ws.Name, configv1alpha2.ResumeWaveAnnotation)
		}
	}
	if st.Unassigned > 0 {
		fmt.Fprintf(w, "%d variants are in no wave, held on what they carry: %s\n", st.Unassigned, strings.Join(st.UnassignedVariants, ", "))
	}
	for _, ws := range st.Waves {
		switch ws.Phase {
		case configv1alpha2.WaveWaitingForApproval:
			fmt.Fprintf(w, "wave %s waits for approval: variantctl rollout approve %s %s -n %s\n", ws.Name, pvs.Name, ws.Name, pvs.Namespace)
		case configv1alpha2.WaveHalted:
			fmt.Fprintf(w, "wave %s halted on its failures: let it go on beside them with variantctl rollout resume %s -n %s, or skip them with variantctl rollout skip %s VARIANT... -n %s\n",
				ws.Name, pvs.Name, pvs.Namespace, pvs.Name, pvs.Namespace)
		default:
			continue
		}
		break
	}
	return nil
}
