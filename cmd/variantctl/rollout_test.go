package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	sigsyaml "sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
)

// rolloutFixture is a live cluster as the rollout commands see it: a set
// with a rollout in the fake clientset, a kube clientset that knows who
// the caller is, and the streams.
type rolloutFixture struct {
	config *fake.Clientset
	kube   *kubefake.Clientset
	out    bytes.Buffer
	errOut bytes.Buffer
}

var (
	started  = metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	statusAt = started.Add(5 * time.Minute)
)

func edgeSet(mutate func(*configv1alpha2.PackageVariantSet)) *configv1alpha2.PackageVariantSet {
	pvs := &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "fleet", UID: "set-uid", Generation: 3},
		Spec: configv1alpha2.PackageVariantSetSpec{Rollout: &configv1alpha2.Rollout{Waves: []configv1alpha2.Wave{
			{Name: "canary"}, {Name: "prod", Approval: configv1alpha2.WaveApprovalManual}, {Name: "rest", Approval: configv1alpha2.WaveApprovalManual},
		}}},
		Status: configv1alpha2.PackageVariantSetStatus{
			Conditions: []metav1.Condition{{Type: "RolledOut", Status: metav1.ConditionFalse, Reason: "WaitingForApproval", ObservedGeneration: 3,
				Message: "wave prod waits for approval"}},
			Rollout: &configv1alpha2.RolloutStatus{ID: "abc123", UpstreamRevision: 2, CurrentWave: "canary", Progress: "1/6", Waves: []configv1alpha2.WaveStatus{
				{Name: "canary", Variants: 1, Updated: 1, Finished: 1, Phase: configv1alpha2.WaveFinished, StartedAt: &started},
				{Name: "prod", Variants: 2, Phase: configv1alpha2.WaveWaitingForApproval},
				{Name: "rest", Variants: 3, Phase: configv1alpha2.WavePending},
			}},
		},
	}
	if mutate != nil {
		mutate(pvs)
	}
	return pvs
}

// edgeVariants are the set's PackageVariants, name: wave label ("": none).
func edgeVariants(waves map[string]string) []runtime.Object {
	var out []runtime.Object
	for name, wave := range waves {
		pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet",
			Labels: map[string]string{configv1alpha2.SetLabel: "set-uid"}}}
		if wave != "" {
			pv.Labels[configv1alpha2.WaveLabel] = wave
		}
		out = append(out, pv)
	}
	// another set's variant is not listed
	out = append(out, &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "other-app", Namespace: "fleet",
		Labels: map[string]string{configv1alpha2.SetLabel: "other-uid", configv1alpha2.WaveLabel: "canary"}}})
	return out
}

var sixVariants = map[string]string{"edge-c1-app": "canary", "edge-p1-app": "prod", "edge-p2-app": "prod", "edge-r1-app": "rest", "edge-r2-app": "rest", "edge-r3-app": "rest"}

func newRolloutFixture(pvs *configv1alpha2.PackageVariantSet, others ...runtime.Object) *rolloutFixture {
	f := &rolloutFixture{config: fake.NewSimpleClientset(append([]runtime.Object{pvs}, others...)...), kube: kubefake.NewSimpleClientset()}
	f.kube.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: "alice@example.com"}}}, nil
	})
	return f
}

// run runs one rollout command as variantctl would after parsing args.
func (f *rolloutFixture) run(t *testing.T, o command, args ...string) error {
	t.Helper()
	return f.runCtx(context.Background(), t, o, args...)
}

// runCtx is run with ctx for the command's Run.
func (f *rolloutFixture) runCtx(ctx context.Context, t *testing.T, o command, args ...string) error {
	t.Helper()
	cmd := o.command()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	positional := cmd.Flags().Args()
	if err := cmd.Args(cmd, positional); err != nil {
		return err
	}
	if err := o.Complete(cmd, positional); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}

func (f *rolloutFixture) flags() rolloutFlags {
	return rolloutFlags{
		IOStreams:  genericiooptions.IOStreams{Out: &f.out, ErrOut: &f.errOut},
		newClients: func() (rolloutClients, error) { return rolloutClients{config: f.config, kube: f.kube}, nil },
	}
}

