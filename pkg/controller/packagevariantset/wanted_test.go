package packagevariantset

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// TestPlanChanges: from the rendered specs and the variants in the cache,
// the creates and updates a sync makes, the variants it takes for stale,
// and the names it cannot use.
func TestPlanChanges(t *testing.T) {
	spec := func(repo, pkg string) *configv1alpha1.PackageVariantSpec {
		return &configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Downstream: &configv1alpha1.Downstream{Repo: repo, Package: pkg},
		}
	}
	variant := func(name string, setUID types.UID, s *configv1alpha1.PackageVariantSpec) *configv1alpha1.PackageVariant {
		pv := variantOf("ns", name, "s", setUID)
		pv.Labels = map[string]string{configv1alpha2.SetLabel: string(setUID)}
		pv.Spec = *s
		return pv
	}
	deleting := func(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
		now := metav1.Now()
		pv.DeletionTimestamp = &now
		return pv
	}
	withLabels := func(s *configv1alpha1.PackageVariantSpec) *configv1alpha1.PackageVariantSpec {
		s.Labels = map[string]string{"fleet": "edge"}
		return s
	}
	emptyContext := func(s *configv1alpha1.PackageVariantSpec) *configv1alpha1.PackageVariantSpec {
		s.PackageContext = &configv1alpha1.PackageContext{}
		return s
	}
	cases := map[string]struct {
		reason       string
		cached       []*configv1alpha1.PackageVariant
		rendered     [][2]string
		wantChanges  []string
		wantStale    []string
		wantProblems []string
	}{
		"UnchangedIsNotWritten": {
			reason:   "a variant with the rendered spec (an empty package context is none) is left alone",
			cached:   []*configv1alpha1.PackageVariant{variant("s-edge-1-app", "uid-s", emptyContext(spec("edge-1", "app")))},
			rendered: [][2]string{{"edge-1", "app"}},
		},
		"ChangedIsUpdated": {
			reason:      "a variant whose spec differs from the rendered one is updated to it",
			cached:      []*configv1alpha1.PackageVariant{variant("s-edge-1-app", "uid-s", withLabels(spec("edge-1", "app")))},
			rendered:    [][2]string{{"edge-1", "app"}},
			wantChanges: []string{"update s-edge-1-app to edge-1/app"},
		},
		"MissingIsCreated": {
			reason:      "each rendered downstream without a variant gets one, in target order, named as the reference names it",
			rendered:    [][2]string{{"edge-2", "app"}, {"edge-1", "Web"}},
			wantChanges: []string{"create s-edge-2-app for edge-2/app", fmt.Sprintf("create %s for edge-1/Web", variantName("s-edge-1-Web"))},
		},
		"BeingDeletedIsLeftToGo": {
			reason: "a variant being deleted is neither updated nor deleted again, rendered or not",
			cached: []*configv1alpha1.PackageVariant{
				deleting(variant("s-edge-1-app", "uid-s", withLabels(spec("edge-1", "app")))),
				deleting(variant("s-edge-2-app", "uid-s", spec("edge-2", "app"))),
			},
			rendered: [][2]string{{"edge-1", "app"}},
		},
		"NameOfAnotherSet": {
			reason:       "a variant of another set (a predecessor of the same name) holds the name: a problem, no write",
			cached:       []*configv1alpha1.PackageVariant{variant("s-edge-1-app", "uid-old", spec("edge-1", "app"))},
			rendered:     [][2]string{{"edge-1", "app"}},
			wantProblems: []string{"PackageVariant s-edge-1-app (for downstream edge-1/app) already exists and does not belong to this set; delete or rename it"},
		},
		"NameOfOwnVariantForAnotherDownstream": {
			reason:    "the set's variant with that name was edited to another downstream: not created over, and stale itself",
			cached:    []*configv1alpha1.PackageVariant{variant("s-edge-1-app", "uid-s", spec("edge-1", "db"))},
			rendered:  [][2]string{{"edge-1", "app"}},
			wantStale: []string{"s-edge-1-app"},
		},
		"StaleSortedByName": {
			reason: "variants no target renders any more are stale, in name order",
			cached: []*configv1alpha1.PackageVariant{
				variant("s-edge-4-app", "uid-s", spec("edge-4", "app")),
				variant("s-edge-2-app", "uid-s", spec("edge-2", "app")),
				variant("s-edge-3-app", "uid-s", spec("edge-3", "app")),
			},
			rendered:    [][2]string{{"edge-1", "app"}},
			wantChanges: []string{"create s-edge-1-app for edge-1/app"},
			wantStale:   []string{"s-edge-2-app", "s-edge-3-app", "s-edge-4-app"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			pvs := set("ns", "s", "uid-s", [2]string{"blueprints", "app"})
			f.sets = append(f.sets, pvs)
			f.variants = tc.cached
			c, _ := f.newController(ctx)
			w := &wanted{}
			specs := map[*configv1alpha1.PackageVariantSpec]bool{}
			for _, d := range tc.rendered {
				s := spec(d[0], d[1])
				specs[s] = true
				id := variantIdentifier("s", d[0], d[1])
				w.variants = append(w.variants, &rendered{id: id, name: variantName(id), spec: s})
			}
			c.planChanges(pvs, c.variantsOf(pvs), w)

			var changes, stale []string
			for _, ch := range w.changes {
				if !specs[ch.spec] {
					t.Errorf("%s: %s is not given a rendered spec", tc.reason, ch.name)
				}
				d := ch.spec.Downstream.Repo + "/" + ch.spec.Downstream.Package
				if ch.current == nil {
					changes = append(changes, fmt.Sprintf("create %s for %s", ch.name, d))
					continue
				}
				if ch.current.Name != ch.name {
					t.Errorf("%s: update of %s is named %s", tc.reason, ch.current.Name, ch.name)
				}
				changes = append(changes, fmt.Sprintf("update %s to %s", ch.name, d))
			}
			for _, pv := range w.stale {
				stale = append(stale, pv.Name)
			}
			if diff := cmp.Diff(tc.wantChanges, changes); diff != "" {
				t.Errorf("%s: changes (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantStale, stale); diff != "" {
				t.Errorf("%s: stale (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantProblems, w.problems); diff != "" {
				t.Errorf("%s: problems (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
