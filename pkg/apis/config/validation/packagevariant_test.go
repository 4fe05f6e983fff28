package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// notDNSSubdomain is what apimachinery says of a name that is not a DNS
// subdomain.
func notDNSSubdomain(name string) string {
	return strings.Join(utilvalidation.IsDNS1123Subdomain(name), "; ")
}

// missing is the messages of the required fields left out.
func missing(fields ...string) []string {
	var out []string
	for _, f := range fields {
		out = append(out, "missing required field "+f)
	}
	return out
}

// validVariant passes every check; each case breaks one thing.
func validVariant() *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pv"},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:       &configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: 2, WorkspaceName: "v2"},
			Downstream:     &configv1alpha1.Downstream{Repo: "deploy", Package: "app"},
			AdoptionPolicy: configv1alpha1.AdoptionPolicyAdoptExisting,
			DeletionPolicy: configv1alpha1.DeletionPolicyOrphan,
			UpgradePolicy:  configv1alpha1.UpgradePolicyManual,
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}, RemoveKeys: []string{"old"}},
			Injectors:      []configv1alpha1.InjectionSelector{{Name: "settings"}},
			Pipeline: &kptfilev1.Pipeline{
				Mutators:   []kptfilev1.Function{{Image: "gcr.io/kpt-fn/set-namespace:v0.4.1"}},
				Validators: []kptfilev1.Function{{Exec: "/bin/check"}},
			},
		},
	}
}

