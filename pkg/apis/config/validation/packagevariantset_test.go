package validation

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// fakeCheck fails every expression containing "bad", naming its field, and
// records which expressions were checked with the repository variable.
type fakeCheck struct{ withoutRepository []string }

func (f *fakeCheck) check(fldPath *field.Path, expr string, withRepository bool) error {
	if !withRepository {
		f.withoutRepository = append(f.withoutRepository, fldPath.String())
	}
	if strings.Contains(expr, "bad") {
		return errors.New(fldPath.String() + ": syntax error")
	}
	return nil
}

func TestValidatePackageVariantSet(t *testing.T) {
	testChanges(t, map[string]changeCase[*configv1alpha2.PackageVariantSet]{
		"valid": {change: func(*configv1alpha2.PackageVariantSet) {}},
		"no upstream": {
			change: func(s *configv1alpha2.PackageVariantSet) { s.Spec.Upstream = nil },
			want:   []string{"spec.upstream is a required field"},
		},
		"empty upstream, no targets": {
			change: func(s *configv1alpha2.PackageVariantSet) {
				s.Spec.Upstream = &configv1alpha1.Upstream{Revision: -1}
				s.Spec.Targets = nil
			},
			want: []string{
				"spec.upstream.package is a required field",
				"spec.upstream.repo is a required field",
				"spec.upstream.revision -1 is invalid: give a published revision number (1 or more), or leave it out to follow the latest published revision",
				"must specify at least one item in spec.targets",
			},
		},
		"target kinds": {
			change: func(s *configv1alpha2.PackageVariantSet) {
				s.Spec.Targets = []configv1alpha2.Target{
					{},
					{Repositories: []configv1alpha2.RepositoryTarget{}},
					{Repositories: []configv1alpha2.RepositoryTarget{{PackageNames: []string{"a", ""}}}},
					{ObjectSelector: &configv1alpha2.ObjectSelector{Name: ptr.To("")}, RepositorySelector: &configv1alpha2.RepositorySelector{PackageNames: []string{""}}},
					{RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{
						MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Sometimes"}}}}},
				}
			},
			want: []string{
				"spec.targets[0] must specify one of `repositories`, `repositorySelector`, or `objectSelector`",
				"spec.targets[1].repositories must not be an empty list if specified",
				"spec.targets[2].repositories[0].name cannot be empty",
				"spec.targets[2].repositories[0].packageNames[1] cannot be empty",
				"spec.targets[3].repositorySelector.packageNames[0] cannot be empty",
				"spec.targets[3].objectselector.apiVersion cannot be empty",
				"spec.targets[3].objectselector.kind cannot be empty",
				"spec.targets[3].objectSelector.name cannot be empty if specified",
				"spec.targets[3] must specify one of `repositories`, `repositorySelector`, or `objectSelector`",
				`spec.targets[4].repositorySelector is not a valid label selector: "Sometimes" is not a valid label selector operator`,
			},
		},
		"secrets are not selected": {
			change: func(s *configv1alpha2.PackageVariantSet) {
				s.Spec.Targets = []configv1alpha2.Target{{ObjectSelector: &configv1alpha2.ObjectSelector{APIVersion: "v1", Kind: "Secret"}}}
			},
			want: []string{"spec.targets[0].objectSelector.kind: Secret objects are never injected or selected: " +
				"a package is stored in git, where its readers would see the credentials; use a ConfigMap (or another kind) for what may be copied into packages"},
		},
		"template": {
			change: func(s *configv1alpha2.PackageVariantSet) {
				s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{
					AdoptionPolicy: ptr.To(configv1alpha1.AdoptionPolicy("sometimes")),
					DeletionPolicy: ptr.To(configv1alpha1.DeletionPolicy("never")),
					UpgradePolicy:  ptr.To(configv1alpha1.UpgradePolicy("weekly")),
					Downstream: &configv1alpha2.DownstreamTemplate{
						Repo: ptr.To("r"), RepoExpr: ptr.To("bad repo"), Package: ptr.To("p"), PackageExpr: ptr.To("'p'"),
					},
					LabelExprs: []configv1alpha2.MapExpr{
						{Key: ptr.To("a"), KeyExpr: ptr.To("'a'"), Value: ptr.To("v"), ValueExpr: ptr.To("bad")},
						{Value: ptr.To("no key")},
					},
					AnnotationExprs: []configv1alpha2.MapExpr{{KeyExpr: ptr.To("bad key")}},
					PackageContext: &configv1alpha2.PackageContextTemplate{
						DataExprs:      []configv1alpha2.MapExpr{{Key: ptr.To("k"), ValueExpr: ptr.To("bad value")}},
						RemoveKeyExprs: []string{"'ok'", "bad"},
					},
					Injectors: []configv1alpha2.InjectionSelectorTemplate{
						{Name: ptr.To("a"), NameExpr: ptr.To("'a'")},
						{},
						{NameExpr: ptr.To("bad")},
					},
					Pipeline: &configv1alpha2.PipelineTemplate{
						Validators: []configv1alpha2.FunctionTemplate{{}},
						Mutators: []configv1alpha2.FunctionTemplate{{
							Function:       kptfilev1.Function{Image: "img", Name: "dots.are.fine"},
							ConfigMapExprs: []configv1alpha2.MapExpr{{Key: ptr.To("k"), ValueExpr: ptr.To("bad")}},
						}},
					},
				}
			},
			want: []string{
				`spec.targets[0].template.adoptionPolicy can only be "adoptNone" or "adoptExisting"`,
				`spec.targets[0].template.deletionPolicy can only be "orphan" or "delete"`,
				`spec.targets[0].template.upgradePolicy can only be "Automatic" or "Manual"`,
				"spec.targets[0].template may specify only one of `downstream.repo` and `downstream.repoExpr`",
				"spec.targets[0].template may specify only one of `downstream.package` and `downstream.packageExpr`",
				"spec.targets[0].template.downstream.repoExpr: syntax error",
				"spec.targets[0].template.labelExprs[0] may specify only one of `key` and `keyExpr`",
				"spec.targets[0].template.labelExprs[0] may specify only one of `value` and `valueExpr`",
				"spec.targets[0].template.labelExprs[0].valueExpr: syntax error",
				"spec.targets[0].template.labelExprs[1] must specify either `key` or `keyExpr`",
				"spec.targets[0].template.annotationExprs[0].keyExpr: syntax error",
				"spec.targets[0].template.packageContext.dataExprs[0].valueExpr: syntax error",
				"spec.targets[0].template.packageContext.removeKeyExprs[1]: syntax error",
				"spec.targets[0].template.injectors[0] may specify only one of `name` and `nameExpr`",
				"spec.targets[0].template.injectors[1] must specify either `name` or `nameExpr`",
				"spec.targets[0].template.injectors[2].nameExpr: syntax error",
				"spec.targets[0].template.pipeline.validators[0].image must not be empty",
				"spec.targets[0].template.pipeline.mutators[0].configMapExprs[0].valueExpr: syntax error",
			},
		},
	}, ctrlfixture.ValidSet, func(s *configv1alpha2.PackageVariantSet) field.ErrorList {
		return ValidatePackageVariantSet(s, (&fakeCheck{}).check)
	})
}

// TestValidateRepoExprHasNoRepository: downstream.repoExpr is checked
// without the repository variable, every other expression with it.
func TestValidateRepoExprHasNoRepository(t *testing.T) {
	s := ctrlfixture.ValidSet()
	s.Spec.Targets[0].Template = &configv1alpha2.PackageVariantTemplate{
		Downstream: &configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("repoDefault"), PackageExpr: ptr.To("packageDefault")},
		LabelExprs: []configv1alpha2.MapExpr{{KeyExpr: ptr.To("'k'"), ValueExpr: ptr.To("repository.name")}},
	}
	f := &fakeCheck{}
	if errs := ValidatePackageVariantSet(s, f.check); len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff([]string{"spec.targets[0].template.downstream.repoExpr"}, f.withoutRepository); diff != "" {
		t.Errorf("checked without repository (-want +got):\n%s", diff)
	}
}

// TestValidateCEL: the controller's validation (the cache's Check, as sync
// uses it) refuses, before any target is rendered, an expression that reads
// what the sandbox does not expose, cannot be a string, fails whatever the
// target, or exceeds the cost limit; each problem names its field.
func TestValidateCEL(t *testing.T) {
	// template makes the target's template tpl.
	template := func(tpl *configv1alpha2.PackageVariantTemplate) func(*configv1alpha2.PackageVariantSet) {
		return func(s *configv1alpha2.PackageVariantSet) { s.Spec.Targets[0].Template = tpl }
	}
	testChanges(t, map[string]changeCase[*configv1alpha2.PackageVariantSet]{
		"field the sandbox does not expose": {
			change: template(&configv1alpha2.PackageVariantTemplate{
				Injectors: []configv1alpha2.InjectionSelectorTemplate{{NameExpr: ptr.To("repository.spec.secret")}},
			}),
			want: []string{"spec.targets[0].template.injectors[0].nameExpr: ERROR: <input>:1:11: undefined field 'spec'\n" +
				" | repository.spec.secret\n" +
				" | ..........^\n" +
				"upstream, repository and target expose only name, namespace, labels and annotations; a target from a repositories list exposes only repo and package"},
		},
		"a map where a string is required": {
			change: template(&configv1alpha2.PackageVariantTemplate{
				PackageContext: &configv1alpha2.PackageContextTemplate{DataExprs: []configv1alpha2.MapExpr{{Key: ptr.To("k"), ValueExpr: ptr.To("upstream.annotations")}}},
			}),
			want: []string{"spec.targets[0].template.packageContext.dataExprs[0].valueExpr: must evaluate to a string, got map(string, string)"},
		},
		"division by zero whatever the target": {
			change: template(&configv1alpha2.PackageVariantTemplate{
				Pipeline: &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{{
					Function:       kptfilev1.Function{Image: "img"},
					ConfigMapExprs: []configv1alpha2.MapExpr{{Key: ptr.To("k"), ValueExpr: ptr.To("string(1/0)")}},
				}}},
			}),
			want: []string{"spec.targets[0].template.pipeline.mutators[0].configMapExprs[0].valueExpr: fails for every target: division by zero"},
		},
		"cost limit": {
			change: template(&configv1alpha2.PackageVariantTemplate{
				PackageContext: &configv1alpha2.PackageContextTemplate{RemoveKeyExprs: []string{"target.labels.exists(a, target.labels.exists(b, a + b == 'x')) ? 'x' : 'y'"}},
			}),
			want: []string{"spec.targets[0].template.packageContext.removeKeyExprs[0]: estimated cost N exceeds the cost limit of 1000000 " +
				"(for objects with up to 250 labels and 250 annotations); comprehensions (all, exists, filter, map ...) nested in comprehensions are the usual cause"},
		},
		"division by the size of labels is left to rendering": {
			change: template(&configv1alpha2.PackageVariantTemplate{
				Downstream: &configv1alpha2.DownstreamTemplate{PackageExpr: ptr.To("packageDefault + string(10 / size(repository.labels))")},
			}),
		},
	}, ctrlfixture.ValidSet, func(s *configv1alpha2.PackageVariantSet) field.ErrorList {
		cache := celtemplate.NewCache(celtemplate.Options{})
		set := celtemplate.SetKey{UID: s.UID, Generation: s.Generation}
		errs := ValidatePackageVariantSet(s, func(fldPath *field.Path, expr string, withRepository bool) error {
			return cache.Check(set, fldPath.String(), expr, withRepository)
		})
		// The estimate itself is CEL's to refine.
		for _, e := range errs {
			e.Detail = estimate.ReplaceAllString(e.Detail, "estimated cost N")
		}
		return errs
	})
}

