package packagevariantset

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/expectations"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// createdVariants are the names of the PackageVariants the actions create.
func createdVariants(actions []core.Action) []string {
	var names []string
	for _, a := range actions {
		if c, ok := a.(core.CreateAction); ok && a.GetResource().Resource == "packagevariants" {
			names = append(names, c.GetObject().(*configv1alpha1.PackageVariant).Name)
		}
	}
	return names
}

// TestSyncCreatesEachVariantOnce: while the cache does not show the
// variants a sync created, later syncs do not send their creates again; a
// create that failed is retried; a variant whose creation the cache has
// shown and that was deleted since is created again.
func TestSyncCreatesEachVariantOnce(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1", "edge-2"))
	f.sets = append(f.sets, s)
	f.repos = append(f.repos, repository("ns", "edge-1", nil), repository("ns", "edge-2", nil))
	f.Objects = append(f.Objects, s)
	f.revisions = append(f.revisions, publishedUpstream())
	c, _ := f.newController(ctx)
	failOnce := true
	f.Client.PrependReactor("create", "packagevariants", func(a core.Action) (bool, runtime.Object, error) {
		if a.(core.CreateAction).GetObject().(*configv1alpha1.PackageVariant).Name == "s-edge-2-app" && failOnce {
			failOnce = false
			return true, nil, apierrors.NewServiceUnavailable("try later")
		}
		return false, nil, nil
	})
	key := cache.ObjectName{Namespace: "ns", Name: "s"}
	sync := func(wantErr bool) []string {
		t.Helper()
		f.Client.ClearActions()
		// A sync that waits for its own variants to reach the cache asks
		// to be run again; that is not a failure.
		if err := c.sync(ctx, key); (err != nil && !workloop.IsRetryAfter(err)) != wantErr {
			t.Fatalf("sync: error %v, want error: %v", err, wantErr)
		}
		return createdVariants(f.Client.Actions())
	}

	if diff := cmp.Diff([]string{"s-edge-1-app", "s-edge-2-app"}, sync(true)); diff != "" {
		t.Errorf("first sync (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s-edge-2-app"}, sync(false)); diff != "" {
		t.Errorf("sync with a lagging cache: only the failed create is retried (-want +got):\n%s", diff)
	}
	if got := sync(false); len(got) != 0 {
		t.Errorf("sync with a lagging cache created %v again", got)
	}

	// The cache shows edge-1's variant being added and then deleted.
	pv, err := f.Client.ConfigV1alpha1().PackageVariants("ns").Get(ctx, "s-edge-1-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.handleVariant(logger, pv, 0)
	c.handleVariant(logger, tombstone(t, pv), 0)
	if err := f.Client.ConfigV1alpha1().PackageVariants("ns").Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s-edge-1-app"}, sync(false)); diff != "" {
		t.Errorf("after the deletion (-want +got):\n%s", diff)
	}
}

