package packagevariantset

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
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// fixture follows kubernetes/sample-controller (test/kit/ctrlfixture):
// objects are loaded both into the fake clientset and into the informer
// indexers, the caches report synced, and the handlers and the sync handler
// are called directly.
type fixture struct {
	// Fixture is the fake clientset (with Objects) and informers, made by
	// newInformerController.
	ctrlfixture.Fixture
	sets     []*configv1alpha2.PackageVariantSet
	variants []*configv1alpha1.PackageVariant
	repos    []*configv1alpha1.Repository
	// revisions go into the PackageRevision indexer only.
	revisions []*porchv1alpha1.PackageRevision
	// opts are the controller's options.
	opts Options
}

func newFixture(t *testing.T) *fixture {
	return &fixture{Fixture: ctrlfixture.Fixture{T: t}}
}

// newInformerController builds the controller on a fresh fake clientset and
// informer factory and leaves the informers and their sync checks untouched.
func (f *fixture) newInformerController(ctx context.Context) (*Controller, informers.SharedInformerFactory) {
	c := ctrlfixture.Start(&f.Fixture, func() (*Controller, error) {
		factory := f.Factory
		return New(ctx, f.Client,
			factory.Config().V1alpha2().PackageVariantSets(),
			factory.Config().V1alpha1().PackageVariants(),
			factory.Config().V1alpha1().Repositories(),
			factory.Porch().V1alpha1().PackageRevisions(),
			nil, record.NewFakeRecorder(10), nil, f.opts)
	})
	return c, f.Factory
}

// newController builds the controller with the fixture's objects preloaded
// into the informer indexers and the caches reporting synced.
func (f *fixture) newController(ctx context.Context) (*Controller, informers.SharedInformerFactory) {
	c, factory := f.newInformerController(ctx)
	c.loop.Synced = []cache.InformerSynced{ctrlfixture.AlwaysReady}
	ctrlfixture.Index(f.T, factory.Config().V1alpha2().PackageVariantSets().Informer(), f.sets)
	ctrlfixture.Index(f.T, factory.Config().V1alpha1().PackageVariants().Informer(), f.variants)
	ctrlfixture.Index(f.T, factory.Config().V1alpha1().Repositories().Informer(), f.repos)
	ctrlfixture.Index(f.T, factory.Porch().V1alpha1().PackageRevisions().Informer(), f.revisions)
	return c, factory
}

func set(ns, name string, uid types.UID, upstream [2]string, targets ...configv1alpha2.Target) *configv1alpha2.PackageVariantSet {
	s := &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
		Spec:       configv1alpha2.PackageVariantSetSpec{Targets: targets},
	}
	if upstream != [2]string{} {
		s.Spec.Upstream = &configv1alpha1.Upstream{Repo: upstream[0], Package: upstream[1]}
	}
	return s
}

func byName(repos ...string) configv1alpha2.Target {
	var t configv1alpha2.Target
	for _, r := range repos {
		t.Repositories = append(t.Repositories, configv1alpha2.RepositoryTarget{Name: r})
	}
	return t
}

func bySelector(labels map[string]string) configv1alpha2.Target {
	return configv1alpha2.Target{RepositorySelector: &configv1alpha2.RepositorySelector{
		LabelSelector: metav1.LabelSelector{MatchLabels: labels},
	}}
}

func byObjects(kind string) configv1alpha2.Target {
	return configv1alpha2.Target{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "v1", Kind: kind}}
}

func withTemplate(t configv1alpha2.Target, d configv1alpha2.DownstreamTemplate) configv1alpha2.Target {
	t.Template = &configv1alpha2.PackageVariantTemplate{Downstream: &d}
	return t
}

// variantOf is a PackageVariant whose controller owner reference points at
// a PackageVariantSet with the given name and UID.
func variantOf(ns, name, setName string, setUID types.UID) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("pv-" + name),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: configv1alpha2.SchemeGroupVersion.String(), Kind: "PackageVariantSet",
				Name: setName, UID: setUID, Controller: ptr.To(true),
			}},
		},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Downstream: &configv1alpha1.Downstream{Repo: "edge-1", Package: "app"},
		},
	}
}

