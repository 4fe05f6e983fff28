package packagevariant

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// fixture follows kubernetes/sample-controller (test/kit/ctrlfixture):
// objects are loaded both into the fake clientset and into the informer
// indexers, the caches report synced, and the sync handler is called
// directly.
type fixture struct {
	// Fixture is the fake clientset (with Objects) and informers, made by
	// newController.
	ctrlfixture.Fixture
	pvs  []*configv1alpha1.PackageVariant
	revs []*porchv1alpha1.PackageRevision
}

func newFixture(t *testing.T) *fixture {
	return &fixture{Fixture: ctrlfixture.Fixture{T: t}}
}

func (f *fixture) newController(ctx context.Context) (*Controller, informers.SharedInformerFactory) {
	c := ctrlfixture.Start(&f.Fixture, func() (*Controller, error) {
		return New(ctx, f.Client, f.Factory.Config().V1alpha1().PackageVariants(), f.Factory.Porch().V1alpha1().PackageRevisions(),
			nil, record.NewFakeRecorder(10), nil, Options{})
	})
	c.loop.Synced = []cache.InformerSynced{ctrlfixture.AlwaysReady}
	ctrlfixture.Index(f.T, f.Factory.Config().V1alpha1().PackageVariants().Informer(), f.pvs)
	ctrlfixture.Index(f.T, f.Factory.Porch().V1alpha1().PackageRevisions().Informer(), f.revs)
	return c, f.Factory
}

func variant(ns, name string, uid types.UID, upstream, downstream [2]string) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: upstream[0], Package: upstream[1]},
			Downstream: &configv1alpha1.Downstream{Repo: downstream[0], Package: downstream[1]},
		},
	}
}

func revision(ns, repo, pkg, ws string, owner *configv1alpha1.PackageVariant) *porchv1alpha1.PackageRevision {
	pr := ctrlfixture.Revision(ns, repo, pkg, ws, porchv1alpha1.PackageRevisionLifecycleDraft)
	if owner != nil {
		pr.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: configv1alpha1.SchemeGroupVersion.String(), Kind: "PackageVariant",
			Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
		}}
	}
	return pr
}