var estimate = regexp.MustCompile(`estimated cost \d+`)

// TestPackageVariantSetErrorFields: each error names the field it is about
// (in its API spelling, where the reference's message does not) and says
// how it is wrong; a CEL error is an invalid value of the expression's
// field.
func TestPackageVariantSetErrorFields(t *testing.T) {
	s := ctrlfixture.ValidSet()
	s.Spec.Targets = []configv1alpha2.Target{
		{ObjectSelector: &configv1alpha2.ObjectSelector{Kind: "Site"}, Repositories: []configv1alpha2.RepositoryTarget{{Name: "deploy"}}},
		{Template: &configv1alpha2.PackageVariantTemplate{
			UpgradePolicy: ptr.To(configv1alpha1.UpgradePolicy("weekly")),
			Downstream:    &configv1alpha2.DownstreamTemplate{Repo: ptr.To("r"), RepoExpr: ptr.To("'r'")},
			LabelExprs:    []configv1alpha2.MapExpr{{ValueExpr: ptr.To("bad")}},
			Pipeline:      &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{{}}},
		}},
	}
	f := &fakeCheck{}
	want := field.ErrorList{
		{Type: field.ErrorTypeRequired, Field: "spec.targets[0].objectSelector.apiVersion", BadValue: ""},
		{Type: field.ErrorTypeForbidden, Field: "spec.targets[0]", BadValue: ""},
		{Type: field.ErrorTypeRequired, Field: "spec.targets[1]", BadValue: ""},
		{Type: field.ErrorTypeNotSupported, Field: "spec.targets[1].template.upgradePolicy", BadValue: configv1alpha1.UpgradePolicy("weekly")},
		{Type: field.ErrorTypeForbidden, Field: "spec.targets[1].template.downstream.repoExpr", BadValue: ""},
		{Type: field.ErrorTypeRequired, Field: "spec.targets[1].template.labelExprs[0].key", BadValue: ""},
		{Type: field.ErrorTypeInvalid, Field: "spec.targets[1].template.labelExprs[0].valueExpr", BadValue: "bad"},
		{Type: field.ErrorTypeRequired, Field: "spec.targets[1].template.pipeline.mutators[0].image", BadValue: ""},
	}
	checkErrorFields(t, want, ValidatePackageVariantSet(s, f.check))
}
