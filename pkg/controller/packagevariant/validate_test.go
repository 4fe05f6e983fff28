package packagevariant

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// validVariant passes every check; each case breaks one thing.
func validVariant() *configv1alpha1.PackageVariant {
	pv := variant("ns", "pv", "uid-1", [2]string{"blueprints", "app"}, [2]string{"deploy", "app"})
	pv.Spec.AdoptionPolicy = configv1alpha1.AdoptionPolicyAdoptExisting
	pv.Spec.DeletionPolicy = configv1alpha1.DeletionPolicyOrphan
	pv.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
	pv.Spec.Upstream.Revision = 2
	pv.Spec.Upstream.WorkspaceName = "v2"
	pv.Spec.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}, RemoveKeys: []string{"old"}}
	pv.Spec.Injectors = []configv1alpha1.InjectionSelector{{Name: "settings"}}
	pv.Spec.Pipeline = &kptfilev1.Pipeline{
		Mutators:   []kptfilev1.Function{{Image: "gcr.io/kpt-fn/set-namespace:v0.4.1"}},
		Validators: []kptfilev1.Function{{Exec: "/bin/check"}},
	}
	return pv
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		reason string
		mutate func(pv *configv1alpha1.PackageVariant)
		want   []string
	}{
		"ValidVariant": {
			reason: "a variant using every field correctly has no problem",
			mutate: func(*configv1alpha1.PackageVariant) {},
		},
		"EmptyPoliciesMeanDefaults": {
			reason: "empty policies are the defaults, not errors",
			mutate: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.AdoptionPolicy, pv.Spec.DeletionPolicy, pv.Spec.UpgradePolicy = "", "", ""
			},
		},
		"MissingUpstream": {
			reason: "spec.upstream is required",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream = nil },
			want:   []string{"missing required field spec.upstream"},
		},
		"MissingUpstreamFields": {
			reason: "spec.upstream.repo and .package are required",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package = "", "" },
			want:   []string{"missing required field spec.upstream.repo", "missing required field spec.upstream.package"},
		},
		"MissingDownstream": {
			reason: "spec.downstream is required",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream = nil },
			want:   []string{"missing required field spec.downstream"},
		},
		"MissingDownstreamFields": {
			reason: "spec.downstream.repo and .package are required",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package = "", "" },
			want:   []string{"missing required field spec.downstream.repo", "missing required field spec.downstream.package"},
		},
		"BadAdoptionPolicy": {
			reason: "the reference controller's message for an unknown adoption policy",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.AdoptionPolicy = "adoptAll" },
			want:   []string{`spec.adoptionPolicy field can only be "adoptNone" or "adoptExisting"`},
		},
		"BadDeletionPolicy": {
			reason: "the reference controller's message for an unknown deletion policy",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.DeletionPolicy = "keep" },
			want:   []string{`spec.deletionPolicy can only be "orphan" or "delete"`},
		},
		"BadUpgradePolicy": {
			reason: "upgradePolicy values are case sensitive",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.UpgradePolicy = "manual" },
			want:   []string{`spec.upgradePolicy can only be "Automatic" or "Manual"`},
		},
		"ReservedPackageContextKeys": {
			reason: "name and package-path belong to kpt and Porch, in data and in removeKeys",
			mutate: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.PackageContext = &configv1alpha1.PackageContext{
					Data:       map[string]string{"name": "x", "package-path": "y", "env": "ok"},
					RemoveKeys: []string{"env", "package-path"},
				}
			},
			want: []string{
				`spec.packageContext.data[name]: Forbidden: must not contain the key "name": it is reserved for kpt and Porch`,
				`spec.packageContext.data[package-path]: Forbidden: must not contain the key "package-path": it is reserved for kpt and Porch`,
				`spec.packageContext.removeKeys[1]: Forbidden: must not contain the key "package-path": it is reserved for kpt and Porch`,
			},
		},
		"EmptyInjectorName": {
			reason: "an injector must name its object; blanks do not count",
			mutate: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Injectors = []configv1alpha1.InjectionSelector{{Name: "ok"}, {Name: ""}, {Name: "  "}}
			},
			want: []string{"spec.injectors[1].name must not be empty", "spec.injectors[2].name must not be empty"},
		},
		"NegativeRevision": {
			reason: "revision -1 is the placeholder, which cannot be cloned",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.Revision = -1 },
			want: []string{"spec.upstream.revision -1 is invalid: give a published revision number (1 or more), " +
				"or leave it out to follow the latest published revision; the placeholder revision -1 cannot be cloned"},
		},
		"PlaceholderWorkspace": {
			reason: "workspace main is the placeholder, which cannot be cloned",
			mutate: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.WorkspaceName = "main" },
			want: []string{`spec.upstream.workspaceName "main" is the placeholder revision that tracks a branch and cannot be cloned; ` +
				"name the workspace of a published revision, or leave it out to follow the latest published revision"},
		},
		"FunctionsWithoutImageOrExec": {
			reason: "every pipeline function needs an image or an exec, counted per list",
			mutate: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Pipeline = &kptfilev1.Pipeline{
					Mutators:   []kptfilev1.Function{{Image: "a"}, {Name: "no-image"}},
					Validators: []kptfilev1.Function{{ConfigPath: "fn.yaml"}},
				}
			},
			want: []string{
				"spec.pipeline.mutators[1]: image or exec is required",
				"spec.pipeline.validators[0]: image or exec is required",
			},
		},
		"AllProblemsTogether": {
			reason: "a person sees every problem at once, in a stable order",
			mutate: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Upstream.Package = ""
				pv.Spec.Upstream.Revision = -2
				pv.Spec.Downstream = nil
				pv.Spec.AdoptionPolicy = "x"
				pv.Spec.DeletionPolicy = "y"
				pv.Spec.UpgradePolicy = "z"
				pv.Spec.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"name": "n"}}
				pv.Spec.Injectors = []configv1alpha1.InjectionSelector{{}}
				pv.Spec.Pipeline = &kptfilev1.Pipeline{Validators: []kptfilev1.Function{{}}}
			},
			want: []string{
				"missing required field spec.upstream.package",
				"spec.upstream.revision -2 is invalid: give a published revision number (1 or more), " +
					"or leave it out to follow the latest published revision; the placeholder revision -1 cannot be cloned",
				"missing required field spec.downstream",
				`spec.adoptionPolicy field can only be "adoptNone" or "adoptExisting"`,
				`spec.deletionPolicy can only be "orphan" or "delete"`,
				`spec.upgradePolicy can only be "Automatic" or "Manual"`,
				`spec.packageContext.data[name]: Forbidden: must not contain the key "name": it is reserved for kpt and Porch`,
				"spec.injectors[0].name must not be empty",
				"spec.pipeline.validators[0]: image or exec is required",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := validVariant()
			tc.mutate(pv)
			if diff := cmp.Diff(tc.want, validate(pv)); diff != "" {
				t.Errorf("%s: validate() (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestInvalidVariantStalls checks that every problem reaches the Stalled
// condition, joined by "; ", and that a stale Conflict condition goes.
func TestInvalidVariantStalls(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	pv := validVariant()
	pv.Generation = 4
	pv.Spec.Downstream = nil
	pv.Spec.DeletionPolicy = "y"
	pv.Status.Conditions = []metav1.Condition{{Type: ConditionConflict, Status: metav1.ConditionTrue, Reason: ReasonConflict}}
	f := newFixture(t)
	c, _ := f.newController(ctx)
	if err := c.reconcile(ctx, pv); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	want := []metav1.Condition{
		{Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: ReasonValidationError, ObservedGeneration: 4,
			Message: `missing required field spec.downstream; spec.deletionPolicy can only be "orphan" or "delete"`},
		{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonError, ObservedGeneration: 4,
			Message: "invalid packagevariant object: fix the problems the Stalled condition lists"},
	}
	if diff := cmp.Diff(want, pv.Status.Conditions, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime"),
		cmpopts.SortSlices(func(a, b metav1.Condition) bool { return a.Type < b.Type })); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if meta.FindStatusCondition(pv.Status.Conditions, ConditionConflict) != nil {
		t.Errorf("an invalid variant must not keep a Conflict condition")
	}
	if got := writeActions(f.client.Actions()); len(got) != 0 {
		t.Errorf("an invalid variant must not touch any package; got %d API calls", len(got))
	}
}

func TestEffectivePolicies(t *testing.T) {
	type policies struct {
		Adoption configv1alpha1.AdoptionPolicy
		Deletion configv1alpha1.DeletionPolicy
		Manual   bool
	}
	cases := map[string]struct {
		reason string
		spec   configv1alpha1.PackageVariantSpec
		want   policies
	}{
		"Defaults": {
			reason: "empty policies are adoptNone, delete and Automatic",
			want:   policies{Adoption: configv1alpha1.AdoptionPolicyAdoptNone, Deletion: configv1alpha1.DeletionPolicyDelete},
		},
		"Explicit": {
			reason: "set policies are used as given",
			spec: configv1alpha1.PackageVariantSpec{
				AdoptionPolicy: configv1alpha1.AdoptionPolicyAdoptExisting,
				DeletionPolicy: configv1alpha1.DeletionPolicyOrphan,
				UpgradePolicy:  configv1alpha1.UpgradePolicyManual,
			},
			want: policies{Adoption: configv1alpha1.AdoptionPolicyAdoptExisting, Deletion: configv1alpha1.DeletionPolicyOrphan, Manual: true},
		},
		"ExplicitAutomatic": {
			reason: "Automatic is not manual",
			spec:   configv1alpha1.PackageVariantSpec{UpgradePolicy: configv1alpha1.UpgradePolicyAutomatic},
			want:   policies{Adoption: configv1alpha1.AdoptionPolicyAdoptNone, Deletion: configv1alpha1.DeletionPolicyDelete},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pv := &configv1alpha1.PackageVariant{Spec: tc.spec}
			got := policies{Adoption: adoptionPolicy(pv), Deletion: deletionPolicy(pv), Manual: manualUpgrades(pv)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: effective policies (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