func repository(ns, name string, labels map[string]string) *configv1alpha1.Repository {
	return &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

func revision(ns, repo, pkg, ws string) *porchv1alpha1.PackageRevision {
	return ctrlfixture.Revision(ns, repo, pkg, ws, porchv1alpha1.PackageRevisionLifecyclePublished)
}

// publishedUpstream is revision 1 of blueprints/app, the upstream of the
// tests' sets.
func publishedUpstream() *porchv1alpha1.PackageRevision {
	upstream := revision("ns", "blueprints", "app", "v1")
	upstream.Spec.Revision = 1
	return upstream
}

func tombstone(t *testing.T, obj interface{}) cache.DeletedFinalStateUnknown {
	t.Helper()
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		t.Fatal(err)
	}
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}

func drain(c *Controller) []string { return ctrlfixture.Drain(c.queue) }

func TestIndexFuncs(t *testing.T) {
	cases := map[string]struct {
		obj          interface{}
		wantUpstream []string
		wantRepos    []string
	}{
		"not a PackageVariantSet": {
			obj: repository("ns", "edge-1", nil),
		},
		"no upstream and no targets": {
			obj: set("ns", "empty", "u", [2]string{}),
		},
		"upstream only": {
			obj:          set("ns", "s", "u", [2]string{"blueprints", "app"}),
			wantUpstream: []string{"ns/blueprints/app"},
		},
		"repositories by name, deduplicated across targets": {
			obj:          set("ns", "s", "u", [2]string{"blueprints", "app"}, byName("edge-1", "edge-2"), byName("edge-2", "edge-3")),
			wantUpstream: []string{"ns/blueprints/app"},
			wantRepos:    []string{"ns/edge-1", "ns/edge-2", "ns/edge-3"},
		},
		"repository selector matters for any repository": {
			obj:          set("ns", "s", "u", [2]string{"blueprints", "app"}, bySelector(map[string]string{"env": "prod"})),
			wantUpstream: []string{"ns/blueprints/app"},
			wantRepos:    []string{"ns/*"},
		},
		"object selector matters for any repository": {
			obj:       set("ns", "s", "u", [2]string{}, byObjects("ConfigMap")),
			wantRepos: []string{"ns/*"},
		},
		"repoExpr matters for any repository": {
			obj:       set("ns", "s", "u", [2]string{}, withTemplate(byName("edge-1"), configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("'edge-' + target.name")})),
			wantRepos: []string{"ns/edge-1", "ns/*"},
		},
		"fixed downstream repo in the template": {
			obj:       set("ns", "s", "u", [2]string{}, withTemplate(byName("edge-1"), configv1alpha2.DownstreamTemplate{Repo: ptr.To("mirror")})),
			wantRepos: []string{"ns/edge-1", "ns/mirror"},
		},
		"template with only a package override adds nothing": {
			obj:       set("ns", "s", "u", [2]string{}, withTemplate(byName("edge-1"), configv1alpha2.DownstreamTemplate{Package: ptr.To("renamed")})),
			wantRepos: []string{"ns/edge-1"},
		},
		"wildcard added once for many selecting targets": {
			obj: set("other", "s", "u", [2]string{"bp", "db"},
				bySelector(nil), byObjects("Namespace"), withTemplate(bySelector(nil), configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("x")})),
			wantUpstream: []string{"other/bp/db"},
			wantRepos:    []string{"other/*"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gotUp, err := upstreamIndexFunc(tc.obj)
			if err != nil {
				t.Fatalf("upstreamIndexFunc: %v", err)
			}
			if diff := cmp.Diff(tc.wantUpstream, gotUp); diff != "" {
				t.Errorf("upstream index keys (-want +got):\n%s", diff)
			}
			gotRepos, err := repositoryIndexFunc(tc.obj)
			if err != nil {
				t.Fatalf("repositoryIndexFunc: %v", err)
			}
			if diff := cmp.Diff(tc.wantRepos, gotRepos); diff != "" {
				t.Errorf("repository index keys (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEventsReachOnlyConcernedSets proves the mapping from an event of each
// watched kind to set keys, for the object itself and for the tombstone a
// missed delete leaves behind.
func TestEventsReachOnlyConcernedSets(t *testing.T) {
	byNameSet := set("ns", "by-name", "uid-by-name", [2]string{"blueprints", "app"}, byName("edge-1", "edge-2"))
	sets := []*configv1alpha2.PackageVariantSet{
		byNameSet,
		set("ns", "by-selector", "uid-by-selector", [2]string{"blueprints", "app"}, bySelector(map[string]string{"env": "prod"})),
		set("ns", "by-expr", "uid-by-expr", [2]string{"blueprints", "db"},
			withTemplate(bySelector(nil), configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("'edge-' + repository.name")})),
		set("ns", "names-core", "uid-names-core", [2]string{"blueprints", "web"}, byName("core")),
		set("ns", "no-upstream", "uid-no-upstream", [2]string{}, byName("core")),
		set("other", "by-name", "uid-other-by-name", [2]string{"blueprints", "app"}, byName("edge-1")),
		set("other", "by-selector", "uid-other-by-selector", [2]string{"blueprints", "app"}, bySelector(nil)),
	}

	notController := variantOf("ns", "pv-not-controller", "by-name", "uid-by-name")
	notController.OwnerReferences[0].Controller = nil
	oldVersion := variantOf("ns", "pv-old-version", "by-name", "uid-by-name")
	oldVersion.OwnerReferences[0].APIVersion = "config.porch.kpt.dev/v1alpha1"
	otherKind := variantOf("ns", "pv-other-kind", "by-name", "uid-by-name")
	otherKind.OwnerReferences[0].Kind = "PackageVariant"

	type handler func(c *Controller, logger klog.Logger, obj interface{})
	enqueueSet := func(c *Controller, _ klog.Logger, obj interface{}) { c.enqueueSet(obj) }
	handleVariant := func(c *Controller, l klog.Logger, obj interface{}) { c.handleVariant(l, obj, 0) }
	handleRepository := func(c *Controller, l klog.Logger, obj interface{}) { c.handleRepository(l, obj) }
	handlePackageRevision := func(c *Controller, l klog.Logger, obj interface{}) { c.handlePackageRevision(l, obj) }

	cases := map[string]struct {
		handle handler
		obj    interface{}
		want   []string
	}{
		"set event enqueues the set": {
			handle: enqueueSet, obj: byNameSet, want: []string{"ns/by-name"},
		},
		"set that is not in the cache yet is still enqueued": {
			handle: enqueueSet, obj: set("ns", "new", "uid-new", [2]string{}), want: []string{"ns/new"},
		},

		"variant controlled by a set enqueues it": {
			handle: handleVariant, obj: variantOf("ns", "pv", "by-name", "uid-by-name"), want: []string{"ns/by-name"},
		},
		"variant of a deleted and re-created set (other UID) enqueues nothing": {
			handle: handleVariant, obj: variantOf("ns", "pv", "by-name", "uid-of-a-deleted-set"),
		},
		"variant whose set is not in the cache enqueues nothing": {
			handle: handleVariant, obj: variantOf("ns", "pv", "gone", "uid-gone"),
		},
		"variant in another namespace does not reach a same-named set": {
			handle: handleVariant, obj: variantOf("other", "pv", "by-name", "uid-by-name"),
		},
		"variant with a non-controller owner reference enqueues nothing": {
			handle: handleVariant, obj: notController,
		},
		"variant owned by another API version enqueues nothing": {
			handle: handleVariant, obj: oldVersion,
		},
		"variant owned by another kind enqueues nothing": {
			handle: handleVariant, obj: otherKind,
		},
		"variant without owner enqueues nothing": {
			handle: handleVariant, obj: &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lonely"}},
		},

		"repository named by a set reaches it and the selecting sets": {
			handle: handleRepository, obj: repository("ns", "edge-1", map[string]string{"env": "prod"}),
			want: []string{"ns/by-expr", "ns/by-name", "ns/by-selector"},
		},
		"repository named by no set reaches only the selecting sets": {
			handle: handleRepository, obj: repository("ns", "fresh", map[string]string{"env": "dev"}),
			want: []string{"ns/by-expr", "ns/by-selector"},
		},
		"repository named by other sets reaches them, not sets naming other repos": {
			handle: handleRepository, obj: repository("ns", "core", nil),
			want: []string{"ns/by-expr", "ns/by-selector", "ns/names-core", "ns/no-upstream"},
		},
		"repository in another namespace reaches only that namespace": {
			handle: handleRepository, obj: repository("other", "edge-2", nil),
			want: []string{"other/by-selector"},
		},
		"repository in a namespace without sets reaches nobody": {
			handle: handleRepository, obj: repository("empty", "edge-1", nil),
		},

		"upstream revision reaches the sets following that package": {
			handle: handlePackageRevision, obj: revision("ns", "blueprints", "app", "v1"),
			want: []string{"ns/by-name", "ns/by-selector"},
		},
		"upstream revision of another package reaches its followers only": {
			handle: handlePackageRevision, obj: revision("ns", "blueprints", "db", "v2"),
			want: []string{"ns/by-expr"},
		},
		"same package in another namespace reaches that namespace only": {
			handle: handlePackageRevision, obj: revision("other", "blueprints", "app", "v1"),
			want: []string{"other/by-name", "other/by-selector"},
		},
		"same package name in another repository reaches nobody": {
			handle: handlePackageRevision, obj: revision("ns", "edge-1", "app", "packagevariant-1"),
		},
		"unrelated package reaches nobody": {
			handle: handlePackageRevision, obj: revision("ns", "blueprints", "cache", "v1"),
		},
		"revision handler ignores other kinds": {
			handle: handlePackageRevision, obj: repository("ns", "blueprints", nil),
		},
	}
	for name, tc := range cases {
		for _, form := range []string{"object", "tombstone"} {
			t.Run(name+"/"+form, func(t *testing.T) {
				logger, ctx := ktesting.NewTestContext(t)
				f := newFixture(t)
				f.sets = sets
				c, _ := f.newController(ctx)
				obj := tc.obj
				if form == "tombstone" {
					obj = tombstone(t, obj)
				}
				tc.handle(c, logger, obj)
				if diff := cmp.Diff(tc.want, drain(c)); diff != "" {
					t.Errorf("queued keys (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestSyncMakesNoWrites: a set that is gone or being deleted costs nothing
// (its variants go by garbage collection).
func TestSyncMakesNoWrites(t *testing.T) {
	cases := map[string]struct {
		key      cache.ObjectName
		deleting bool
	}{
		"set being deleted": {key: cache.ObjectName{Namespace: "ns", Name: "s"}, deleting: true},
		"deleted set":       {key: cache.ObjectName{Namespace: "ns", Name: "gone"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1"))
			if tc.deleting {
				now := metav1.Now()
				s.DeletionTimestamp = &now
			}
			f.sets = append(f.sets, s)
			f.Objects = append(f.Objects, s)
			c, _ := f.newController(ctx)
			if err := c.sync(ctx, tc.key); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.WriteActions(); len(got) != 0 {
				t.Errorf("sync made API calls: %v", got)
			}
		})
	}
}

func TestRunFailsWhenCachesNeverSync(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	f := newFixture(t)
	c, _ := f.newController(ctx)
	c.loop.Synced = []cache.InformerSynced{func() bool { return false }}
	cancel()
	if err := c.Run(ctx, 1); err == nil {
		t.Fatal("Run returned no error although the caches never synced")
	}
	if !c.queue.ShuttingDown() {
		t.Error("Run left the queue running")
	}
}

// TestEventsReachTheSyncHandler runs the real informers on the fake
// clientset and the real worker loop: an event of each watched kind must
// arrive at the sync handler of the set it concerns. Each step targets sets
// no earlier step can still have queued, so a step only passes by its own
// event.
func TestEventsReachTheSyncHandler(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := newFixture(t)
	c, factory := f.newInformerController(ctx)
	if c.HasSynced() {
		t.Fatal("HasSynced is true before the informers started")
	}
	var synced <-chan cache.ObjectName
	c.loop.Sync, synced = ctrlfixture.Synced(1000)
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	stop := ctrlfixture.RunInBackground(t, cancel, func() error { return c.Run(ctx, 2) })
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache for %v never synced", typ)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return c.HasSynced(), nil
	}); err != nil {
		t.Fatalf("event handlers never synced: %v", err)
	}

	client := f.Client.ConfigV1alpha2()
	// (a) PackageVariantSet added.
	sets := []*configv1alpha2.PackageVariantSet{
		set("ns", "by-name", "uid-by-name", [2]string{"blueprints", "alpha"}, byName("edge-1")),
		set("ns", "by-selector", "uid-by-selector", [2]string{"blueprints", "beta"}, bySelector(map[string]string{"env": "prod"})),
		set("ns", "by-expr", "uid-by-expr", [2]string{"blueprints", "gamma"},
			withTemplate(byObjects("ConfigMap"), configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("target.name")})),
		set("ns", "follower", "uid-follower", [2]string{"blueprints", "app"}, byName("core")),
		set("ns", "owner", "uid-owner", [2]string{"blueprints", "delta"}, byName("core")),
		set("ns", "edited", "uid-edited", [2]string{"blueprints", "epsilon"}, byName("core")),
		set("ns", "adopter", "uid-adopter", [2]string{"blueprints", "zeta"}, byName("core")),
	}
	var keys []string
	for _, s := range sets {
		if _, err := client.PackageVariantSets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, s.Namespace+"/"+s.Name)
	}
	ctrlfixture.WaitForKeys(t, synced, "PackageVariantSets created", keys...)

	// (c) Repository created, then relabelled.
	repo := repository("ns", "edge-1", map[string]string{"env": "dev"})
	if _, err := f.Client.ConfigV1alpha1().Repositories("ns").Create(ctx, repo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "Repository created", "ns/by-name", "ns/by-selector", "ns/by-expr")
	repo.Labels = map[string]string{"env": "prod"}
	if _, err := f.Client.ConfigV1alpha1().Repositories("ns").Update(ctx, repo, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "Repository relabelled", "ns/by-name", "ns/by-selector", "ns/by-expr")

	// (d) PackageRevision of the upstream package.
	pr := revision("ns", "blueprints", "app", "v1")
	if _, err := f.Client.PorchV1alpha1().PackageRevisions("ns").Create(ctx, pr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "upstream PackageRevision created", "ns/follower")

	// (b) PackageVariant controlled by a set.
	pv := variantOf("ns", "owner-edge-1", "owner", "uid-owner")
	if _, err := f.Client.ConfigV1alpha1().PackageVariants("ns").Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "owned PackageVariant created", "ns/owner")

	// (b) PackageVariant handed over to another set: the update reaches
	// both the old and the new controller.
	pv.OwnerReferences[0].Name, pv.OwnerReferences[0].UID = "adopter", "uid-adopter"
	if _, err := f.Client.ConfigV1alpha1().PackageVariants("ns").Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "PackageVariant changed controller", "ns/owner", "ns/adopter")

	// (a) PackageVariantSet updated.
	edited := sets[5].DeepCopy()
	edited.Spec.Targets = append(edited.Spec.Targets, byName("edge-1"))
	if _, err := client.PackageVariantSets("ns").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctrlfixture.WaitForKeys(t, synced, "PackageVariantSet updated", "ns/edited")
	stop()
}

func TestSetAndObjectKindIndexFuncs(t *testing.T) {
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"})
	s.Spec.Targets = []configv1alpha2.Target{
		{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "infra.example.com/v1", Kind: "Site"}},
		{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "v1", Kind: "ConfigMap"}},
		{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "a/b/c", Kind: "Broken"}},
	}
	keys, _ := objectKindIndexFunc(s)
	if diff := cmp.Diff([]string{"ns/infra.example.com/Site", "ns//ConfigMap"}, keys); diff != "" {
		t.Errorf("object kind keys (-want +got):\n%s", diff)
	}
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v",
		Labels: map[string]string{configv1alpha2.SetLabel: "uid-s"}}}
	if keys, _ := setIndexFunc(pv); !cmp.Equal(keys, []string{"ns/uid-s"}) {
		t.Errorf("set keys %v", keys)
	}
	pv.Labels = nil
	if keys, _ := setIndexFunc(pv); keys != nil {
		t.Errorf("an unlabelled variant is indexed: %v", keys)
	}
}

