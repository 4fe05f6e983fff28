package packagevariantset

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// apiCalls are the API calls the actions make, other than the informers'
// lists and watches, as "<verb> <resource> <name>".
func apiCalls(actions []core.Action) []string {
	var out []string
	for _, a := range ctrlfixture.WriteActions(actions) {
		name := ""
		switch a := a.(type) {
		case interface{ GetName() string }:
			name = a.GetName()
		case interface{ GetObject() runtime.Object }:
			if m, err := meta.Accessor(a.GetObject()); err == nil {
				name = m.GetName()
			}
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	return out
}

// events drains the events the fake recorder holds.
func events(r record.EventRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.(*record.FakeRecorder).Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestManageVariants: the writes of one sync, what it reports having done,
// and the events a user sees on the set.
func TestManageVariants(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("try later")
	failOn := func(verb, resource string) func(*fake.Clientset) {
		return func(client *fake.Clientset) {
			client.PrependReactor(verb, resource, func(core.Action) (bool, runtime.Object, error) { return true, nil, unavailable })
		}
	}
	// The writes of a sync that updates edge-1's variant, creates edge-2's
	// (after reading the set live) and deletes the stale one.
	everyWrite := []string{
		"update packagevariants s-edge-1-app",
		"get packagevariantsets s",
		"create packagevariants s-edge-2-app",
		"delete packagevariants s-old-app",
	}
	type result struct {
		Created, Updated, Deleted int
		WriteErrs                 []string
	}
	cases := map[string]struct {
		reason       string
		renderFailed bool
		setGone      bool
		taken        bool
		alsoCreate   string
		pending      bool
		failing      []func(*fake.Clientset)
		wantCalls    []string
		want         result
		wantErr      string
		wantSetGoing bool
		wantEvents   []string
		// wantExpecting: the set waits for s-edge-2-app to show in the
		// cache rather than create it again.
		wantExpecting bool
	}{
		"CreatesUpdatesAndDeletes": {
			reason:    "updates and creates in target order, the set read live before the first create, then the stale variant deleted",
			wantCalls: everyWrite,
			want:      result{Created: 1, Updated: 1, Deleted: 1},
			wantEvents: []string{
				"Normal Deleted Deleted PackageVariant s-old-app: no target renders downstream edge-9/app any more",
				"Normal Created Created 1 PackageVariant(s)",
			},
			wantExpecting: true,
		},
		"OneLiveReadForManyCreates": {
			reason:     "the set is read live once per sync that creates, however many it creates",
			alsoCreate: "s-edge-3-app",
			wantCalls: []string{
				"update packagevariants s-edge-1-app",
				"get packagevariantsets s",
				"create packagevariants s-edge-2-app",
				"create packagevariants s-edge-3-app",
				"delete packagevariants s-old-app",
			},
			want: result{Created: 2, Updated: 1, Deleted: 1},
			wantEvents: []string{
				"Normal Deleted Deleted PackageVariant s-old-app: no target renders downstream edge-9/app any more",
				"Normal Created Created 2 PackageVariant(s)",
			},
			wantExpecting: true,
		},
		"NothingDeletedWhileATargetFails": {
			reason:       "a target without a valid spec may be a stale-looking variant's own",
			renderFailed: true,
			wantCalls: []string{
				"update packagevariants s-edge-1-app",
				"get packagevariantsets s",
				"create packagevariants s-edge-2-app",
			},
			want:          result{Created: 1, Updated: 1},
			wantEvents:    []string{"Normal Created Created 1 PackageVariant(s)"},
			wantExpecting: true,
		},
		"FailedWritesDoNotStopTheOthers": {
			reason:    "each failed write is reported and the others go ahead",
			failing:   []func(*fake.Clientset){failOn("update", "packagevariants"), failOn("delete", "packagevariants")},
			wantCalls: everyWrite,
			want: result{Created: 1, WriteErrs: []string{
				"update PackageVariant s-edge-1-app: try later",
				"delete stale PackageVariant s-old-app: try later",
			}},
			wantEvents:    []string{"Normal Created Created 1 PackageVariant(s)"},
			wantExpecting: true,
		},
		"FailedCreateIsNotExpected": {
			reason:     "a create the API server refused is reported and left for the next sync to send again",
			failing:    []func(*fake.Clientset){failOn("create", "packagevariants")},
			wantCalls:  everyWrite,
			want:       result{Updated: 1, Deleted: 1, WriteErrs: []string{"create PackageVariant s-edge-2-app: try later"}},
			wantEvents: []string{"Normal Deleted Deleted PackageVariant s-old-app: no target renders downstream edge-9/app any more"},
		},
		"PendingCreateIsNotSentAgain": {
			reason:        "a variant an earlier sync created and the cache does not show yet is neither created nor worth a live read",
			pending:       true,
			wantCalls:     []string{"update packagevariants s-edge-1-app", "delete packagevariants s-old-app"},
			want:          result{Updated: 1, Deleted: 1},
			wantEvents:    []string{"Normal Deleted Deleted PackageVariant s-old-app: no target renders downstream edge-9/app any more"},
			wantExpecting: true,
		},
		"AlreadyExistsIsNotCounted": {
			reason:        "a create answered AlreadyExists made nothing new and is no error",
			taken:         true,
			wantCalls:     everyWrite,
			want:          result{Updated: 1, Deleted: 1},
			wantEvents:    []string{"Normal Deleted Deleted PackageVariant s-old-app: no target renders downstream edge-9/app any more"},
			wantExpecting: true,
		},
		"LiveReadFailureStopsTheWrites": {
			reason:    "without knowing the set is live nothing is created, and nothing after it written",
			failing:   []func(*fake.Clientset){failOn("get", "packagevariantsets")},
			wantCalls: []string{"update packagevariants s-edge-1-app", "get packagevariantsets s"},
			want:      result{Updated: 1},
			wantErr:   "read PackageVariantSet ns/s before creating variants: try later",
		},
		"SetGone": {
			reason:       "a set the API server no longer has gets no variant",
			setGone:      true,
			wantCalls:    []string{"update packagevariants s-edge-1-app", "get packagevariantsets s"},
			want:         result{Updated: 1},
			wantErr:      "the PackageVariantSet is being deleted: it is gone",
			wantSetGoing: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			pvs := set("ns", "s", "uid-s", [2]string{"blueprints", "app"}, byName("edge-1", "edge-2"))
			if !tc.setGone {
				f.Objects = append(f.Objects, pvs)
			}
			changed := variantOf("ns", "s-edge-1-app", "s", "uid-s")
			old := variantOf("ns", "s-old-app", "s", "uid-s")
			old.Spec.Downstream = &configv1alpha1.Downstream{Repo: "edge-9", Package: "app"}
			f.Objects = append(f.Objects, changed, old)
			if tc.taken {
				f.Objects = append(f.Objects, variantOf("ns", "s-edge-2-app", "s", "uid-s"))
			}
			c, _ := f.newController(ctx)
			for _, fail := range tc.failing {
				fail(f.Client)
			}
			if tc.pending {
				c.expectations.Expect("uid-s", "s-edge-2-app")
			}
			f.Client.ClearActions()
			newSpec := changed.Spec.DeepCopy()
			newSpec.Labels = map[string]string{"fleet": "edge"}
			created := variantOf("ns", "s-edge-2-app", "s", "uid-s").Spec
			created.Downstream.Repo = "edge-2"
			w := &wanted{
				changes: []change{
					{name: "s-edge-1-app", spec: newSpec, current: changed},
					{name: "s-edge-2-app", spec: &created},
				},
				stale:        []*configv1alpha1.PackageVariant{old},
				renderFailed: tc.renderFailed,
			}
			if tc.alsoCreate != "" {
				also := variantOf("ns", tc.alsoCreate, "s", "uid-s").Spec
				also.Downstream.Repo = "edge-3"
				w.changes = append(w.changes, change{name: tc.alsoCreate, spec: &also})
			}

			r, err := c.manageVariants(ctx, pvs, w)

			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("%s: error %q, want %q", tc.reason, gotErr, tc.wantErr)
			}
			if errors.Is(err, errSetGoing) != tc.wantSetGoing {
				t.Errorf("%s: errors.Is(%v, errSetGoing) = %v, want %v", tc.reason, err, !tc.wantSetGoing, tc.wantSetGoing)
			}
			if diff := cmp.Diff(tc.wantCalls, apiCalls(f.Client.Actions())); diff != "" {
				t.Errorf("%s: API calls (-want +got):\n%s", tc.reason, diff)
			}
			got := result{Created: r.created, Updated: r.updated, Deleted: r.deleted}
			for _, e := range r.writeErrs {
				got.WriteErrs = append(got.WriteErrs, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: result (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantEvents, events(c.recorder)); diff != "" {
				t.Errorf("%s: events (-want +got):\n%s", tc.reason, diff)
			}
			if got := c.expectations.Pending("uid-s", "s-edge-2-app"); got != tc.wantExpecting {
				t.Errorf("%s: expecting s-edge-2-app in the cache: %v, want %v", tc.reason, got, tc.wantExpecting)
			}
		})
	}
}