// TestOwnStatusWriteDoesNotWakeTheSet: the echo of one of the set's own
// last status writes is not a reason to sync again, even when it arrives
// before the write's answer or after the next write; anybody else's status, and a change of the spec,
// labels or annotations, are.
func TestOwnStatusWriteDoesNotWakeTheSet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1"))
	s.Generation, s.ResourceVersion = 1, "10"
	f.sets = append(f.sets, s)
	f.Objects = append(f.Objects, s)
	c, _ := f.newController(ctx)
	var echo *configv1alpha2.PackageVariantSet
	f.Client.PrependReactor("update", "packagevariantsets", func(a core.Action) (bool, runtime.Object, error) {
		obj := a.(core.UpdateAction).GetObject().(*configv1alpha2.PackageVariantSet).DeepCopy()
		obj.ResourceVersion = "11"
		// The informer hears of the write before its answer arrives.
		if c.ownStatusWrite(s, obj) {
			echo = obj
		}
		return true, obj, nil
	})
	// No upstream revision: the sync reports it in status, which it writes.
	if err := c.sync(ctx, cache.ObjectName{Namespace: "ns", Name: "s"}); err != nil {
		t.Fatal(err)
	}
	if echo == nil {
		t.Fatal("the echo of the status write, heard before its answer, was taken for somebody else's update")
	}
	// A second write follows before the first one's echo arrives.
	second := echo.Status.DeepCopy()
	second.ReadyVariants = 3
	c.recordStatusWrite(s.UID, second)
	foreign := echo.DeepCopy()
	foreign.ResourceVersion = "12"
	foreign.Status.ReadyVariants = 7
	specChanged := echo.DeepCopy()
	specChanged.Generation = 2
	annotated := echo.DeepCopy()
	annotated.Annotations = map[string]string{configv1alpha2.ApproveWaveAnnotation: "eu@abc"}
	cases := map[string]struct {
		reason string
		new    *configv1alpha2.PackageVariantSet
		want   bool
	}{
		"Echo":        {reason: "the set's own status write comes back after its next write", new: echo, want: true},
		"Foreign":     {reason: "somebody else wrote another status", new: foreign, want: false},
		"SpecChanged": {reason: "the written status with another generation is not the echo", new: specChanged, want: false},
		"Annotated":   {reason: "an annotation changed besides the status (a wave approved)", new: annotated, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.ownStatusWrite(s, tc.new); got != tc.want {
				t.Errorf("%s: ownStatusWrite = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

// TestSetGoingCreatesNothing: the cache still shows a set that the API
// server no longer has, marks for deletion, or has replaced by a new set of
// the same name; a sync that would create variants reads the set live
// first and creates nothing, writes no status and reports no error. The
// set the cache shows, still live, gets its variants.
func TestSetGoingCreatesNothing(t *testing.T) {
	now := metav1.Now()
	for name, live := range map[string]func(s *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet{
		"gone": func(*configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet { return nil },
		"marked for deletion": func(s *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet {
			d := s.DeepCopy()
			d.DeletionTimestamp = &now
			d.Finalizers = []string{"example.com/hold"}
			return d
		},
		"replaced": func(s *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet {
			d := s.DeepCopy()
			d.UID = "uid-new"
			return d
		},
		"live": func(s *configv1alpha2.PackageVariantSet) *configv1alpha2.PackageVariantSet { return s },
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1"))
			f.sets = append(f.sets, s)
			f.repos = append(f.repos, repository("ns", "edge-1", nil))
			if l := live(s); l != nil {
				f.Objects = append(f.Objects, l)
			}
			f.revisions = append(f.revisions, publishedUpstream())
			c, _ := f.newController(ctx)
			f.Client.ClearActions()
			if err := c.sync(ctx, cache.ObjectName{Namespace: "ns", Name: "s"}); err != nil {
				t.Fatalf("sync: %v", err)
			}
			created := createdVariants(f.Client.Actions())
			if name == "live" {
				if len(created) != 1 {
					t.Errorf("live set: created %v, want its one variant", created)
				}
				return
			}
			if len(created) != 0 {
				t.Errorf("created %v for a set that is %s", created, name)
			}
			for _, a := range f.WriteActions() {
				if a.GetVerb() != "get" {
					t.Errorf("wrote to a set that is %s: %s %s", name, a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

// TestExpectedVariantThatNeverComesIsCheckedLive: a create answered
// AlreadyExists by a variant of another owner (a deleted set of the same
// name, its variant still finishing) leaves the set expecting a variant of
// that name. When that variant goes before the cache ever showed it, no
// event tells the set: it must look again by itself, ask the server once
// it has waited expectations.CheckAfter, and create its own variant (the
// soak's seed 39: a set waited two minutes with 35 of its 37 variants).
func TestExpectedVariantThatNeverComesIsCheckedLive(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1"))
	f.sets = append(f.sets, s)
	f.repos = append(f.repos, repository("ns", "edge-1", nil))
	stranger := variantOf("ns", "s-edge-1-app", "s", "uid-old")
	f.Objects = append(f.Objects, s, stranger)
	f.revisions = append(f.revisions, publishedUpstream())
	c, _ := f.newController(ctx)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	c.expectations.Now = func() time.Time { return now }
	key := cache.ObjectName{Namespace: "ns", Name: "s"}
	sync := func() ([]string, error) {
		t.Helper()
		f.Client.ClearActions()
		err := c.sync(ctx, key)
		return createdVariants(f.Client.Actions()), err
	}

	if created, err := sync(); err != nil || len(created) != 1 {
		t.Fatalf("first sync: created %v (the create is answered AlreadyExists), error %v", created, err)
	}
	created, err := sync()
	if len(created) != 0 {
		t.Errorf("a sync while the expected variant may still reach the cache created %v", created)
	}
	if !workloop.IsRetryAfter(err) {
		t.Fatalf("a sync that waits for a variant it expects must ask to be run again (nothing else wakes it); got error %v", err)
	}

	// The stranger goes; the set's cache never showed it, so no event comes.
	if err := f.Client.ConfigV1alpha1().PackageVariants("ns").Delete(ctx, stranger.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(expectations.CheckAfter + time.Second)
	created, err = sync()
	if err != nil {
		t.Fatalf("sync after the check interval: %v", err)
	}
	if diff := cmp.Diff([]string{"s-edge-1-app"}, created); diff != "" {
		t.Errorf("after the stranger left, the set creates its own variant (-want +got):\n%s", diff)
	}
}

// TestBatchedWait: the readiness delay, or syncShare times the last sync
// when that is longer, bounded by maxBatchedWait unless the readiness
// delay is longer still. Unbounded, the sync that created a 10,000-variant
// fleet (about a second) held the next wake-up, and with it the set's
// counts, 56 to 107 s; behind a slow server, far longer.
func TestBatchedWait(t *testing.T) {
	for _, tc := range []struct {
		name              string
		delay, took, want time.Duration
	}{
		{"a sync that took no time", time.Second, 0, time.Second},
		{"a small fleet: the readiness delay is longer", time.Second, 5 * time.Millisecond, time.Second},
		{"a large fleet: syncShare times its sync", time.Second, 50 * time.Millisecond, 4 * time.Second},
		{"the sync that created a large fleet: bounded", time.Second, time.Second, maxBatchedWait},
		{"a sync behind a slow server: bounded", time.Second, 3 * time.Minute, maxBatchedWait},
		{"a readiness delay over the bound wins", 30 * time.Second, time.Second, 30 * time.Second},
	} {
		if got := batchedWait(tc.delay, tc.took); got != tc.want {
			t.Errorf("%s: batchedWait(%v, %v) = %v, want %v", tc.name, tc.delay, tc.took, got, tc.want)
		}
	}
}