// TestVariantUpdatesWakeTheSetOnlyWhenTheyMatter: spec, ownership and
// deletion changes wake the set at once; a readiness change later
// (batched); other status writes not at all.
func TestVariantUpdatesWakeTheSetOnlyWhenTheyMatter(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	s := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1"))
	f.sets = append(f.sets, s)
	c, _ := f.newController(ctx)
	isController := true
	base := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v", Generation: 1,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "s", UID: "uid-s", Controller: &isController}}}}
	specChanged := base.DeepCopy()
	specChanged.Generation = 2
	ready := base.DeepCopy()
	ready.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	otherStatus := base.DeepCopy()
	otherStatus.Status.ObservedGeneration = 1

	c.handleVariantUpdate(logger, base, otherStatus)
	if got := drain(c); len(got) != 0 {
		t.Errorf("a status write that is not readiness woke %v", got)
	}
	c.handleVariantUpdate(logger, base, specChanged)
	if diff := cmp.Diff([]string{"ns/s"}, drain(c)); diff != "" {
		t.Errorf("spec change (-want +got):\n%s", diff)
	}
	// The echo of the set's own update of the spec tells it nothing new;
	// the same change made by someone else wakes it.
	base.ResourceVersion, specChanged.ResourceVersion = "1", "2"
	c.variantWrites.Record("1", specChanged)
	c.handleVariantUpdate(logger, base, specChanged)
	if got := drain(c); len(got) != 0 {
		t.Errorf("the echo of the set's own update woke %v", got)
	}
	theirs := specChanged.DeepCopy()
	theirs.ResourceVersion = "3"
	c.handleVariantUpdate(logger, base, theirs)
	if diff := cmp.Diff([]string{"ns/s"}, drain(c)); diff != "" {
		t.Errorf("someone else's spec change (-want +got):\n%s", diff)
	}
	c.handleVariantUpdate(logger, base, ready)
	if got := c.queue.Len(); got != 0 {
		t.Errorf("a readiness change woke the set at once (%d queued)", got)
	}
}

