package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// rolloutApproveOptions are variantctl rollout approve's.
type rolloutApproveOptions struct {
	rolloutFlags
	wave string
}

func (o *rolloutApproveOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approve SET [WAVE]",
		Short: "Approve the Manual wave the rollout waits for (or WAVE, and the waves before it)",
		Long: `Approve a Manual wave of the set's current rollout: the annotation
` + configv1alpha2.ApproveWaveAnnotation + ` gets "<wave>@<rollout id>", written only while the
rollout is still the one read (a new upstream revision or template makes a
new rollout, which an approval of the old one does not start). Without
WAVE, the wave that waits for approval. An Event on the set records who
approved.`,
		Example: `  variantctl rollout approve edge -n fleet
  variantctl rollout approve edge prod -n fleet`,
		Args: setArgs(2),
	}
	o.add(cmd)
	return cmd
}

func (o *rolloutApproveOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) > 1 {
		o.wave = args[1]
	}
	return o.complete(args)
}

// Run approves the wave, or says why it cannot.
func (o *rolloutApproveOptions) Run(ctx context.Context) error {
	pvs, err := o.getRollout(ctx)
	if err != nil {
		return err
	}
	approval, done, err := o.decide(pvs)
	if err != nil || done != "" {
		if done != "" {
			fmt.Fprintln(o.Out, done)
		}
		return err
	}
	if err := o.write(ctx, pvs, approval); err != nil {
		return err
	}
	user := whoAmI(ctx, o.clients)
	fmt.Fprintf(o.Out, "approved wave %s of rollout %s on %s (as %s)\n", approval.Wave, approval.ID, o.describe(), user)
	o.record(ctx, pvs, "WaveApproved", fmt.Sprintf("wave %s of rollout %s approved by %s (variantctl rollout approve)", approval.Wave, approval.ID, user))
	return nil
}

// decide is the approval to write; done says why none is needed (the
// wave has started, or is approved already); err why none can be.
func (o *rolloutApproveOptions) decide(pvs *configv1alpha2.PackageVariantSet) (a helper.Approval, done string, err error) {
	spec, st := pvs.Spec.Rollout, pvs.Status.Rollout
	if st == nil || st.ID == "" {
		return a, "", fmt.Errorf("%s: the controller has not reported a rollout yet (status.rollout is empty): check that it runs, then try again", o.describe())
	}
	phases := map[string]configv1alpha2.WavePhase{}
	var waiting []string
	for _, w := range st.Waves {
		phases[w.Name] = w.Phase
		if w.Phase == configv1alpha2.WaveWaitingForApproval {
			waiting = append(waiting, w.Name)
		}
	}
	wave := o.wave
	switch {
	case wave == "" && len(waiting) == 0:
		return a, "", fmt.Errorf("no wave of rollout %s on %s waits for approval (%s); name a Manual wave to approve it ahead", st.ID, o.describe(), describePhases(st))
	case wave == "":
		wave = waiting[0]
	}
	i := waveIndex(spec, wave)
	if i < 0 {
		return a, "", fmt.Errorf("%s has no wave %q; its waves are %s (rollout %s)", o.describe(), wave, waveNames(spec), st.ID)
	}
	if spec.Waves[i].Approval != configv1alpha2.WaveApprovalManual {
		return a, "", fmt.Errorf("wave %s of %s starts by itself (approval Automatic): nothing to approve", wave, o.describe())
	}
	a = helper.Approval{Wave: wave, ID: st.ID}
	if prev, ok := helper.ParseApproval(pvs.Annotations[configv1alpha2.ApproveWaveAnnotation]); ok && prev.Approves(spec, st.ID, i) {
		return a, fmt.Sprintf("wave %s of rollout %s on %s is approved already (%s=%s)", wave, st.ID, o.describe(), configv1alpha2.ApproveWaveAnnotation, prev), nil
	}
	switch phases[wave] {
	case configv1alpha2.WaveProgressing, configv1alpha2.WaveSoaking, configv1alpha2.WaveFinished, configv1alpha2.WaveHalted:
		return a, fmt.Sprintf("wave %s of rollout %s on %s has started already (%s): nothing to approve", wave, st.ID, o.describe(), phases[wave]), nil
	}
	return a, "", nil
}

// write sets the approval annotation, for the rollout a.ID only.
func (o *rolloutApproveOptions) write(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, a helper.Approval) error {
	return o.annotate(ctx, pvs, a.ID, configv1alpha2.ApproveWaveAnnotation, a.String(), words{verb: "approve", done: "approved", what: "wave " + a.Wave})
}

// words say what a command does, for its messages: the verb ("approve",
// "pause"), what it did ("approved"), to what ("wave prod"), and for pause
// and resume the state it leaves and the reason of the Event recording it.
type words struct{ verb, done, what, state, reason string }

// annotate sets an annotation of the set pvs (as read) with a JSON patch
// that first tests the rollout id: a rollout that changed since it was
// read (a new upstream revision or template) does not get it.
func (f *rolloutFlags) annotate(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, id, key, value string, w words) error {
	ops := []map[string]any{{"op": "test", "path": "/status/rollout/id", "value": id}}
	if pvs.Annotations == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]string{key: value}})
	} else {
		escaped := strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/annotations/" + escaped, "value": value})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = f.clients.config.ConfigV1alpha2().PackageVariantSets(f.namespace).Patch(ctx, f.set, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "variantctl"})
	if apierrors.IsInvalid(err) {
		// The test failed, or the set itself was refused: which, the set
		// as it is now says.
		if now, gerr := f.getRollout(ctx); gerr == nil && (now.Status.Rollout == nil || now.Status.Rollout.ID != id) {
			return fmt.Errorf("rollout %s of %s changed while it was being %s (a new upstream revision or template starts a new rollout): see 'variantctl rollout status %s -n %s' and %s again", id, f.describe(), w.done, f.set, f.namespace, w.verb)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s of %s: %w", w.verb, w.what, f.describe(), err)
	}
	return nil
}

// whoAmI is the user the cluster knows the caller as, from a
// SelfSubjectReview ("unknown" when the server does not say).
func whoAmI(ctx context.Context, c rolloutClients) string {
	r, err := c.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "unknown"
	}
	return r.Status.UserInfo.Username
}

// record creates an Event on the set saying what a person did; a refusal
// is a warning on stderr, not a failure: the change itself was made.
func (f *rolloutFlags) record(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, reason, message string) {
	now := metav1.Now()
	ev := &corev1.Event{
		// Named as client-go's recorder names events.
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pvs.Name, now.UnixNano()), Namespace: pvs.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: configv1alpha2.SchemeGroupVersion.String(), Kind: "PackageVariantSet",
			Namespace: pvs.Namespace, Name: pvs.Name, UID: pvs.UID,
		},
		Reason: reason, Message: message, Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "variantctl"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := f.clients.kube.CoreV1().Events(pvs.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		var st apierrors.APIStatus
		if errors.As(err, &st) {
			err = errors.New(st.Status().Message)
		}
		fmt.Fprintf(f.ErrOut, "warning: could not record who did it in an Event on %s: %v\n", f.describe(), err)
	}
}

// describePhases lists each wave's phase, for messages.
func describePhases(st *configv1alpha2.RolloutStatus) string {
	parts := make([]string, 0, len(st.Waves))
	for _, w := range st.Waves {
		parts = append(parts, fmt.Sprintf("%s %s", w.Name, w.Phase))
	}
	return strings.Join(parts, ", ")
}
