package packagevariantset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
)

// TestRendersAreReusedUntilAnInputChanges: a target is rendered again only
// when something its render read changed: the set's generation, the
// upstream revision, the target's object, the downstream Repository the
// render loaded. A target no sync has any more is dropped.
func TestRendersAreReusedUntilAnInputChanges(t *testing.T) {
	tpl := &configv1alpha2.PackageVariantTemplate{
		Downstream: &configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("target.labels['deployTo']")},
		LabelExprs: []configv1alpha2.MapExpr{{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")}},
	}
	r := testRenderer(tpl)
	repos := map[string]*configv1alpha1.Repository{}
	r.repository = func(name string) (*configv1alpha1.Repository, bool) {
		repo, ok := repos[name]
		return repo, ok
	}
	setRepo := func(name, region, version string) {
		repos[name] = &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: version, Labels: map[string]string{"region": region}}}
	}
	site := func(version, deployTo string) target {
		return target{template: tpl, repoDefault: "site-1", packageDefault: "app", version: version,
			object: &celtemplate.Object{Name: "site-1", Namespace: "ns", Labels: map[string]string{"deployTo": deployTo}}}
	}
	var all states
	sync := func(ts ...target) []*rendered {
		t.Helper()
		wants, problems, _, stopped := desiredVariants(all.of(r.pvs, r.upstream), r, ts)
		if stopped != nil {
			t.Fatal(stopped)
		}
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		return wants
	}
	region := func(e *rendered) string { return e.spec.Labels["region"] }

	setRepo("eu-1", "eu", "10")
	first := sync(site("1", "eu-1"))[0]
	if first.spec.Downstream.Repo != "eu-1" || region(first) != "eu" {
		t.Fatalf("rendered %+v, want downstream eu-1 with region eu", first.spec)
	}
	if again := sync(site("1", "eu-1"))[0]; again != first {
		t.Errorf("nothing changed, yet the target was rendered again")
	}

	setRepo("eu-1", "eu-north", "11")
	afterRepo := sync(site("1", "eu-1"))[0]
	if afterRepo == first || region(afterRepo) != "eu-north" {
		t.Errorf("the downstream Repository changed: region %q, want eu-north from a new render", region(afterRepo))
	}

	setRepo("us-1", "us", "12")
	afterObject := sync(site("2", "us-1"))[0]
	if afterObject == afterRepo || afterObject.spec.Downstream.Repo != "us-1" || region(afterObject) != "us" {
		t.Errorf("the target's object changed: %+v, want downstream us-1 with region us from a new render", afterObject.spec)
	}

	r.pvs.Generation++
	afterSpec := sync(site("2", "us-1"))[0]
	if afterSpec == afterObject {
		t.Errorf("the set's spec changed, yet the target was not rendered again")
	}
	r.upstream.ResourceVersion = "99"
	afterUpstream := sync(site("2", "us-1"))[0]
	if afterUpstream == afterSpec {
		t.Errorf("the upstream revision changed, yet the target was not rendered again")
	}

	other := target{template: tpl, repoDefault: "eu-1", packageDefault: "app",
		object: &celtemplate.Object{Name: "eu-1", Namespace: "ns", Labels: map[string]string{"deployTo": "eu-1"}}}
	sync(other)
	if s := all.of(r.pvs, r.upstream); len(s.targets) != 1 || s.targets[keyOf(other)] == nil {
		t.Errorf("renders kept after a sync without site-1: %v, want only eu-1's", s.targets)
	}
	if again := sync(site("2", "us-1"))[0]; again == afterUpstream {
		t.Errorf("a target dropped by a sync came back with its old render")
	}
}

// TestRenderedComparesEachVariantVersionOnce: the comparison of a
// variant's spec with the rendered one is remembered for the variant's
// generation, and made again when its spec changes (a status write does
// not change it).
func TestRenderedComparesEachVariantVersionOnce(t *testing.T) {
	spec := &configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
		Downstream: &configv1alpha1.Downstream{Repo: "edge-1", Package: "app"},
		Labels:     map[string]string{"tier": "gold"},
	}
	e := &rendered{spec: spec}
	pv := variantOf("ns", "s-edge-1-app", "s", "uid-s")
	pv.ResourceVersion, pv.Generation = "1", 1
	pv.Spec = *spec.DeepCopy()
	if !e.specOf(pv) {
		t.Fatal("the variant carries the rendered spec, yet it compares unequal")
	}
	statusWritten := pv.DeepCopy()
	statusWritten.ResourceVersion = "2"
	if !e.specOf(statusWritten) {
		t.Error("only the status changed, yet the spec compares unequal")
	}
	edited := pv.DeepCopy()
	edited.ResourceVersion, edited.Generation = "3", 2
	edited.Spec.Labels = nil
	if e.specOf(edited) {
		t.Error("the variant changed to another spec, yet the remembered comparison was used")
	}
	if !e.specOf(pv) {
		t.Error("back at the rendered spec, yet it compares unequal")
	}
}

// TestSyncStoppedByTheBudgetKeepsNoRenders: a sync that the CEL budget
// stops keeps none of the targets it rendered, so the next sync renders
// the whole set again and stops again (it does not get through on what the
// first one kept).
func TestSyncStoppedByTheBudgetKeepsNoRenders(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	names := []string{"edge-1", "edge-2", "edge-3"}
	tg := byName(names...)
	// Every target must cost the same: a macro such as exists() stops at
	// the first match in a map whose order is random, so its cost varies.
	tg.Template = &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{
		{Key: ptr.To("region"), ValueExpr: ptr.To("'region' in repository.labels ? repository.labels['region'] + repository.labels['tier'] : 'none'")},
	}}
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, tg)
	f.sets = append(f.sets, s)
	f.Objects = append(f.Objects, s)
	for _, n := range names {
		f.repos = append(f.repos, repository("ns", n, map[string]string{"region": "eu", "tier": "gold"}))
	}
	f.revisions = append(f.revisions, publishedUpstream())
	c, _ := f.newController(ctx)

	// What one target costs, measured on its own (eu-1 has the labels of
	// the edges).
	r := testRenderer(tg.Template)
	if _, err := r.render(target{template: tg.Template, repoDefault: "eu-1", packageDefault: "app"}); err != nil {
		t.Fatal(err)
	}
	perTarget := r.budget.Spent()
	if perTarget == 0 {
		t.Fatal("rendering a target spent nothing: the budget cannot be set between two and three targets")
	}
	c.celBudget = 2*perTarget + perTarget/2
	for i := range 2 {
		if err := c.sync(ctx, cache.ObjectName{Namespace: "ns", Name: "s"}); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
		if diff := cmp.Diff([]string(nil), variantWrites(f.Client.Actions())); diff != "" {
			t.Fatalf("sync %d: PackageVariant writes (-want +got):\n%s", i+1, diff)
		}
		got, err := f.Client.ConfigV1alpha2().PackageVariantSets("ns").Get(ctx, "s", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cond := meta.FindStatusCondition(got.Status.Conditions, ConditionStalled); cond == nil || cond.Reason != ReasonCostBudgetExceeded {
			t.Fatalf("sync %d: Stalled %+v, want %s", i+1, cond, ReasonCostBudgetExceeded)
		}
	}
}
