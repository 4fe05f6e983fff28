package packagevariant

import (
	"testing"

	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// TestExpectationsComeFirst checks that a variant waiting for the draft it
// created to reach the cache asks nothing of the API server and writes
// nothing, not even the release of a revision its earlier downstream left
// behind: the expectations are checked first, in memory, as ReplicaSet's
// are, and the claim step follows once they are satisfied.
func TestExpectationsComeFirst(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	left := revision("ns", "deploy", "old", "packagevariant-1", pv)
	f := newFixture(t)
	f.pvs = []*configv1alpha1.PackageVariant{pv}
	f.revs = []*porchv1alpha1.PackageRevision{upstreamRev("v1", 1, porchv1alpha1.PackageRevisionLifecyclePublished), left}
	f.Objects = append(f.Objects, pv, left)
	c, _ := f.newController(ctx)
	c.expectDraft(pv.UID, "deploy.app.packagevariant-1")

	err := c.reconcile(ctx, pv.DeepCopy())
	if !workloop.IsRetryAfter(err) {
		t.Fatalf("reconcile = %v, want a recheck while the created draft is not in the cache", err)
	}
	if actions := f.Client.Actions(); len(actions) != 0 {
		t.Errorf("a variant waiting for its draft must make no API call, got %v", actions)
	}

	// Once the cache shows the draft, the claim step releases what the
	// earlier downstream left.
	// (What the sync does after the claim step is other tests' concern.)
	c.expectations.Observed(pv.UID, "deploy.app.packagevariant-1")
	_ = c.reconcile(ctx, pv.DeepCopy())
	released := false
	for _, a := range f.WriteActions() {
		if a.GetResource().Resource == "packagerevisions" && a.GetVerb() == "delete" {
			released = true
		}
	}
	if !released {
		t.Errorf("the revision left in deploy/old was not released once the expectation was satisfied; writes: %v", f.WriteActions())
	}
}
