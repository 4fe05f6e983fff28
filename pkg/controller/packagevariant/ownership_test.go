package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func TestOwnerReference(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	want := metav1.OwnerReference{
		APIVersion: "config.porch.kpt.dev/v1alpha1",
		Kind:       "PackageVariant",
		Name:       "pv",
		UID:        "uid-1",
		Controller: ptr.To(true),
	}
	got := ownerReference(pv)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownerReference (-want +got):\n%s", diff)
	}
	if !confighelper.IsVariantRef(got) {
		t.Errorf("the owner reference of a variant must be recognised as one by the event handlers and indexes")
	}
}

func TestWithoutOwner(t *testing.T) {
	ref := func(uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "X", Name: string(uid), UID: uid}
	}
	cases := map[string]struct {
		reason string
		refs   []metav1.OwnerReference
		uid    types.UID
		want   []metav1.OwnerReference
	}{
		"RemovesOnlyThatUID": {
			reason: "the other owners are kept, in order",
			refs:   []metav1.OwnerReference{ref("a"), ref("b"), ref("c")},
			uid:    "b",
			want:   []metav1.OwnerReference{ref("a"), ref("c")},
		},
		"RemovesDuplicates": {
			reason: "every reference with the UID goes",
			refs:   []metav1.OwnerReference{ref("b"), ref("a"), ref("b")},
			uid:    "b",
			want:   []metav1.OwnerReference{ref("a")},
		},
		"NotThere": {
			reason: "references without the UID are kept as they are",
			refs:   []metav1.OwnerReference{ref("a")},
			uid:    "b",
			want:   []metav1.OwnerReference{ref("a")},
		},
		"OnlyOwner": {
			reason: "removing the only owner leaves none (nil, so the field is omitted)",
			refs:   []metav1.OwnerReference{ref("b")},
			uid:    "b",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append([]metav1.OwnerReference{}, tc.refs...)
			if diff := cmp.Diff(tc.want, withoutOwner(tc.refs, tc.uid)); diff != "" {
				t.Errorf("%s: withoutOwner (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(before, tc.refs); diff != "" {
				t.Errorf("withoutOwner changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestOwnerHelpers(t *testing.T) {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	owned := revision("ns", "deploy", "app", "packagevariant-1", pv)
	notOwned := revision("ns", "deploy", "app", "packagevariant-2", nil)
	coOwned := revision("ns", "deploy", "app", "packagevariant-3", nil)
	coOwned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "X", Name: "pv", UID: "uid-1"}}

	type result struct {
		Controller types.UID
		HasOwner   bool
	}
	cases := map[string]struct {
		reason string
		pr     *porchv1alpha1.PackageRevision
		want   result
	}{
		"Controlled":    {reason: "the controller's UID is reported", pr: owned, want: result{Controller: "uid-1", HasOwner: true}},
		"NoOwner":       {reason: "no controller, no owner", pr: notOwned},
		"NotController": {reason: "an owner that is not the controller is an owner but not the controller", pr: coOwned, want: result{HasOwner: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := result{Controller: controllerUID(tc.pr), HasOwner: hasOwner(tc.pr, pv.UID)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAdopt(t *testing.T) {
	otherController := metav1.OwnerReference{APIVersion: configv1alpha1.SchemeGroupVersion.String(), Kind: "PackageVariant",
		Name: "other", UID: "uid-other", Controller: ptr.To(true)}
	bystander := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: "uid-cm", Controller: ptr.To(false)}

	newPV := func(policy configv1alpha1.AdoptionPolicy) *configv1alpha1.PackageVariant {
		pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
		pv.Spec.AdoptionPolicy = policy
		pv.Spec.Labels = map[string]string{"team": "a"}
		pv.Spec.Annotations = map[string]string{"note": "adopted"}
		return pv
	}
	orphanDraft := func() *porchv1alpha1.PackageRevision {
		pr := revision("ns", "deploy", "app", "hand-made", nil)
		pr.UID = "uid-hand-made"
		pr.Labels = map[string]string{"keep": "me", "team": "old"}
		pr.OwnerReferences = []metav1.OwnerReference{bystander}
		return pr
	}
	orphanPublished := func() *porchv1alpha1.PackageRevision {
		pr := revision("ns", "deploy", "app", "v1", nil)
		pr.UID = "uid-v1"
		pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
		pr.Spec.Revision = 1
		return pr
	}
	controlledByOther := func() *porchv1alpha1.PackageRevision {
		pr := revision("ns", "deploy", "app", "packagevariant-1", nil)
		pr.OwnerReferences = []metav1.OwnerReference{otherController}
		return pr
	}
	mainPlaceholder := func() *porchv1alpha1.PackageRevision {
		pr := revision("ns", "deploy", "app", "main", nil)
		pr.Spec.Revision = porchv1alpha1.PlaceholderRevision
		pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
		return pr
	}
	adopted := func(pr *porchv1alpha1.PackageRevision, pv *configv1alpha1.PackageVariant) *porchv1alpha1.PackageRevision {
		pr.OwnerReferences = append(pr.OwnerReferences, ownerReference(pv))
		if pr.Labels == nil {
			pr.Labels = map[string]string{}
		}
		pr.Labels["team"] = "a"
		pr.Annotations = map[string]string{"note": "adopted"}
		return pr
	}

	cases := map[string]struct {
		reason string
		policy configv1alpha1.AdoptionPolicy
		revs   []*porchv1alpha1.PackageRevision
		want   []*porchv1alpha1.PackageRevision // updates sent, in order
	}{
		"AdoptExisting": {
			reason: "uncontrolled revisions get our controller reference, other owners kept, and the variant's labels and annotations; one update each",
			policy: configv1alpha1.AdoptionPolicyAdoptExisting,
			revs:   []*porchv1alpha1.PackageRevision{orphanDraft(), orphanPublished()},
			want: []*porchv1alpha1.PackageRevision{
				adopted(orphanDraft(), newPV("")),
				adopted(orphanPublished(), newPV("")),
			},
		},
		"NeverTakeFromAnotherController": {
			reason: "a revision controlled by another variant is never adopted (no second controller reference); the placeholder is skipped",
			policy: configv1alpha1.AdoptionPolicyAdoptExisting,
			revs:   []*porchv1alpha1.PackageRevision{controlledByOther(), mainPlaceholder(), orphanDraft()},
			want:   []*porchv1alpha1.PackageRevision{adopted(orphanDraft(), newPV(""))},
		},
		"AlreadyOurs": {
			reason: "a revision the variant controls is left alone",
			policy: configv1alpha1.AdoptionPolicyAdoptExisting,
			revs:   []*porchv1alpha1.PackageRevision{revision("ns", "deploy", "app", "packagevariant-2", newPV(""))},
		},
		"AdoptNone": {
			reason: "adoptNone does nothing",
			policy: configv1alpha1.AdoptionPolicyAdoptNone,
			revs:   []*porchv1alpha1.PackageRevision{orphanDraft(), orphanPublished()},
		},
		"DefaultIsAdoptNone": {
			reason: "an empty policy is adoptNone",
			revs:   []*porchv1alpha1.PackageRevision{orphanDraft()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			pv := newPV(tc.policy)
			f := newFixture(t)
			f.pvs = []*configv1alpha1.PackageVariant{pv}
			f.revs = tc.revs
			f.Objects = []runtime.Object{pv}
			for _, pr := range tc.revs {
				f.Objects = append(f.Objects, pr)
			}
			c, _ := f.newController(ctx)
			before := make([]*porchv1alpha1.PackageRevision, len(tc.revs))
			for i, pr := range tc.revs {
				before[i] = pr.DeepCopy()
			}
			st := &state{pv: pv, dsRevs: append([]*porchv1alpha1.PackageRevision{}, tc.revs...)}
			if err := c.adopt(ctx, st); err != nil {
				t.Fatalf("adopt: %v", err)
			}
			var got []*porchv1alpha1.PackageRevision
			for _, a := range f.WriteActions() {
				u, ok := a.(core.UpdateAction)
				if !ok || a.GetResource().Resource != "packagerevisions" {
					t.Errorf("%s: unexpected API call %v", tc.reason, a)
					continue
				}
				got = append(got, u.GetObject().(*porchv1alpha1.PackageRevision))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: updates sent (-want +got):\n%s", tc.reason, diff)
			}
			// The sync continues with the adopted revisions, so it sees them as its own.
			for _, w := range tc.want {
				for _, pr := range st.dsRevs {
					if pr.Name == w.Name && controllerUID(pr) != pv.UID {
						t.Errorf("%s: state still holds %s without our controller reference", tc.reason, pr.Name)
					}
				}
			}
			if diff := cmp.Diff(before, tc.revs); diff != "" {
				t.Errorf("adopt modified the cached revisions (-before +after):\n%s", diff)
			}
		})
	}
}