func TestValidatePackageVariant(t *testing.T) {
	testChanges(t, map[string]changeCase[*configv1alpha1.PackageVariant]{
		"ValidVariant": {
			reason: "a variant using every field correctly has no problem",
			change: func(*configv1alpha1.PackageVariant) {},
		},
		"EmptyPoliciesMeanDefaults": {
			reason: "empty policies are the defaults, not errors",
			change: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.AdoptionPolicy, pv.Spec.DeletionPolicy, pv.Spec.UpgradePolicy = "", "", ""
			},
		},
		"MissingUpstream":         {"spec.upstream is required", func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream = nil }, missing("spec.upstream")},
		"MissingUpstreamFields":   {"spec.upstream.repo and .package are required", func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package = "", "" }, missing("spec.upstream.repo", "spec.upstream.package")},
		"MissingDownstream":       {"spec.downstream is required", func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream = nil }, missing("spec.downstream")},
		"MissingDownstreamFields": {"spec.downstream.repo and .package are required", func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package = "", "" }, missing("spec.downstream.repo", "spec.downstream.package")},
		"BadAdoptionPolicy": {
			reason: "the reference controller's message for an unknown adoption policy",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.AdoptionPolicy = "adoptAll" },
			want:   []string{`spec.adoptionPolicy field can only be "adoptNone" or "adoptExisting"`},
		},
		"BadDeletionPolicy": {
			reason: "the reference controller's message for an unknown deletion policy",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.DeletionPolicy = "keep" },
			want:   []string{`spec.deletionPolicy can only be "orphan" or "delete"`},
		},
		"BadUpgradePolicy": {
			reason: "upgradePolicy values are case sensitive",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.UpgradePolicy = "manual" },
			want:   []string{`spec.upgradePolicy can only be "Automatic" or "Manual"`},
		},
		"ReservedPackageContextKeys": {
			reason: "name and package-path belong to kpt and Porch, in data and in removeKeys",
			change: func(pv *configv1alpha1.PackageVariant) {
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
			change: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Injectors = []configv1alpha1.InjectionSelector{{Name: "ok"}, {Name: ""}, {Name: "  "}}
			},
			want: []string{"spec.injectors[1].name must not be empty", "spec.injectors[2].name must not be empty"},
		},
		"NegativeRevision": {
			reason: "revision -1 is the placeholder, which cannot be cloned",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.Revision = -1 },
			want: []string{"spec.upstream.revision -1 is invalid: give a published revision number (1 or more), " +
				"or leave it out to follow the latest published revision; the placeholder revision -1 cannot be cloned"},
		},
		"PlaceholderWorkspace": {
			reason: "workspace main is the placeholder, which cannot be cloned",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Upstream.WorkspaceName = "main" },
			want: []string{`spec.upstream.workspaceName "main" is the placeholder revision that tracks a branch and cannot be cloned; ` +
				"name the workspace of a published revision, or leave it out to follow the latest published revision"},
		},
		"FunctionsWithoutImageOrExec": {
			reason: "every pipeline function needs an image or an exec, counted per list",
			change: func(pv *configv1alpha1.PackageVariant) {
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
		"RepositoryNameNotAnObjectName": {
			reason: "Porch cannot find a Repository whose name is not a Kubernetes object name",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream.Repo = "Deploy_1" },
			want:   []string{`spec.downstream.repo "Deploy_1" is not a Repository name: ` + notDNSSubdomain("Deploy_1")},
		},
		"PackagePathSegments": {
			reason: "an empty, . or .. segment is not a package path, reported once",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream.Package = "a//../b" },
			want:   []string{`spec.downstream.package "a//../b" is not a package path: give a relative path without empty, "." or ".." segments`},
		},
		"NestedPackageIsFine": {
			reason: "a nested package path makes a valid draft name",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream.Package = "apps/web-1" },
		},
		"DraftNameUpperCase": {
			reason: "Porch names the first draft deploy.App.packagevariant-1, which is not a DNS subdomain",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.Downstream.Package = "App" },
			want: []string{`spec.downstream: Porch would name the draft "deploy.App.packagevariant-1", which it refuses: ` + notDNSSubdomain("deploy.App.packagevariant-1") +
				"; use a lower-case package path of letters, digits, '-' and '/' that keeps the name within 253 characters"},
		},
		"DraftNameTooLong": {
			reason: "the draft name counts the repository, the package and the workspace packagevariant-1 against 253 characters",
			change: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Downstream.Package = strings.Repeat("a", 253-len("deploy..packagevariant-1")+1)
			},
			want: []string{`spec.downstream: Porch would name the draft "deploy.` + strings.Repeat("a", 253-len("deploy..packagevariant-1")+1) + `.packagevariant-1", which it refuses: ` +
				"must be no more than 253 characters; use a lower-case package path of letters, digits, '-' and '/' that keeps the name within 253 characters"},
		},
		"DraftNameAtTheLimit": {
			reason: "a draft name of exactly 253 characters is accepted",
			change: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Downstream.Package = strings.Repeat("a", 253-len("deploy..packagevariant-1"))
			},
		},
		"BadServiceAccountName": {
			reason: "serviceAccountName must be a name a ServiceAccount can have",
			change: func(pv *configv1alpha1.PackageVariant) { pv.Spec.ServiceAccountName = "Not_A_Name" },
			want:   []string{`spec.serviceAccountName "Not_A_Name" is not a ServiceAccount name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		},
		"SecretInjector": {
			reason: "a Secret is never injected: the package is stored in git",
			change: func(pv *configv1alpha1.PackageVariant) {
				pv.Spec.Injectors = []configv1alpha1.InjectionSelector{
					{Kind: ptr.To("Secret"), Name: "creds"},
					{Group: ptr.To("example.com"), Kind: ptr.To("Secret"), Name: "not-core"},
				}
			},
			want: []string{"spec.injectors[0].kind: Secret objects are never injected or selected: " +
				"a package is stored in git, where its readers would see the credentials; use a ConfigMap (or another kind) for what may be copied into packages"},
		},
		"AllProblemsTogether": {
			reason: "a person sees every problem at once, in a stable order",
			change: func(pv *configv1alpha1.PackageVariant) {
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
	}, validVariant, ValidatePackageVariant)
}

// TestPackageVariantErrorFields: besides the message, each error names the
// field it is about and says how it is wrong, for programs.
func TestPackageVariantErrorFields(t *testing.T) {
	pv := validVariant()
	pv.Spec.Upstream.Repo = ""
	pv.Spec.Upstream.WorkspaceName = "main"
	pv.Spec.Downstream.Package = "App"
	pv.Spec.DeletionPolicy = "keep"
	pv.Spec.PackageContext.RemoveKeys = []string{"name"}
	pv.Spec.Injectors = []configv1alpha1.InjectionSelector{{Name: " "}}
	pv.Spec.Pipeline.Mutators = []kptfilev1.Function{{Name: "no-image"}}
	want := field.ErrorList{
		{Type: field.ErrorTypeRequired, Field: "spec.upstream.repo", BadValue: ""},
		{Type: field.ErrorTypeInvalid, Field: "spec.upstream.workspaceName", BadValue: "main"},
		{Type: field.ErrorTypeInvalid, Field: "spec.downstream", BadValue: "deploy.App.packagevariant-1"},
		{Type: field.ErrorTypeNotSupported, Field: "spec.deletionPolicy", BadValue: configv1alpha1.DeletionPolicy("keep")},
		{Type: field.ErrorTypeForbidden, Field: "spec.packageContext.removeKeys[0]", BadValue: ""},
		{Type: field.ErrorTypeRequired, Field: "spec.injectors[0].name", BadValue: ""},
		{Type: field.ErrorTypeRequired, Field: "spec.pipeline.mutators[0].image", BadValue: ""},
	}
	checkErrorFields(t, want, ValidatePackageVariant(pv))
}

// TestValidatePackageVariantSpecPath: the messages name the fields from
// the path the spec is found at.
func TestValidatePackageVariantSpecPath(t *testing.T) {
	spec := validVariant().Spec
	spec.Downstream = nil
	spec.Injectors = []configv1alpha1.InjectionSelector{{}}
	got := Messages(ValidatePackageVariantSpec(&spec, field.NewPath("variant", "spec")))
	want := []string{"missing required field variant.spec.downstream", "variant.spec.injectors[0].name must not be empty"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestValidatePackageContext(t *testing.T) {
	cases := map[string]struct {
		pc   *configv1alpha1.PackageContext
		want []string
	}{
		"nil": {},
		"ordinary keys": {
			pc: &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}, RemoveKeys: []string{"old"}},
		},
		"reserved keys in data and removeKeys": {
			pc: &configv1alpha1.PackageContext{
				Data:       map[string]string{"package-path": "x", "name": "y", "ok": "z"},
				RemoveKeys: []string{"ok", "name", "package-path"},
			},
			want: []string{
				`spec.packageContext.data[name]: Forbidden: must not contain the key "name": it is reserved for kpt and Porch`,
				`spec.packageContext.data[package-path]: Forbidden: must not contain the key "package-path": it is reserved for kpt and Porch`,
				`spec.packageContext.removeKeys[1]: Forbidden: must not contain the key "name": it is reserved for kpt and Porch`,
				`spec.packageContext.removeKeys[2]: Forbidden: must not contain the key "package-path": it is reserved for kpt and Porch`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Messages(ValidatePackageContext(tc.pc, field.NewPath("spec", "packageContext")))); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
