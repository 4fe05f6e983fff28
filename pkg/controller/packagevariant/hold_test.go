package packagevariant

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	configv1alpha2listers "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha2"
)

// TestRolloutSetOfClosesTheRace: the caches of sets and of revisions are
// fed by two watches in no order, so a revision published just after a set
// got spec.rollout can reach the variant controller first. A variant that
// follows the latest revision and would upgrade reads its set from the API
// server when the cache shows it without spec.rollout, once per set and
// upstream revision; every other variant costs no request.
func TestRolloutSetOfClosesTheRace(t *testing.T) {
	v2 := upstreamRev("v2", 2, porchv1alpha1.PackageRevisionLifecyclePublished)
	v3 := upstreamRev("v3", 3, porchv1alpha1.PackageRevisionLifecyclePublished)
	v4 := upstreamRev("v4", 4, porchv1alpha1.PackageRevisionLifecyclePublished)
	set := func(uid types.UID, rollout bool) *configv1alpha2.PackageVariantSet {
		s := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "edge", UID: uid}}
		if rollout {
			s.Spec.Rollout = &configv1alpha2.Rollout{}
		}
		return s
	}
	member := func(name string, edit func(*configv1alpha1.PackageVariant)) *configv1alpha1.PackageVariant {
		pv := variant("ns", name, types.UID("uid-"+name), [2]string{"blueprints", "app"}, [2]string{"deploy", name})
		pv.OwnerReferences = []metav1.OwnerReference{{APIVersion: configv1alpha2.SchemeGroupVersion.String(), Kind: "PackageVariantSet",
			Name: "edge", UID: "set-1", Controller: ptr.To(true)}}
		if edit != nil {
			edit(pv)
		}
		return pv
	}
	// on is the state of pv whose published downstream is based on base,
	// the latest upstream revision being latest.
	on := func(pv *configv1alpha1.PackageVariant, base string, latest *porchv1alpha1.PackageRevision) *state {
		pr := withLock(revision("ns", "deploy", pv.Spec.Downstream.Package, "v1", pv), "app/"+base)
		pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
		st := &state{pv: pv, upstream: latest, upRevs: []*porchv1alpha1.PackageRevision{v2, v3, v4}, dsRevs: []*porchv1alpha1.PackageRevision{pr}}
		st.classify()
		return st
	}
	type call struct {
		reason string
		st     *state
		want   string
	}
	cases := map[string]struct {
		cached, live *configv1alpha2.PackageVariantSet
		calls        []call
		wantGets     int
	}{
		"CacheShowsTheRollout": {
			cached: set("set-1", true), live: set("set-1", true),
			calls:    []call{{"the cache says enough", on(member("a", nil), "v2", v3), "edge"}},
			wantGets: 0,
		},
		"CacheBehind": {
			cached: set("set-1", false), live: set("set-1", true),
			calls: []call{
				{"the server shows the rollout the cache does not show yet", on(member("a", nil), "v2", v3), "edge"},
				{"and does so for every variant until the cache catches up", on(member("b", nil), "v2", v3), "edge"},
			},
			wantGets: 2,
		},
		"NoRollout": {
			cached: set("set-1", false), live: set("set-1", false),
			calls: []call{
				{"the server confirms there is no rollout", on(member("a", nil), "v2", v3), ""},
				{"once per set and upstream revision", on(member("b", nil), "v2", v3), ""},
				{"a newer revision is confirmed again", on(member("c", nil), "v3", v4), ""},
			},
			wantGets: 2,
		},
		"NothingToUpgrade": {
			cached: set("set-1", false), live: set("set-1", true),
			calls: []call{
				{"a variant on the latest revision takes nothing", on(member("a", nil), "v3", v3), ""},
				{"a pinned revision is the variant's own decision", on(member("b", func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.Revision = 3 }), "v2", v3), ""},
				{"Manual upgrades hold by themselves", on(member("c", func(pv *configv1alpha1.PackageVariant) {
					pv.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
				}), "v2", v3), ""},
				{"a variant of no set has no rollout", on(member("d", func(pv *configv1alpha1.PackageVariant) { pv.OwnerReferences = nil }), "v2", v3), ""},
			},
			wantGets: 0,
		},
		"SetGoneOrReplaced": {
			cached: set("set-1", false), live: set("set-2", true),
			calls:    []call{{"a set of the same name is not the variant's", on(member("a", nil), "v2", v3), ""}},
			wantGets: 1,
		},
		"SetDeleted": {
			cached:   set("set-1", false),
			calls:    []call{{"a deleted set holds nothing", on(member("a", nil), "v2", v3), ""}},
			wantGets: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewSimpleClientset()
			if tc.live != nil {
				client = fake.NewSimpleClientset(tc.live)
			}
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := indexer.Add(tc.cached); err != nil {
				t.Fatal(err)
			}
			c := &Controller{client: client, setLister: configv1alpha2listers.NewPackageVariantSetLister(indexer)}
			for _, call := range tc.calls {
				got, err := c.rolloutSetOf(ctx, call.st)
				if err != nil || got != call.want {
					t.Errorf("%s: %s: rolloutSetOf = %q, %v; want %q", call.st.pv.Name, call.reason, got, err, call.want)
				}
			}
			gets := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "get" && a.GetResource().Resource == "packagevariantsets" {
					gets++
				}
			}
			if gets != tc.wantGets {
				t.Errorf("%d GETs of the set, want %d", gets, tc.wantGets)
			}
		})
	}
}