func (f *rolloutFixture) set(t *testing.T) *configv1alpha2.PackageVariantSet {
	t.Helper()
	pvs, err := f.config.ConfigV1alpha2().PackageVariantSets("fleet").Get(context.Background(), "edge", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvs
}

// status is rollout status's options on the fixture, its clock at statusAt.
func (f *rolloutFixture) status() *rolloutStatusOptions {
	return &rolloutStatusOptions{rolloutFlags: f.flags(), now: func() time.Time { return statusAt }}
}

// wantStatus runs rollout status edge -n fleet and checks what it prints.
func (f *rolloutFixture) wantStatus(t *testing.T, want string) {
	t.Helper()
	if err := f.run(t, f.status(), "edge", "-n", "fleet"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, f.out.String()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// wantEvents checks the Events recorded, "reason: message".
func (f *rolloutFixture) wantEvents(t *testing.T, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, f.events(t)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// events are the Events recorded, "reason: message".
func (f *rolloutFixture) events(t *testing.T) []string {
	t.Helper()
	list, err := f.kube.CoreV1().Events("fleet").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != "PackageVariantSet" || e.InvolvedObject.Name != "edge" || e.InvolvedObject.UID != "set-uid" {
			t.Errorf("event %s is about %v, not the set", e.Name, e.InvolvedObject)
		}
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

func TestRolloutApprove(t *testing.T) {
	cases := map[string]struct {
		set        func(*configv1alpha2.PackageVariantSet)
		args       []string
		annotation string // after the command
		out        string
		err        string
		events     []string
	}{
		"the wave that waits, without naming it": {
			args:       []string{"edge", "-n", "fleet"},
			annotation: "prod@abc123",
			out:        "approved wave prod of rollout abc123 on packagevariantset fleet/edge (as alice@example.com)\n",
			events:     []string{"WaveApproved: wave prod of rollout abc123 approved by alice@example.com (variantctl rollout approve)"},
		},
		"a later Manual wave, ahead": {
			args:       []string{"edge", "rest", "-n", "fleet"},
			annotation: "rest@abc123",
			out:        "approved wave rest of rollout abc123 on packagevariantset fleet/edge (as alice@example.com)\n",
			events:     []string{"WaveApproved: wave rest of rollout abc123 approved by alice@example.com (variantctl rollout approve)"},
		},
		"a stale approval is replaced by the current rollout's": {
			set: func(p *configv1alpha2.PackageVariantSet) {
				p.Annotations = map[string]string{configv1alpha2.ApproveWaveAnnotation: "prod@old999"}
			},
			args:       []string{"edge", "-n", "fleet"},
			annotation: "prod@abc123",
			out:        "approved wave prod of rollout abc123 on packagevariantset fleet/edge (as alice@example.com)\n",
			events:     []string{"WaveApproved: wave prod of rollout abc123 approved by alice@example.com (variantctl rollout approve)"},
		},
		"an unknown wave is refused with the waves and the rollout id": {
			args: []string{"edge", "prdo", "-n", "fleet"},
			err:  `packagevariantset fleet/edge has no wave "prdo"; its waves are canary, prod, rest (rollout abc123)`,
		},
		"an Automatic wave needs no approval": {
			args: []string{"edge", "canary", "-n", "fleet"},
			err:  "wave canary of packagevariantset fleet/edge starts by itself (approval Automatic): nothing to approve",
		},
		"no wave waits and none is named": {
			set: func(p *configv1alpha2.PackageVariantSet) {
				p.Status.Rollout.Waves[1].Phase = configv1alpha2.WaveProgressing
			},
			args: []string{"edge", "-n", "fleet"},
			err:  "no wave of rollout abc123 on packagevariantset fleet/edge waits for approval (canary Finished, prod Progressing, rest Pending); name a Manual wave to approve it ahead",
		},
		"approved already": {
			set: func(p *configv1alpha2.PackageVariantSet) {
				p.Annotations = map[string]string{configv1alpha2.ApproveWaveAnnotation: "rest@abc123"}
			},
			args:       []string{"edge", "prod", "-n", "fleet"},
			annotation: "rest@abc123",
			out:        "wave prod of rollout abc123 on packagevariantset fleet/edge is approved already (config.porch.kpt.dev/approve-wave=rest@abc123)\n",
		},
		"no rollout reported yet": {
			set:  func(p *configv1alpha2.PackageVariantSet) { p.Status.Rollout = nil },
			args: []string{"edge", "-n", "fleet"},
			err:  "packagevariantset fleet/edge: the controller has not reported a rollout yet (status.rollout is empty): check that it runs, then try again",
		},
		"a set without a rollout": {
			set:  func(p *configv1alpha2.PackageVariantSet) { p.Spec.Rollout = nil },
			args: []string{"edge", "-n", "fleet"},
			err:  "packagevariantset fleet/edge has no spec.rollout: every change reaches its variants at once",
		},
		"no set named": {
			args: []string{"-n", "fleet"},
			err:  "name the PackageVariantSet",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newRolloutFixture(edgeSet(tc.set))
			err := f.run(t, &rolloutApproveOptions{rolloutFlags: f.flags()}, tc.args...)
			if got := errText(err); got != tc.err {
				t.Fatalf("error %q, want %q", got, tc.err)
			}
			if got := f.out.String(); got != tc.out {
				t.Errorf("stdout %q, want %q", got, tc.out)
			}
			if tc.err != "" {
				return
			}
			if got := f.set(t).Annotations[configv1alpha2.ApproveWaveAnnotation]; got != tc.annotation {
				t.Errorf("annotation %q, want %q", got, tc.annotation)
			}
			f.wantEvents(t, tc.events...)
		})
	}
}

// TestRolloutApproveRaces: a rollout that changed between the read and
// the write is not approved (the patch tests the id), and the refusal
// names what to do; the approval is not recorded.
func TestRolloutApproveRaces(t *testing.T) {
	f := newRolloutFixture(edgeSet(nil))
	f.config.PrependReactor("patch", "packagevariantsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		// A new upstream revision made a new rollout just before the patch.
		now := edgeSet(func(p *configv1alpha2.PackageVariantSet) { p.Status.Rollout.ID = "def456" })
		if err := f.config.Tracker().Update(configv1alpha2.SchemeGroupVersion.WithResource("packagevariantsets"), now, "fleet"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, "", "test failed", 0, false)
	})
	err := f.run(t, &rolloutApproveOptions{rolloutFlags: f.flags()}, "edge", "-n", "fleet")
	want := "rollout abc123 of packagevariantset fleet/edge changed while it was being approved (a new upstream revision or template starts a new rollout): see 'variantctl rollout status edge -n fleet' and approve again"
	if errText(err) != want {
		t.Fatalf("error %q, want %q", errText(err), want)
	}
	if _, ok := f.set(t).Annotations[configv1alpha2.ApproveWaveAnnotation]; ok {
		t.Error("the approval was written")
	}
	if ev := f.events(t); len(ev) > 0 {
		t.Errorf("events recorded: %v", ev)
	}
}

// TestRolloutApproveTestsTheID: the patch variantctl sends approves only
// while the rollout id is the one read, as the API server applies it.
func TestRolloutApproveTestsTheID(t *testing.T) {
	f := newRolloutFixture(edgeSet(nil))
	if err := f.run(t, &rolloutApproveOptions{rolloutFlags: f.flags()}, "edge", "-n", "fleet"); err != nil {
		t.Fatal(err)
	}
	var patch string
	for _, a := range f.config.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patch = string(p.GetPatch())
		}
	}
	want := `[{"op":"test","path":"/status/rollout/id","value":"abc123"},{"op":"add","path":"/metadata/annotations","value":{"config.porch.kpt.dev/approve-wave":"prod@abc123"}}]`
	if patch != want {
		t.Errorf("patch %s, want %s", patch, want)
	}
}

func TestRolloutPauseResume(t *testing.T) {
	f := newRolloutFixture(edgeSet(nil))
	steps := []struct {
		pause  bool
		paused bool
		out    string
	}{
		{pause: true, paused: true, out: "paused the rollout of packagevariantset fleet/edge (as alice@example.com)\n"},
		{pause: true, paused: true, out: "the rollout of packagevariantset fleet/edge is paused already\n"},
		{pause: false, paused: false, out: "resumed the rollout of packagevariantset fleet/edge (as alice@example.com)\n"},
		{pause: false, paused: false, out: "the rollout of packagevariantset fleet/edge is not paused and no wave of it is halted: nothing to resume\n"},
	}
	for i, s := range steps {
		f.out.Reset()
		if err := f.run(t, &rolloutPauseOptions{rolloutFlags: f.flags(), pause: s.pause}, "edge", "-n", "fleet"); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if f.out.String() != s.out {
			t.Errorf("step %d: stdout %q, want %q", i, f.out.String(), s.out)
		}
		if got := f.set(t).Spec.Rollout.Paused; got != s.paused {
			t.Errorf("step %d: paused %v, want %v", i, got, s.paused)
		}
	}
	want := []string{
		"RolloutPaused: rollout paused by alice@example.com (variantctl rollout pause)",
		"RolloutResumed: rollout resumed by alice@example.com (variantctl rollout resume)",
	}
	f.wantEvents(t, want...)
}

// TestRolloutResumeHalted: resume unpauses a paused rollout and resumes
// its halted wave, for the rollout it read only, and records who did it.
func TestRolloutResumeHalted(t *testing.T) {
	f := newRolloutFixture(edgeSet(func(p *configv1alpha2.PackageVariantSet) {
		p.Spec.Rollout.Paused = true
		p.Status.Rollout.Waves[0].Phase = configv1alpha2.WaveHalted
	}))
	if err := f.run(t, &rolloutPauseOptions{rolloutFlags: f.flags()}, "edge", "-n", "fleet"); err != nil {
		t.Fatal(err)
	}
	want := "resumed the rollout of packagevariantset fleet/edge (as alice@example.com)\n" +
		"resumed halted wave canary of rollout abc123 on packagevariantset fleet/edge: its failed variants halt nothing now (as alice@example.com)\n"
	if f.out.String() != want {
		t.Errorf("stdout %q, want %q", f.out.String(), want)
	}
	pvs := f.set(t)
	if pvs.Spec.Rollout.Paused || pvs.Annotations[configv1alpha2.ResumeWaveAnnotation] != "canary@abc123" {
		t.Errorf("paused %v, %s=%q; want false, canary@abc123", pvs.Spec.Rollout.Paused, configv1alpha2.ResumeWaveAnnotation, pvs.Annotations[configv1alpha2.ResumeWaveAnnotation])
	}
	wantEvents := []string{
		"RolloutResumed: rollout resumed by alice@example.com (variantctl rollout resume)",
		"WaveResumed: halted wave canary of rollout abc123 resumed by alice@example.com (variantctl rollout resume)",
	}
	f.wantEvents(t, wantEvents...)
	f.out.Reset()
	if err := f.run(t, &rolloutPauseOptions{rolloutFlags: f.flags()}, "edge", "-n", "fleet"); err != nil {
		t.Fatal(err)
	}
	if want := "wave canary of rollout abc123 on packagevariantset fleet/edge is resumed already; the controller has not reported it yet\n"; f.out.String() != want {
		t.Errorf("again: stdout %q, want %q", f.out.String(), want)
	}
}

// TestRolloutSkip: skip adds the named variants of the set to the
// rollout's skip annotation (a skip of an older rollout is dropped),
// refuses a variant the set does not control, and records who skipped.
func TestRolloutSkip(t *testing.T) {
	pvs := edgeSet(func(p *configv1alpha2.PackageVariantSet) {
		p.Annotations = map[string]string{configv1alpha2.SkipVariantsAnnotation: "old-app@oldid"}
	})
	variant := func(name string, owner *configv1alpha2.PackageVariantSet) *configv1alpha1.PackageVariant {
		pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fleet"}}
		if owner != nil {
			pv.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, configv1alpha2.SchemeGroupVersion.WithKind("PackageVariantSet"))}
		}
		return pv
	}
	f := newRolloutFixture(pvs, variant("edge-a-app", pvs), variant("edge-b-app", pvs), variant("loose", nil))
	err := f.run(t, &rolloutSkipOptions{rolloutFlags: f.flags()}, "edge", "edge-a-app", "loose", "-n", "fleet")
	if want := "packagevariant fleet/loose is not a variant of packagevariantset fleet/edge: a skip of it would skip nothing (its variants: kubectl get packagevariants -n fleet -l config.porch.kpt.dev/packagevariantset=set-uid)"; err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	for _, args := range [][]string{{"edge", "edge-a-app"}, {"edge", "edge-a-app", "edge-b-app"}, {"edge", "edge-b-app"}} {
		if err := f.run(t, &rolloutSkipOptions{rolloutFlags: f.flags()}, append(args, "-n", "fleet")...); err != nil {
			t.Fatal(err)
		}
	}
	wantOut := "rollout abc123 of packagevariantset fleet/edge skips edge-a-app (as alice@example.com)\n" +
		"rollout abc123 of packagevariantset fleet/edge skips edge-b-app (as alice@example.com)\n" +
		"rollout abc123 of packagevariantset fleet/edge skips edge-b-app already\n"
	if f.out.String() != wantOut {
		t.Errorf("stdout %q, want %q", f.out.String(), wantOut)
	}
	if got := f.set(t).Annotations[configv1alpha2.SkipVariantsAnnotation]; got != "edge-a-app,edge-b-app@abc123" {
		t.Errorf("%s=%q, want edge-a-app,edge-b-app@abc123", configv1alpha2.SkipVariantsAnnotation, got)
	}
	wantEvents := []string{
		"VariantsSkipped: edge-a-app skipped in rollout abc123 by alice@example.com (variantctl rollout skip)",
		"VariantsSkipped: edge-b-app skipped in rollout abc123 by alice@example.com (variantctl rollout skip)",
	}
	f.wantEvents(t, wantEvents...)
}