func TestSyncWritesOnlyWhatChanged(t *testing.T) {
	cases := map[string]struct {
		reason string
		key    cache.ObjectName
		want   []string
	}{
		"deleted variant": {
			reason: "a variant that is gone costs nothing",
			key:    cache.ObjectName{Namespace: "ns", Name: "gone"},
		},
		"new variant without upstream": {
			reason: "the finalizer is added and the missing upstream reported, once",
			key:    cache.ObjectName{Namespace: "ns", Name: "pv"},
			want:   []string{"update packagevariants", "update packagevariants/status"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
			f.pvs = append(f.pvs, pv)
			f.Objects = append(f.Objects, pv)
			c, _ := f.newController(ctx)
			if err := c.sync(ctx, tc.key); err != nil {
				t.Fatalf("sync: %v", err)
			}
			var got []string
			for _, a := range f.WriteActions() {
				r := a.GetResource().Resource
				if a.GetSubresource() != "" {
					r += "/" + a.GetSubresource()
				}
				got = append(got, a.GetVerb()+" "+r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: API writes (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPackageRevisionEventsReachOnlyConcernedVariants(t *testing.T) {
	owner := variant("ns", "owner", "uid-owner", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	follower := variant("ns", "follower", "uid-f", [2]string{"blueprints", "app"}, [2]string{"deploy-2", "app"})
	otherNS := variant("other", "follower", "uid-o", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	unrelated := variant("ns", "unrelated", "uid-u", [2]string{"blueprints", "db"}, [2]string{"deploy", "db"})
	stale := owner.DeepCopy()
	stale.UID = "uid-of-a-deleted-variant"

	cases := map[string]struct {
		pr   *porchv1alpha1.PackageRevision
		want []string
	}{
		"upstream revision wakes every variant following it in its namespace": {
			pr:   revision("ns", "blueprints", "app", "v2", nil),
			want: []string{"ns/follower", "ns/owner"},
		},
		"downstream revision wakes its controller and the variants targeting it": {
			pr:   revision("ns", "deploy", "app", "packagevariant-1", owner),
			want: []string{"ns/owner"},
		},
		"owner reference with another UID is ignored": {
			pr:   revision("ns", "deploy-3", "app", "packagevariant-1", stale),
			want: nil,
		},
		"unrelated package wakes nobody": {
			pr:   revision("ns", "blueprints", "web", "v1", nil),
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			f.pvs = []*configv1alpha1.PackageVariant{owner, follower, otherNS, unrelated}
			c, _ := f.newController(ctx)
			c.handlePackageRevision(logger, tc.pr)
			c.handlePackageRevision(logger, cache.DeletedFinalStateUnknown{Key: "x", Obj: tc.pr})
			if diff := cmp.Diff(tc.want, drain(c)); diff != "" {
				t.Errorf("queued keys (-want +got):\n%s", diff)
			}
		})
	}
}

func drain(c *Controller) []string { return ctrlfixture.Drain(c.queue) }

// TestEventsReachTheSyncHandler runs the real informers on the fake
// clientset and the real worker loop: an event for each watched kind must
// arrive at the sync handler.
func TestEventsReachTheSyncHandler(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := newFixture(t)
	c, factory := f.newController(ctx)
	c.loop.Synced = nil // wait for the real informers
	var synced <-chan cache.ObjectName
	c.loop.Sync, synced = ctrlfixture.Synced(100)
	factory.Start(ctx.Done())
	stop := ctrlfixture.RunInBackground(t, cancel, func() error { return c.Run(ctx, 2) })

	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	if _, err := f.Client.ConfigV1alpha1().PackageVariants("ns").Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "PackageVariant created", "ns/pv")

	// The informer must have the variant before a revision event can map to it.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := c.pvLister.PackageVariants("ns").Get("pv")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("variant never reached the cache: %v", err)
	}
	pr := revision("ns", "deploy", "app", "packagevariant-1", pv)
	if _, err := f.Client.PorchV1alpha1().PackageRevisions("ns").Create(ctx, pr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "owned PackageRevision created", "ns/pv")
	stop()
}

// TestVariantEventsWakeConflictingPeers: when a variant that shares a
// downstream appears, starts deleting, moves away or goes, the others
// targeting that downstream are synced to decide the conflict anew.
func TestVariantEventsWakeConflictingPeers(t *testing.T) {
	a := variant("ns", "a", "uid-a", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	b := variant("ns", "b", "uid-b", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	c3 := variant("ns", "c", "uid-c", [2]string{"blueprints", "app"}, [2]string{"deploy", "other"})
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	f.pvs = []*configv1alpha1.PackageVariant{a, b, c3}
	c, _ := f.newController(ctx)

	c.enqueuePeers(a)
	if diff := cmp.Diff([]string{"ns/b"}, drain(c)); diff != "" {
		t.Errorf("peers of a (-want +got):\n%s", diff)
	}
	c.enqueuePeers(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: c3})
	if got := drain(c); len(got) != 0 {
		t.Errorf("a variant with its own downstream woke %v", got)
	}

	deleting := a.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	moved := a.DeepCopy()
	moved.Spec.Downstream.Package = "moved"
	relabelled := a.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	for name, tc := range map[string]struct {
		newObj *configv1alpha1.PackageVariant
		want   bool
	}{
		"deletion starts":     {deleting, true},
		"downstream moves":    {moved, true},
		"unrelated change":    {relabelled, false},
		"status-only changes": {a.DeepCopy(), false},
	} {
		if got := peersMayCare(a, tc.newObj); got != tc.want {
			t.Errorf("%s: peersMayCare = %v, want %v", name, got, tc.want)
		}
	}
}
