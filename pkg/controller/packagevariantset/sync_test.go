package packagevariantset

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// variantWrites are the creates, updates and deletes of PackageVariants
// the actions make, as "<verb> <name>".
func variantWrites(actions []core.Action) []string {
	var out []string
	for _, a := range actions {
		if a.GetResource().Resource != "packagevariants" {
			continue
		}
		// Matched by verb: an update action is also a CreateAction (both
		// have GetObject).
		switch a.GetVerb() {
		case "create", "update":
			out = append(out, a.GetVerb()+" "+a.(core.CreateAction).GetObject().(*configv1alpha1.PackageVariant).Name)
		case "delete":
			out = append(out, "delete "+a.(core.DeleteAction).GetName())
		}
	}
	return out
}

// TestSyncValidatesRenderedSpecs: a target whose template renders a spec
// the PackageVariant controller refuses, though the set's own validation
// lets it through, makes no variant and changes none (one would only be a
// Stalled variant); the set's Stalled condition names the target, the
// variant, the field and why. The other targets are served as when a
// target cannot be rendered: their variants are made, none is deleted.
func TestSyncValidatesRenderedSpecs(t *testing.T) {
	const notKept = "; variants of the other targets are kept up to date, and none is deleted until every target renders"
	existing := func(name, repo, pkg string, injectors ...configv1alpha1.InjectionSelector) *configv1alpha1.PackageVariant {
		pv := variantOf("ns", name, "s", "uid-s")
		pv.Labels = map[string]string{configv1alpha2.SetLabel: "uid-s"}
		pv.Spec.Downstream = &configv1alpha1.Downstream{Repo: repo, Package: pkg}
		pv.Spec.Injectors = injectors
		return pv
	}
	cases := map[string]struct {
		reason   string
		targets  []string
		template *configv1alpha2.PackageVariantTemplate
		existing []*configv1alpha1.PackageVariant
		want     []string
		message  string
	}{
		"DownstreamPorchRefuses": {
			reason:   "a packageExpr that renders an upper-case package for one target: Porch would refuse every draft of it",
			targets:  []string{"edge-1", "edge-2"},
			template: &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{PackageExpr: ptr.To("repoDefault == 'edge-2' ? 'Web' : 'web'")}},
			existing: []*configv1alpha1.PackageVariant{existing("s-edge-2-app", "edge-2", "app")},
			want:     []string{"create s-edge-1-web"},
			message: fmt.Sprintf("spec.targets[0] renders PackageVariant %s (for downstream edge-2/Web) with an invalid spec, so it is not created or updated: "+
				`spec.downstream: Porch would name the draft "edge-2.Web.packagevariant-1", which it refuses: %s; `+
				"use a lower-case package path of letters, digits, '-' and '/' that keeps the name within 253 characters"+notKept,
				variantName("s-edge-2-Web"), strings.Join(validation.IsDNS1123Subdomain("edge-2.Web.packagevariant-1"), "; ")),
		},
		"EmptyInjectorNameAndReservedKey": {
			reason:  "an injector named \"\" and the reserved package context key name: the existing variant keeps its spec",
			targets: []string{"edge-1"},
			template: &configv1alpha2.PackageVariantTemplate{
				PackageContext: &configv1alpha2.PackageContextTemplate{Data: map[string]string{"name": "x"}},
				Injectors:      []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("")}},
			},
			existing: []*configv1alpha1.PackageVariant{existing("s-edge-1-app", "edge-1", "app", configv1alpha1.InjectionSelector{Name: "cm"})},
			message: "spec.targets[0] renders PackageVariant s-edge-1-app (for downstream edge-1/app) with an invalid spec, so it is not created or updated: " +
				`spec.packageContext.data[name]: Forbidden: must not contain the key "name": it is reserved for kpt and Porch; ` +
				"spec.injectors[0].name must not be empty" + notKept,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			target := byName(tc.targets...)
			target.Template = tc.template
			s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, target)
			s.Generation = 2
			f.sets = append(f.sets, s)
			f.Objects = append(f.Objects, s)
			for _, r := range tc.targets {
				f.repos = append(f.repos, repository("ns", r, nil))
			}
			for _, pv := range tc.existing {
				f.variants = append(f.variants, pv)
				f.Objects = append(f.Objects, pv)
			}
			f.revisions = append(f.revisions, publishedUpstream())
			c, _ := f.newController(ctx)

			if err := c.sync(ctx, cache.ObjectName{Namespace: "ns", Name: "s"}); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if diff := cmp.Diff(tc.want, variantWrites(f.Client.Actions())); diff != "" {
				t.Errorf("%s: PackageVariant writes (-want +got):\n%s", tc.reason, diff)
			}
			got, err := f.Client.ConfigV1alpha2().PackageVariantSets("ns").Get(ctx, "s", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, ConditionStalled)
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ReasonValidationError || cond.ObservedGeneration != 2 {
				t.Fatalf("%s: Stalled condition %+v, want True, %s, generation 2", tc.reason, cond, ReasonValidationError)
			}
			if diff := cmp.Diff(tc.message, cond.Message); diff != "" {
				t.Errorf("%s: Stalled message (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSyncStopsAtTheCELBudget: a set whose expressions, over all its
// targets, cost more than one sync may spend creates, updates and deletes
// nothing, and is Stalled with CostBudgetExceeded naming the expression
// that went over and what to do; within the budget it is served.
func TestSyncStopsAtTheCELBudget(t *testing.T) {
	for name, tc := range map[string]struct {
		budget uint64
		want   []string
	}{
		"over":   {budget: 5},
		"within": {budget: 0, want: []string{"create s-edge-1-app", "create s-edge-2-app", "create s-edge-3-app"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			target := byName("edge-1", "edge-2", "edge-3")
			target.Template = &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{
				{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels.exists(k, k == 'region') ? repository.labels['region'] : 'none'")},
			}}
			s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, target)
			f.sets = append(f.sets, s)
			f.Objects = append(f.Objects, s)
			for _, r := range []string{"edge-1", "edge-2", "edge-3"} {
				f.repos = append(f.repos, repository("ns", r, map[string]string{"region": "eu", "tier": "gold"}))
			}
			f.revisions = append(f.revisions, publishedUpstream())
			c, _ := f.newController(ctx)
			c.celBudget = tc.budget
			if err := c.sync(ctx, cache.ObjectName{Namespace: "ns", Name: "s"}); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if diff := cmp.Diff(tc.want, variantWrites(f.Client.Actions())); diff != "" {
				t.Errorf("PackageVariant writes (-want +got):\n%s", diff)
			}
			got, err := f.Client.ConfigV1alpha2().PackageVariantSets("ns").Get(ctx, "s", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, ConditionStalled)
			if tc.budget == 0 {
				if cond != nil && cond.Status == metav1.ConditionTrue {
					t.Errorf("Stalled within the budget: %+v", cond)
				}
				return
			}
			if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ReasonCostBudgetExceeded {
				t.Fatalf("Stalled %+v, want True, %s", cond, ReasonCostBudgetExceeded)
			}
			for _, want := range []string{"CEL cost budget of one sync (5)", "spec.targets[0].template.labelExprs[0].valueExpr", "nothing was created or deleted"} {
				if !strings.Contains(cond.Message, want) {
					t.Errorf("Stalled message %q does not say %q", cond.Message, want)
				}
			}
		})
	}
}

// TestEverySyncSeesWhatNoEventReported: every sync of a set takes the same
// path, so a change that reached the caches without any event reaching the
// set (a Repository labelled into the selection while the handlers were
// busy, say) is acted on by the next sync, whatever woke it, not ten
// minutes later as by the set's former sync on a record of what changed.
func TestEverySyncSeesWhatNoEventReported(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, bySelector(map[string]string{"env": "prod"}))
	f.sets = append(f.sets, s)
	f.Objects = append(f.Objects, s)
	f.repos = append(f.repos, repository("ns", "edge-1", map[string]string{"env": "prod"}))
	f.revisions = append(f.revisions, publishedUpstream())
	c, factory := f.newController(ctx)
	key := cache.ObjectName{Namespace: "ns", Name: "s"}
	if err := c.sync(ctx, key); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if diff := cmp.Diff([]string{"create s-edge-1-app"}, variantWrites(f.Client.Actions())); diff != "" {
		t.Fatalf("first sync's PackageVariant writes (-want +got):\n%s", diff)
	}
	// The caches catch up with the created variant and with a Repository
	// labelled into the selection; no handler runs for either.
	created, err := f.Client.ConfigV1alpha1().PackageVariants("ns").Get(ctx, "s-edge-1-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := factory.Config().V1alpha1().PackageVariants().Informer().GetIndexer().Add(created); err != nil {
		t.Fatal(err)
	}
	c.expectations.Observed(s.UID, created.Name)
	if err := factory.Config().V1alpha1().Repositories().Informer().GetIndexer().Add(repository("ns", "edge-2", map[string]string{"env": "prod"})); err != nil {
		t.Fatal(err)
	}
	f.Client.ClearActions()
	// A sync woken by something else (a variant's readiness, a retry).
	if err := c.sync(ctx, key); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if diff := cmp.Diff([]string{"create s-edge-2-app"}, variantWrites(f.Client.Actions())); diff != "" {
		t.Errorf("second sync's PackageVariant writes (-want +got):\n%s", diff)
	}
}
