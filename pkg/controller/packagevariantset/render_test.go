package packagevariantset

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

func testRenderer(tpl *configv1alpha2.PackageVariantTemplate) *renderer {
	pvs := ctrlfixture.ValidSet()
	pvs.UID = "uid-set"
	pvs.Generation = 1
	pvs.Spec.Upstream.Revision = 2
	pvs.Spec.Targets[0].Template = tpl
	repos := map[string]*configv1alpha1.Repository{
		"deploy": {ObjectMeta: metav1.ObjectMeta{Name: "deploy", Namespace: "ns", Labels: map[string]string{"region": "eu"}}},
		"eu-1":   {ObjectMeta: metav1.ObjectMeta{Name: "eu-1", Namespace: "ns", Labels: map[string]string{"region": "eu", "tier": "gold"}}},
	}
	return &renderer{
		cel:    celtemplate.NewCache(celtemplate.Options{}),
		budget: celtemplate.NewBudget(context.Background(), 0),
		set:    celtemplate.SetKey{UID: pvs.UID, Generation: 1},
		pvs:    pvs,
		upstream: &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{
			Name: "blueprints.app.v2", Namespace: "ns", Labels: map[string]string{"kpt.dev/latest-revision": "true"}}},
		repository: func(name string) (*configv1alpha1.Repository, bool) {
			r, ok := repos[name]
			return r, ok
		},
	}
}