// TestRolloutStatusHalted: a halted wave says how to go on; skipped
// variants, a resumed wave and variants in no wave are listed.
func TestRolloutStatusHalted(t *testing.T) {
	f := newRolloutFixture(edgeSet(func(p *configv1alpha2.PackageVariantSet) {
		st := p.Status.Rollout
		st.Waves[0].Skipped, st.Waves[0].Resumed = 1, true
		st.Waves[1].Phase, st.Waves[1].Failed, st.Waves[1].StartedAt = configv1alpha2.WaveHalted, 2, &started
		st.Waves[1].VariantStates = []configv1alpha2.VariantState{
			{Name: "edge-p1-app", State: configv1alpha2.VariantFailed, Detail: "RenderFailed"},
			{Name: "edge-p2-app", State: configv1alpha2.VariantFailed, Detail: "Unhealthy: Kustomization fleet/p2: Ready=False"},
		}
		st.Unassigned, st.UnassignedVariants = 2, []string{"edge-x-app", "edge-y-app"}
	}), edgeVariants(map[string]string{"edge-c1-app": "canary", "edge-p1-app": "prod", "edge-p2-app": "prod", "edge-r1-app": "rest", "edge-x-app": ""})...)
	f.wantStatus(t, `packagevariantset fleet/edge: rollout abc123 of upstream revision 2, 1/6 finished
RolledOut=False WaitingForApproval: wave prod waits for approval
WAVE    PHASE     VARIANTS  UPDATED  FINISHED  FAILED  APPROVAL   STARTED
canary  Finished  1         1        1         0       Automatic  5m ago
prod    Halted    2         0        0         2       Manual     5m ago
rest    Pending   3         0        0         0       Manual     -
VARIANT      WAVE    STATE       DETAIL
edge-c1-app  canary  published
edge-p1-app  prod    failed      RenderFailed
edge-p2-app  prod    failed      Unhealthy: Kustomization fleet/p2: Ready=False
edge-r1-app  rest    pending     its wave has not started
edge-x-app   -       in no wave  held on what it carries; no wave's selectors match it
wave canary: 1 variants skipped in this rollout (config.porch.kpt.dev/skip-variants)
wave canary is resumed: its failures halt nothing in this rollout (config.porch.kpt.dev/resume-wave)
2 variants are in no wave, held on what they carry: edge-x-app, edge-y-app
wave prod halted on its failures: let it go on beside them with variantctl rollout resume edge -n fleet, or skip them with variantctl rollout skip edge VARIANT... -n fleet
`)
}