// TestDeletedVariantWakesStalledSets: a set re-created while the variants
// of its predecessor (same name, another UID) still clean up is Stalled
// ("already exists and does not belong to this set"); when such a variant
// is deleted, the Stalled sets of its namespace are queued, other sets are
// not.
func TestDeletedVariantWakesStalledSets(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	recreated := set("ns", "s", "uid-new", [2]string{"blueprints", "app"}, byName("edge-1"))
	recreated.Status.Conditions = []metav1.Condition{{Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: ReasonValidationError,
		Message: "PackageVariant s-edge-1-app (for downstream edge-1/app) already exists and does not belong to this set; delete or rename it"}}
	healthy := set("ns", "healthy", "uid-healthy", [2]string{"blueprints", "app"}, byName("edge-2"))
	healthy.Status.Conditions = []metav1.Condition{{Type: ConditionStalled, Status: metav1.ConditionFalse, Reason: ReasonValid}}
	elsewhere := set("other", "s", "uid-other", [2]string{"blueprints", "app"}, byName("edge-1"))
	elsewhere.Status.Conditions = recreated.Status.Conditions
	f.sets = append(f.sets, recreated, healthy, elsewhere)
	c, _ := f.newController(ctx)
	logger := klog.FromContext(ctx)

	c.handleVariantDeleted(logger, variantOf("ns", "s-edge-1-app", "s", "uid-old"))
	if diff := cmp.Diff([]string{"ns/s"}, drain(c)); diff != "" {
		t.Errorf("queued after the old set's variant went (-want +got):\n%s", diff)
	}
	c.handleVariantDeleted(logger, tombstone(t, variantOf("ns", "s-edge-1-app", "s", "uid-old")))
	if diff := cmp.Diff([]string{"ns/s"}, drain(c)); diff != "" {
		t.Errorf("queued after a tombstone of it (-want +got):\n%s", diff)
	}
	// An update of the same variant does not concern the new set.
	c.handleVariant(logger, variantOf("ns", "s-edge-1-app", "s", "uid-old"), 0)
	if got := drain(c); len(got) != 0 {
		t.Errorf("an update of the old set's variant queued %v", got)
	}
}