func TestRender(t *testing.T) {
	listTarget := target{index: 0, repoDefault: "deploy", packageDefault: "app"}
	selected := target{index: 0, repoDefault: "eu-1", packageDefault: "app",
		object: &celtemplate.Object{Name: "eu-1", Namespace: "ns", Labels: map[string]string{"site": "paris"}}}
	up := &configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: 2}
	cases := map[string]struct {
		tpl    *configv1alpha2.PackageVariantTemplate
		target target
		want   *configv1alpha1.PackageVariantSpec
	}{
		"no template: defaults, upstream copied as written": {
			target: listTarget,
			want:   &configv1alpha1.PackageVariantSpec{Upstream: up, Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: "app"}},
		},
		"plain fields": {
			target: listTarget,
			tpl: &configv1alpha2.PackageVariantTemplate{
				Downstream:     &configv1alpha2.DownstreamTemplate{Repo: ptr.To("eu-1"), Package: ptr.To("web")},
				AdoptionPolicy: ptr.To(configv1alpha1.AdoptionPolicyAdoptExisting),
				DeletionPolicy: ptr.To(configv1alpha1.DeletionPolicyOrphan),
				UpgradePolicy:  ptr.To(configv1alpha1.UpgradePolicyManual),
				Labels:         map[string]string{"a": "1"},
				Annotations:    map[string]string{"b": "2"},
				PackageContext: &configv1alpha2.PackageContextTemplate{Data: map[string]string{"k": "v"}, RemoveKeys: []string{"z", "y"}},
				Injectors:      []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("cm")}},
				Pipeline: &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{{
					Function: kptfilev1.Function{Image: "img", ConfigMap: map[string]string{"x": "1"}},
				}}},
			},
			want: &configv1alpha1.PackageVariantSpec{
				Upstream: up, Downstream: &configv1alpha1.Downstream{Repo: "eu-1", Package: "web"},
				AdoptionPolicy: configv1alpha1.AdoptionPolicyAdoptExisting, DeletionPolicy: configv1alpha1.DeletionPolicyOrphan,
				UpgradePolicy: configv1alpha1.UpgradePolicyManual,
				Labels:        map[string]string{"a": "1"}, Annotations: map[string]string{"b": "2"},
				PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"k": "v"}, RemoveKeys: []string{"y", "z"}},
				Injectors:      []configv1alpha1.InjectionSelector{{Kind: ptr.To("ConfigMap"), Name: "cm"}},
				Pipeline:       &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "img", ConfigMap: map[string]string{"x": "1"}}}},
			},
		},
		"expressions win over plain fields, repoExpr first": {
			target: selected,
			tpl: &configv1alpha2.PackageVariantTemplate{
				Downstream: &configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("target.name"), PackageExpr: ptr.To("packageDefault + '-' + repository.labels['tier']")},
				Labels:     map[string]string{"region": "plain"},
				LabelExprs: []configv1alpha2.MapExpr{
					{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")},
					{KeyExpr: ptr.To("'site'"), ValueExpr: ptr.To("target.labels['site']")},
				},
				AnnotationExprs: []configv1alpha2.MapExpr{{Key: ptr.To("upstream"), ValueExpr: ptr.To("upstream.name")}},
				PackageContext: &configv1alpha2.PackageContextTemplate{
					DataExprs:      []configv1alpha2.MapExpr{{Key: ptr.To("repo"), ValueExpr: ptr.To("repoDefault")}},
					RemoveKeyExprs: []string{"'old-' + repository.name"},
				},
				Injectors: []configv1alpha2.InjectionSelectorTemplate{{NameExpr: ptr.To("target.labels['site'] + '-config'")}},
				Pipeline: &configv1alpha2.PipelineTemplate{Validators: []configv1alpha2.FunctionTemplate{{
					Function:       kptfilev1.Function{Image: "v", ConfigMap: map[string]string{"region": "plain"}},
					ConfigMapExprs: []configv1alpha2.MapExpr{{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")}},
				}}},
			},
			want: &configv1alpha1.PackageVariantSpec{
				Upstream: up, Downstream: &configv1alpha1.Downstream{Repo: "eu-1", Package: "app-gold"},
				Labels:         map[string]string{"region": "eu", "site": "paris"},
				Annotations:    map[string]string{"upstream": "blueprints.app.v2"},
				PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"repo": "eu-1"}, RemoveKeys: []string{"old-eu-1"}},
				Injectors:      []configv1alpha1.InjectionSelector{{Name: "paris-config"}},
				Pipeline:       &kptfilev1.Pipeline{Validators: []kptfilev1.Function{{Image: "v", ConfigMap: map[string]string{"region": "eu"}}}},
			},
		},
		"list target variable": {
			target: listTarget,
			tpl: &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{
				{Key: ptr.To("t"), ValueExpr: ptr.To("target.repo + '/' + target.package")},
			}},
			want: &configv1alpha1.PackageVariantSpec{Upstream: up, Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: "app"},
				Labels: map[string]string{"t": "deploy/app"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.target.template = tc.tpl
			got, err := testRenderer(tc.tpl).render(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	cases := map[string]struct {
		tpl  *configv1alpha2.PackageVariantTemplate
		want []string
	}{
		"repoExpr cannot see repository": {
			tpl:  &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("repository.name")}},
			want: []string{"spec.targets[0].template.downstream.repoExpr", "repository"},
		},
		"downstream repository missing": {
			tpl:  &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("'nowhere'")}},
			want: []string{"spec.targets[0].template", `downstream repository "nowhere" could not be loaded`, "namespace ns"},
		},
		"missing key at run time": {
			tpl:  &configv1alpha2.PackageVariantTemplate{LabelExprs: []configv1alpha2.MapExpr{{Key: ptr.To("k"), ValueExpr: ptr.To("repository.labels['tier']")}}},
			want: []string{"spec.targets[0].template.labelExprs[0].valueExpr", "tier"},
		},
		"not a string": {
			tpl:  &configv1alpha2.PackageVariantTemplate{Injectors: []configv1alpha2.InjectionSelectorTemplate{{NameExpr: ptr.To("1 + 1")}}},
			want: []string{"spec.targets[0].template.injectors[0].nameExpr", "string"},
		},
		"function configMap expression": {
			tpl: &configv1alpha2.PackageVariantTemplate{Pipeline: &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{
				{Function: kptfilev1.Function{Image: "i"}, ConfigMapExprs: []configv1alpha2.MapExpr{{KeyExpr: ptr.To("nope"), Value: ptr.To("v")}}},
			}}},
			want: []string{"spec.targets[0].template.pipeline.mutators[0].configMapExprs[0].keyExpr", "nope"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := testRenderer(tc.tpl).render(target{index: 0, repoDefault: "deploy", packageDefault: "app", template: tc.tpl})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