func TestRolloutStatus(t *testing.T) {
	f := newRolloutFixture(edgeSet(func(p *configv1alpha2.PackageVariantSet) { p.Spec.Rollout.Paused = true }), edgeVariants(sixVariants)...)
	f.wantStatus(t, `packagevariantset fleet/edge: rollout abc123 of upstream revision 2, 1/6 finished
RolledOut=False WaitingForApproval: wave prod waits for approval
WAVE    PHASE               VARIANTS  UPDATED  FINISHED  FAILED  APPROVAL   STARTED
canary  Finished            1         1        1         0       Automatic  5m ago
prod    WaitingForApproval  2         0        0         0       Manual     -
rest    Pending             3         0        0         0       Manual     -
VARIANT      WAVE    STATE      DETAIL
edge-c1-app  canary  published
edge-p1-app  prod    pending    its wave waits for approval
edge-p2-app  prod    pending    its wave waits for approval
edge-r1-app  rest    pending    its wave has not started
edge-r2-app  rest    pending    its wave has not started
edge-r3-app  rest    pending    its wave has not started
paused: no new wave or variant change starts; resume with: variantctl rollout resume edge -n fleet
wave prod waits for approval: variantctl rollout approve edge prod -n fleet
`)
}

// TestRolloutStatusWatch: --watch prints the rollout, then again at each
// change, and returns once it is RolledOut for the set's generation.
func TestRolloutStatusWatch(t *testing.T) {
	f := newRolloutFixture(edgeSet(nil), edgeVariants(sixVariants)...)
	o := f.status()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.runCtx(ctx, t, o, "edge", "-n", "fleet", "--watch") }()

	// Once it watches, the rollout finishes.
	deadline := time.Now().Add(20 * time.Second)
	for !slices.ContainsFunc(f.config.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "watch" }) {
		if time.Now().After(deadline) {
			t.Fatal("variantctl rollout status --watch did not watch the set within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pvs := f.set(t)
	pvs.Status.Conditions = []metav1.Condition{{Type: "RolledOut", Status: metav1.ConditionTrue, Reason: "RolledOut", ObservedGeneration: 3, Message: "rollout abc123 finished"}}
	for i := range pvs.Status.Rollout.Waves {
		w := &pvs.Status.Rollout.Waves[i]
		w.Phase, w.Updated, w.Finished = configv1alpha2.WaveFinished, w.Variants, w.Variants
	}
	pvs.Status.Rollout.Progress = "6/6"
	if _, err := f.config.ConfigV1alpha2().PackageVariantSets("fleet").UpdateStatus(context.Background(), pvs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("--watch: %v", err)
		}
	case <-ctx.Done():
		for _, a := range f.config.Actions() {
			t.Logf("action %s %s", a.GetVerb(), a.GetResource().Resource)
		}
		t.Fatal("--watch did not return once the rollout was RolledOut")
	}
	out := f.out.String()
	mustContain(t, "--watch output", out,
		"rollout abc123 of upstream revision 2, 1/6 finished", "edge-p1-app  prod    pending    its wave waits for approval",
		"rollout abc123 of upstream revision 2, 6/6 finished", "RolledOut=True RolledOut: rollout abc123 finished", "edge-r3-app  rest    published")
	if strings.Count(out, "VARIANT ") != 2 {
		t.Errorf("--watch printed the rollout %d times, want twice (once per change):\n%s", strings.Count(out, "VARIANT "), out)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}

// TestREADMERolloutStatus: the README shows what variantctl rollout status
// prints for the example rollout's set as the controllers leave it after
// rendering the example fleet (read from render's output, two minutes
// after its first wave started).
func TestREADMERolloutStatus(t *testing.T) {
	r := variantctl(t, "render", "-f", "../../examples/fleet/repositories.yaml", "-f", "../../examples/fleet/region-configs.yaml",
		"-f", "../../examples/rollout", "--package", "blueprints/app=../../examples/packages/app")
	r.want(t, exitOK)
	var pvs *configv1alpha2.PackageVariantSet
	var variants []runtime.Object
	for _, doc := range strings.Split(r.stdout, "\n---\n") {
		switch {
		case strings.Contains("\n"+doc+"\n", "\nkind: PackageVariantSet\n"):
			pvs = &configv1alpha2.PackageVariantSet{}
			if err := sigsyaml.Unmarshal([]byte(doc), pvs); err != nil {
				t.Fatal(err)
			}
		case strings.Contains("\n"+doc+"\n", "\nkind: PackageVariant\n"):
			pv := &configv1alpha1.PackageVariant{}
			if err := sigsyaml.Unmarshal([]byte(doc), pv); err != nil {
				t.Fatal(err)
			}
			variants = append(variants, pv)
		}
	}
	if pvs == nil || pvs.Status.Rollout == nil || len(pvs.Status.Rollout.Waves) == 0 || pvs.Status.Rollout.Waves[0].StartedAt == nil {
		t.Fatalf("render printed no set with a started rollout:\n%s", r.stdout)
	}
	// render prints no UIDs; the set's is the one its variants' label names
	pvs.UID = types.UID(variants[0].(*configv1alpha1.PackageVariant).Labels[configv1alpha2.SetLabel])
	f := newRolloutFixture(pvs, variants...)
	o := &rolloutStatusOptions{rolloutFlags: f.flags(), now: func() time.Time { return pvs.Status.Rollout.Waves[0].StartedAt.Add(2 * time.Minute) }}
	if err := f.run(t, o, pvs.Name, "-n", pvs.Namespace); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- output of: variantctl rollout status edge-app -n platform -->\n```\n"
	i := bytes.Index(readme, []byte(marker))
	if i < 0 {
		t.Fatalf("README.md has no block after %q; put this in it:\n%s", marker, f.out.String())
	}
	block := readme[i+len(marker):]
	block = block[:bytes.Index(block, []byte("```\n"))]
	if string(block) != f.out.String() {
		t.Errorf("README.md's rollout status example is not what the command prints; put this in it:\n%s", f.out.String())
	}
}
