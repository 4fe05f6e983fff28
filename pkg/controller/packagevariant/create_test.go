package packagevariant

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func TestCreateDraft(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "team/app"})
	pv.Spec.Labels = map[string]string{"team": "a"}
	pv.Spec.Annotations = map[string]string{"note": "made by pv"}
	published := revision("ns", "deploy", "team/app", "v9", nil)
	published.Spec.Lifecycle, published.Spec.Revision = porchv1alpha1.PackageRevisionLifecyclePublished, 9
	existing := []*porchv1alpha1.PackageRevision{
		revision("ns", "deploy", "team/app", "packagevariant-4", pv),
		published,
	}
	const wantName = "deploy.team.app.packagevariant-5"
	wantDraft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: wantName, Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{ownerReference(pv)},
			Labels:          map[string]string{"team": "a"},
			Annotations:     map[string]string{"note": "made by pv", porchv1alpha1.PushOnRenderFailureAnnotation: "true"},
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: "team/app", RepositoryName: "deploy", WorkspaceName: "packagevariant-5",
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:     []porchv1alpha1.Task{editTask(published)},
		},
	}

	cases := map[string]struct {
		reason      string
		objects     []runtime.Object
		wantErr     error
		wantCreated bool
	}{
		"Created": {
			reason:      "the draft gets Porch's name, the next workspace, the owner reference, labels, annotations (with push-on-render-failure) and the task",
			wantCreated: true,
		},
		"AlreadyExists": {
			reason: "a draft with the same name (an earlier create whose response was lost) is waited for, never made twice",
			objects: []runtime.Object{&porchv1alpha1.PackageRevision{
				ObjectMeta: metav1.ObjectMeta{Name: wantName, Namespace: "ns"},
			}},
			wantErr: errDraftPending,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			f.Objects = tc.objects
			c, _ := f.newController(ctx)
			created, err := c.createDraft(ctx, pv, existing, editTask(published), "edit of "+published.Name)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("%s: createDraft error = %v, want %v", tc.reason, err, tc.wantErr)
			}
			if (created != nil) != tc.wantCreated {
				t.Errorf("%s: createDraft returned draft %v, want one: %v", tc.reason, created, tc.wantCreated)
			}
			actions := f.WriteActions()
			if len(actions) != 1 || actions[0].GetVerb() != "create" {
				t.Fatalf("%s: want exactly one create, got %v", tc.reason, actions)
			}
			sent := actions[0].(core.CreateAction).GetObject().(*porchv1alpha1.PackageRevision).DeepCopy()
			if sent.Annotations[configv1alpha1.DraftIDAnnotation] == "" {
				t.Errorf("%s: the draft sent to Porch has no %s annotation", tc.reason, configv1alpha1.DraftIDAnnotation)
			}
			delete(sent.Annotations, configv1alpha1.DraftIDAnnotation)
			if diff := cmp.Diff(wantDraft, sent); diff != "" {
				t.Errorf("%s: draft sent to Porch (-want +got):\n%s", tc.reason, diff)
			}
			// Either way the variant now waits for the draft to reach the cache.
			if got, _ := c.expectations.Waiting(pv.UID, func(string) bool { return false }); got != wantName {
				t.Errorf("%s: expectation = %q, want %q", tc.reason, got, wantName)
			}
		})
	}
}

// TestCreateDraftBesideAnotherOpenDraft: a package has one open draft at a
// time; createDraft makes none beside a Draft or Proposed revision the
// variant does not control, and says which and whose.
func TestCreateDraftBesideAnotherOpenDraft(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	other := variant("ns", "old-pv", "uid-0", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	published := revision("ns", "deploy", "app", "v1", pv)
	published.Spec.Lifecycle, published.Spec.Revision = porchv1alpha1.PackageRevisionLifecyclePublished, 1
	proposed := revision("ns", "deploy", "app", "by-hand", nil)
	proposed.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	cases := map[string]struct {
		reason string
		revs   []*porchv1alpha1.PackageRevision
		want   []string // in the message; none: a draft is made
	}{
		"OwnDraft":          {reason: "the variant's own open draft is its callers' business", revs: []*porchv1alpha1.PackageRevision{published, revision("ns", "deploy", "app", "packagevariant-2", pv)}},
		"OtherVariantDraft": {reason: "another variant's draft blocks", revs: []*porchv1alpha1.PackageRevision{published, revision("ns", "deploy", "app", "packagevariant-2", other)}, want: []string{"deploy.app.packagevariant-2 (Draft)", "controlled by PackageVariant old-pv", "adoptionPolicy: adoptExisting"}},
		"UnownedProposed":   {reason: "a Proposed revision nobody controls blocks", revs: []*porchv1alpha1.PackageRevision{published, proposed}, want: []string{"deploy.app.by-hand (Proposed)", "no second draft"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t)
			c, _ := f.newController(ctx)
			_, err := c.createDraft(ctx, pv, tc.revs, editTask(published), "edit")
			var open *otherDraftOpen
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("%s: createDraft error = %v", tc.reason, err)
				}
				return
			}
			if !errors.As(err, &open) {
				t.Fatalf("%s: createDraft error = %v, want an otherDraftOpen", tc.reason, err)
			}
			mustContain(t, "message", err.Error(), tc.want...)
			if actions := f.WriteActions(); len(actions) != 0 {
				t.Errorf("%s: writes %v, want none", tc.reason, actions)
			}
		})
	}
}