// TestDeletedVariantWakesTheSetExpectingItsName: a set whose create of a
// variant was answered AlreadyExists by a variant of the same name owned by
// another (deleted) set waits for a variant that is not coming; when that
// one goes, the set's expectation is dropped and the set synced, so it
// creates its own. It used to report itself Reconciled with one variant
// short (the soak's "27 desired, 26 exist").
func TestDeletedVariantWakesTheSetExpectingItsName(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	recreated := set("ns", "s", "uid-new", [2]string{"blueprints", "app"}, byName("edge-1"))
	recreated.Status.Conditions = []metav1.Condition{{Type: ConditionStalled, Status: metav1.ConditionFalse, Reason: ReasonValid}}
	f.sets = append(f.sets, recreated)
	c, _ := f.newController(ctx)
	logger := klog.FromContext(ctx)
	c.expectations.Expect("uid-new", "s-edge-1-app")

	c.handleVariantDeleted(logger, variantOf("ns", "s-edge-1-app", "s", "uid-old"))
	if diff := cmp.Diff([]string{"ns/s"}, drain(c)); diff != "" {
		t.Errorf("queued after the old set's variant went (-want +got):\n%s", diff)
	}
	if c.expectations.Pending("uid-new", "s-edge-1-app") {
		t.Error("the set still expects the variant it never made")
	}
	// A deletion of the set's own variant settles its expectation the
	// usual way (and queues it once).
	c.expectations.Expect("uid-new", "s-edge-1-app")
	c.handleVariantDeleted(logger, variantOf("ns", "s-edge-1-app", "s", "uid-new"))
	if diff := cmp.Diff([]string{"ns/s"}, drain(c)); diff != "" {
		t.Errorf("queued after its own variant went (-want +got):\n%s", diff)
	}
}
