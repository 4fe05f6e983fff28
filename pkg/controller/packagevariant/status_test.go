package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func TestSetTargets(t *testing.T) {
	rs := func(err string) porchv1alpha1.RenderStatus { return porchv1alpha1.RenderStatus{Err: err} }
	target := func(name string) *porchv1alpha1.PackageRevision {
		pr := revision("ns", "deploy", "app", "x", nil)
		pr.Name = name
		return pr
	}
	cases := map[string]struct {
		reason   string
		previous []configv1alpha1.DownstreamTarget
		targets  []*porchv1alpha1.PackageRevision
		rendered map[string]porchv1alpha1.RenderStatus
		want     []configv1alpha1.DownstreamTarget
	}{
		"SortedWithRenderStatus": {
			reason:   "targets are listed by name, with the render outcome of this sync",
			targets:  []*porchv1alpha1.PackageRevision{target("c"), target("a"), target("b")},
			rendered: map[string]porchv1alpha1.RenderStatus{"a": rs("a failed")},
			want:     []configv1alpha1.DownstreamTarget{{Name: "a", RenderStatus: rs("a failed")}, {Name: "b"}, {Name: "c"}},
		},
		"KeepsKnownRenderStatus": {
			reason:   "a target not rendered in this sync keeps the outcome recorded before; a new render replaces it; gone targets go",
			previous: []configv1alpha1.DownstreamTarget{{Name: "a", RenderStatus: rs("old a")}, {Name: "b", RenderStatus: rs("old b")}, {Name: "gone", RenderStatus: rs("x")}},
			targets:  []*porchv1alpha1.PackageRevision{target("b"), target("a")},
			rendered: map[string]porchv1alpha1.RenderStatus{"b": rs("")},
			want:     []configv1alpha1.DownstreamTarget{{Name: "a", RenderStatus: rs("old a")}, {Name: "b", RenderStatus: rs("")}},
		},
		"NoTargets": {
			reason:   "no targets clears the list",
			previous: []configv1alpha1.DownstreamTarget{{Name: "a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := &configv1alpha1.PackageVariant{Status: configv1alpha1.PackageVariantStatus{DownstreamTargets: tc.previous}}
			setTargets(pv, tc.targets, tc.rendered)
			if diff := cmp.Diff(tc.want, pv.Status.DownstreamTargets); diff != "" {
				t.Errorf("%s: status.downstreamTargets (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConditionsCarryObservedGeneration(t *testing.T) {
	type cond struct {
		Type               string
		Status             metav1.ConditionStatus
		Reason             string
		ObservedGeneration int64
	}
	cases := map[string]struct {
		reason string
		set    func(pv *configv1alpha1.PackageVariant)
		want   []cond
	}{
		"Invalid": {
			reason: "an invalid variant is Stalled and not Ready",
			set:    func(pv *configv1alpha1.PackageVariant) { setInvalid(pv, "bad", "bad") },
			want: []cond{
				{ConditionReady, metav1.ConditionFalse, ReasonError, 7},
				{ConditionStalled, metav1.ConditionTrue, ReasonValidationError, 7},
			},
		},
		"ValidAndReady": {
			reason: "a valid, up to date variant",
			set:    func(pv *configv1alpha1.PackageVariant) { setValid(pv); setReady(pv, readyMessage) },
			want: []cond{
				{ConditionReady, metav1.ConditionTrue, ReasonNoErrors, 7},
				{ConditionStalled, metav1.ConditionFalse, ReasonValid, 7},
			},
		},
		"NotReady": {
			reason: "waiting for approval",
			set:    func(pv *configv1alpha1.PackageVariant) { setNotReady(pv, ReasonWaitingForApproval, "m") },
			want:   []cond{{ConditionReady, metav1.ConditionFalse, ReasonWaitingForApproval, 7}},
		},
		"UpdatesGenerationOfExisting": {
			reason: "a condition set in an older generation gets the new one even when nothing else changed",
			set: func(pv *configv1alpha1.PackageVariant) {
				pv.Generation = 6
				setReady(pv, readyMessage)
				pv.Generation = 7
				setReady(pv, readyMessage)
			},
			want: []cond{{ConditionReady, metav1.ConditionTrue, ReasonNoErrors, 7}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
			tc.set(pv)
			var got []cond
			for _, c := range pv.Status.Conditions {
				got = append(got, cond{c.Type, c.Status, c.Reason, c.ObservedGeneration})
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b cond) bool { return a.Type < b.Type })); diff != "" {
				t.Errorf("%s: conditions (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWriteStatus(t *testing.T) {
	cached := func() *configv1alpha1.PackageVariant {
		pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
		pv.Generation = 2
		pv.Status.ObservedGeneration = 2
		setValid(pv)
		setReady(pv, readyMessage)
		return pv
	}
	cases := map[string]struct {
		reason    string
		change    func(pv *configv1alpha1.PackageVariant)
		wantWrite bool
		want      func(pv *configv1alpha1.PackageVariant)
	}{
		"Unchanged": {
			reason: "an unchanged status costs no API call",
			change: func(*configv1alpha1.PackageVariant) {},
		},
		"SameConditionsAgain": {
			reason: "setting the same conditions again is no change (no flapping transition times)",
			change: func(pv *configv1alpha1.PackageVariant) { setValid(pv); setReady(pv, readyMessage) },
		},
		"ConditionChanged": {
			reason:    "a changed condition is written once",
			change:    func(pv *configv1alpha1.PackageVariant) { setNotReady(pv, ReasonWaitingForApproval, "waiting") },
			wantWrite: true,
			want:      func(pv *configv1alpha1.PackageVariant) { setNotReady(pv, ReasonWaitingForApproval, "waiting") },
		},
		"NewGeneration": {
			reason:    "a new generation alone is reported (status.observedGeneration and the conditions' observedGeneration)",
			change:    func(pv *configv1alpha1.PackageVariant) { pv.Generation = 3; setValid(pv); setReady(pv, readyMessage) },
			wantWrite: true,
			want: func(pv *configv1alpha1.PackageVariant) {
				pv.Generation = 3
				pv.Status.ObservedGeneration = 3
				setValid(pv)
				setReady(pv, readyMessage)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			old := cached()
			f := newFixture(t)
			f.pvs = append(f.pvs, old)
			f.objects = append(f.objects, old)
			c, _ := f.newController(ctx)
			desired := old.DeepCopy()
			tc.change(desired)
			if err := c.writeStatus(ctx, old, desired); err != nil {
				t.Fatalf("writeStatus: %v", err)
			}
			actions := writeActions(f.client.Actions())
			if !tc.wantWrite {
				if len(actions) != 0 {
					t.Errorf("%s: want no API call, got %v", tc.reason, actions)
				}
				return
			}
			if len(actions) != 1 || actions[0].GetVerb() != "update" || actions[0].GetSubresource() != "status" {
				t.Fatalf("%s: want exactly one status update, got %v", tc.reason, actions)
			}
			written := actions[0].(core.UpdateAction).GetObject().(*configv1alpha1.PackageVariant)
			want := cached()
			tc.want(want)
			if diff := cmp.Diff(want.Status, written.Status, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s: written status (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
