package packagevariant

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// targeting is a variant of deploy/app created minutes after epoch.
func targeting(name string, uid types.UID, minutes int) *configv1alpha1.PackageVariant {
	pv := variant("ns", name, uid, [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	pv.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(minutes) * time.Minute))
	return pv
}

func TestDownstreamWinner(t *testing.T) {
	older := targeting("older", "uid-older", 0)
	younger := targeting("younger", "uid-younger", 5)
	twinA := targeting("twin-a", "uid-a", 1)
	twinB := targeting("twin-b", "uid-b", 1)
	elsewhere := variant("ns", "elsewhere", "uid-elsewhere", [2]string{"blueprints", "app"}, [2]string{"deploy", "db"})
	otherNS := variant("other", "older", "uid-other-ns", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	otherNS.CreationTimestamp = metav1.NewTime(epoch.Add(-time.Hour))
	gone := targeting("gone", "uid-gone", -60)

	pvs := func(pvs ...*configv1alpha1.PackageVariant) []*configv1alpha1.PackageVariant { return pvs }
	revs := func(prs ...*porchv1alpha1.PackageRevision) []*porchv1alpha1.PackageRevision { return prs }
	olderWins := map[string]string{"older": "older", "younger": "older"}
	cases := map[string]struct {
		reason string
		pvs    []*configv1alpha1.PackageVariant
		revs   []*porchv1alpha1.PackageRevision
		want   map[string]string // variant -> winner it sees
	}{
		"SingleVariant": {"a variant alone on its downstream manages it",
			pvs(younger, elsewhere, otherNS), nil, map[string]string{"younger": "younger"}},
		"OldestWins": {"with no revision controlled by either, the older variant wins, seen the same from both sides",
			pvs(younger, older), revs(revision("ns", "deploy", "app", "v1", nil)), olderWins},
		"ControllerWins": {"the variant that already controls a revision keeps it, even when younger",
			pvs(younger, older), revs(revision("ns", "deploy", "app", "v1", nil), revision("ns", "deploy", "app", "packagevariant-1", younger)),
			map[string]string{"older": "younger", "younger": "younger"}},
		"ControllerOfAnotherPackageDoesNotCount": {"a revision the younger one controls elsewhere does not make it win here",
			pvs(younger, older), revs(revision("ns", "deploy", "db", "packagevariant-1", younger)), olderWins},
		"StaleControllerIgnored": {"a revision controlled by a variant that no longer targets the package (or is gone) does not decide",
			pvs(younger, older), revs(revision("ns", "deploy", "app", "packagevariant-1", gone)), olderWins},
		"TieByName": {"variants created in the same second are ordered by name",
			pvs(twinB, twinA), nil, map[string]string{"twin-a": "twin-a", "twin-b": "twin-a"}},
		"OtherNamespaceDoesNotCompete": {"a same-named downstream in another namespace is another package",
			pvs(younger, otherNS), nil, map[string]string{"younger": "younger"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			f.pvs = tc.pvs
			f.revs = tc.revs
			c, _ := f.newController(ctx)
			got := map[string]string{}
			for variantName := range tc.want {
				pv, err := c.pvLister.PackageVariants("ns").Get(variantName)
				if err != nil {
					t.Fatal(err)
				}
				got[variantName] = c.downstreamWinner(pv).Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: winner seen by each variant (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestConflictingVariantWritesNothing checks what the loser of
// downstreamWinner reports: a Conflict naming the winner, and no write.
func TestConflictingVariantWritesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	older := targeting("older", "uid-older", 0)
	younger := targeting("younger", "uid-younger", 5)
	f := newFixture(t)
	f.pvs = []*configv1alpha1.PackageVariant{older, younger}
	f.revs = []*porchv1alpha1.PackageRevision{upstreamRev("v1", 1, porchv1alpha1.PackageRevisionLifecyclePublished)}
	c, _ := f.newController(ctx)
	pv := younger.DeepCopy()
	if err := c.reconcile(ctx, pv); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	type cond struct {
		Type, Reason, Message string
		Status                metav1.ConditionStatus
	}
	msg := "downstream package deploy/app is managed by PackageVariant ns/older; this variant writes nothing until that one is deleted or this one targets another downstream"
	want := []cond{
		{ConditionConflict, ReasonConflict, msg, metav1.ConditionTrue},
		{ConditionStalled, ReasonConflict, msg, metav1.ConditionTrue},
		{ConditionReady, ReasonConflict, msg, metav1.ConditionFalse},
		{ConditionPublished, configv1alpha1.ReasonNotPublished, "another variant manages the downstream package: see the Conflict condition", metav1.ConditionFalse},
	}
	var got []cond
	for _, c := range pv.Status.Conditions {
		got = append(got, cond{c.Type, c.Reason, c.Message, c.Status})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if actions := f.WriteActions(); len(actions) != 0 {
		t.Errorf("the losing variant must write nothing, got %v", actions)
	}
}