// TestCreateDraftDoesNotShareMaps guards the rule that labels set on a
// draft are a copy: a later change of the draft's labels must not change the
// variant held by the informer cache.
func TestCreateDraftDoesNotShareMaps(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	pv.Spec.Labels = map[string]string{"team": "a"}
	f := newFixture(t)
	c, _ := f.newController(ctx)
	if _, err := c.createDraft(ctx, pv, nil, cloneTask(upstreamRev("v1", 1, porchv1alpha1.PackageRevisionLifecyclePublished)), "test"); err != nil {
		t.Fatal(err)
	}
	sent := f.WriteActions()[0].(core.CreateAction).GetObject().(*porchv1alpha1.PackageRevision)
	sent.Labels["team"] = "changed"
	if diff := cmp.Diff(map[string]string{"team": "a"}, pv.Spec.Labels); diff != "" {
		t.Errorf("variant labels changed through the draft (-want +got):\n%s", diff)
	}
	if got := copyMap(map[string]string{}); got != nil {
		t.Errorf("copyMap of an empty map = %v, want nil so the field is omitted", got)
	}
}

// TestRoutineForASet: only the clone that starts a set's variant goes
// without an event; every other draft, and a hand-written variant's
// first, is recorded.
func TestRoutineForASet(t *testing.T) {
	published := revision("ns", "deploy", "app", "v1", nil)
	handWritten := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	ofASet := handWritten.DeepCopy()
	ofASet.OwnerReferences = []metav1.OwnerReference{{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "fleet", UID: "set-1", Controller: ptr.To(true)}}
	ownedNotControlled := handWritten.DeepCopy()
	ownedNotControlled.OwnerReferences = []metav1.OwnerReference{{APIVersion: "config.porch.kpt.dev/v1alpha2", Kind: "PackageVariantSet", Name: "fleet", UID: "set-1"}}
	cases := map[string]struct {
		pv   *configv1alpha1.PackageVariant
		task porchv1alpha1.Task
		want bool
	}{
		"set's variant, first clone":          {ofASet, cloneTask(published), true},
		"set's variant, edit":                 {ofASet, editTask(published), false},
		"set's variant, upgrade":              {ofASet, upgradeTask(published, published, published), false},
		"hand-written variant, first clone":   {handWritten, cloneTask(published), false},
		"owned by a set it is not controlled": {ownedNotControlled, cloneTask(published), false},
	}
	for name, tc := range cases {
		if got := routineForASet(tc.pv, tc.task); got != tc.want {
			t.Errorf("%s: routineForASet = %t, want %t", name, got, tc.want)
		}
	}
}

// TestDescribes: a record is of a draft by name and, when both carry one,
// by draft id. Records and drafts from before draft ids (a live fleet
// upgraded) match by name; an id that is not the draft's (the draft made
// again, or a value a person wrote) matches nothing.
func TestDescribes(t *testing.T) {
	draft := func(id string) *porchv1alpha1.PackageRevision {
		pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "deploy.app.packagevariant-1"}}
		if id != "" {
			pr.Annotations = map[string]string{configv1alpha1.DraftIDAnnotation: id}
		}
		return pr
	}
	record := func(name, id string) *configv1alpha1.AppliedState {
		return &configv1alpha1.AppliedState{Downstream: name, DownstreamID: id, ResourcesDigest: "sha"}
	}
	cases := map[string]struct {
		a    *configv1alpha1.AppliedState
		pr   *porchv1alpha1.PackageRevision
		want bool
	}{
		"no record":                              {nil, draft("a"), false},
		"another draft's name":                   {record("deploy.app.packagevariant-2", "a"), draft("a"), false},
		"same name and id":                       {record("deploy.app.packagevariant-1", "a"), draft("a"), true},
		"same name, another id (made again)":     {record("deploy.app.packagevariant-1", "a"), draft("b"), false},
		"a record from before draft ids":         {record("deploy.app.packagevariant-1", ""), draft("b"), true},
		"a draft from before draft ids":          {record("deploy.app.packagevariant-1", ""), draft(""), true},
		"an id on the record, none on the draft": {record("deploy.app.packagevariant-1", "a"), draft(""), false},
		"a hostile id on the record":             {record("deploy.app.packagevariant-1", "<script>\n"), draft("a"), false},
	}
	for name, tc := range cases {
		if got := describes(tc.a, tc.pr); got != tc.want {
			t.Errorf("%s: describes = %v, want %v", name, got, tc.want)
		}
	}
}
