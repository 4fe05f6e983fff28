package helper

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// row is a String as the test reads it: "" for what is not given.
type row struct {
	Path, Value, ExprPath, Expr string
	WithRepository              bool
}

func rowOf(s String) row {
	r := row{ExprPath: s.ExprPath.String(), WithRepository: s.WithRepository}
	if s.Path != nil {
		r.Path = s.Path.String()
	}
	if s.Value != nil {
		r.Value = *s.Value
	}
	if s.Expr != nil {
		r.Expr = *s.Expr
	}
	return r
}

// rows lists every String of t in its order.
func rows(t *Template) []row {
	out := []row{rowOf(t.DownstreamRepo), rowOf(t.DownstreamPackage)}
	addMap := func(m Map) {
		for _, e := range m.Entries {
			out = append(out, rowOf(e.Key), rowOf(e.Value))
		}
	}
	addMap(t.Labels)
	addMap(t.Annotations)
	if pc := t.PackageContext; pc != nil {
		addMap(pc.Data)
		for _, s := range pc.RemoveKeyExprs {
			out = append(out, rowOf(s))
		}
	}
	for _, inj := range t.Injectors {
		out = append(out, rowOf(inj.Name))
	}
	for _, fns := range [][]Function{t.Validators, t.Mutators} {
		for _, fn := range fns {
			addMap(fn.ConfigMap)
		}
	}
	return out
}

func TestTemplatePath(t *testing.T) {
	if got, want := TemplatePath(3).String(), "spec.targets[3].template"; got != want {
		t.Errorf("TemplatePath(3) = %q, want %q", got, want)
	}
}

// TestWalkTemplate: every string a template may write or compute comes
// out with the paths of its two fields, what it was given, and whether
// its expression sees the repository (all but downstream.repoExpr do).
func TestWalkTemplate(t *testing.T) {
	const tp = "spec.targets[1].template"
	cases := map[string]struct {
		tpl  *configv1alpha2.PackageVariantTemplate
		want []row
	}{
		"empty template: only the downstream, given nothing": {
			tpl: &configv1alpha2.PackageVariantTemplate{},
			want: []row{
				{Path: tp + ".downstream.repo", ExprPath: tp + ".downstream.repoExpr"},
				{Path: tp + ".downstream.package", ExprPath: tp + ".downstream.packageExpr", WithRepository: true},
			},
		},
		"every string, in rendering order": {
			tpl: &configv1alpha2.PackageVariantTemplate{
				Downstream:      &configv1alpha2.DownstreamTemplate{RepoExpr: ptr.To("target.name"), Package: ptr.To("app")},
				LabelExprs:      []configv1alpha2.MapExpr{{Key: ptr.To("l"), ValueExpr: ptr.To("'lv'")}},
				AnnotationExprs: []configv1alpha2.MapExpr{{KeyExpr: ptr.To("'a'"), Value: ptr.To("av")}},
				PackageContext: &configv1alpha2.PackageContextTemplate{
					DataExprs:      []configv1alpha2.MapExpr{{Key: ptr.To("d"), ValueExpr: ptr.To("'dv'")}},
					RemoveKeyExprs: []string{"'r0'", "'r1'"},
				},
				Injectors: []configv1alpha2.InjectionSelectorTemplate{{Name: ptr.To("cm")}, {NameExpr: ptr.To("'x'")}},
				Pipeline: &configv1alpha2.PipelineTemplate{
					Validators: []configv1alpha2.FunctionTemplate{{ConfigMapExprs: []configv1alpha2.MapExpr{{Key: ptr.To("v"), Value: ptr.To("1")}}}},
					Mutators:   []configv1alpha2.FunctionTemplate{{}, {ConfigMapExprs: []configv1alpha2.MapExpr{{Key: ptr.To("m"), ValueExpr: ptr.To("'2'")}}}},
				},
			},
			want: []row{
				{Path: tp + ".downstream.repo", ExprPath: tp + ".downstream.repoExpr", Expr: "target.name"},
				{Path: tp + ".downstream.package", Value: "app", ExprPath: tp + ".downstream.packageExpr", WithRepository: true},
				{Path: tp + ".labelExprs[0].key", Value: "l", ExprPath: tp + ".labelExprs[0].keyExpr", WithRepository: true},
				{Path: tp + ".labelExprs[0].value", ExprPath: tp + ".labelExprs[0].valueExpr", Expr: "'lv'", WithRepository: true},
				{Path: tp + ".annotationExprs[0].key", ExprPath: tp + ".annotationExprs[0].keyExpr", Expr: "'a'", WithRepository: true},
				{Path: tp + ".annotationExprs[0].value", Value: "av", ExprPath: tp + ".annotationExprs[0].valueExpr", WithRepository: true},
				{Path: tp + ".packageContext.dataExprs[0].key", Value: "d", ExprPath: tp + ".packageContext.dataExprs[0].keyExpr", WithRepository: true},
				{Path: tp + ".packageContext.dataExprs[0].value", ExprPath: tp + ".packageContext.dataExprs[0].valueExpr", Expr: "'dv'", WithRepository: true},
				{ExprPath: tp + ".packageContext.removeKeyExprs[0]", Expr: "'r0'", WithRepository: true},
				{ExprPath: tp + ".packageContext.removeKeyExprs[1]", Expr: "'r1'", WithRepository: true},
				{Path: tp + ".injectors[0].name", Value: "cm", ExprPath: tp + ".injectors[0].nameExpr", WithRepository: true},
				{Path: tp + ".injectors[1].name", ExprPath: tp + ".injectors[1].nameExpr", Expr: "'x'", WithRepository: true},
				{Path: tp + ".pipeline.validators[0].configMapExprs[0].key", Value: "v", ExprPath: tp + ".pipeline.validators[0].configMapExprs[0].keyExpr", WithRepository: true},
				{Path: tp + ".pipeline.validators[0].configMapExprs[0].value", Value: "1", ExprPath: tp + ".pipeline.validators[0].configMapExprs[0].valueExpr", WithRepository: true},
				{Path: tp + ".pipeline.mutators[1].configMapExprs[0].key", Value: "m", ExprPath: tp + ".pipeline.mutators[1].configMapExprs[0].keyExpr", WithRepository: true},
				{Path: tp + ".pipeline.mutators[1].configMapExprs[0].value", ExprPath: tp + ".pipeline.mutators[1].configMapExprs[0].valueExpr", Expr: "'2'", WithRepository: true},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := WalkTemplate(tc.tpl, TemplatePath(1))
			if diff := cmp.Diff(tc.want, rows(got)); diff != "" {
				t.Errorf("strings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWalkTemplateParts: the parts that hold no expression of their own
// keep their paths and point at the template, so rendering copies from it.
func TestWalkTemplateParts(t *testing.T) {
	tpl := &configv1alpha2.PackageVariantTemplate{
		Labels:         map[string]string{"a": "1"},
		PackageContext: &configv1alpha2.PackageContextTemplate{Data: map[string]string{"k": "v"}, RemoveKeys: []string{"z"}},
		Injectors:      []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("cm")}},
		Pipeline: &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{{
			Function: kptfilev1.Function{Image: "img", ConfigMap: map[string]string{"x": "1"}},
		}}},
	}
	got := WalkTemplate(tpl, field.NewPath("t"))
	if got.Source != tpl || got.Path.String() != "t" {
		t.Errorf("source %p path %s, want %p t", got.Source, got.Path, tpl)
	}
	if got.Labels.Path.String() != "t.labelExprs" || got.Labels.Plain["a"] != "1" {
		t.Errorf("labels %+v", got.Labels)
	}
	if got.Annotations.Path.String() != "t.annotationExprs" || got.Annotations.Plain != nil {
		t.Errorf("annotations %+v", got.Annotations)
	}
	if pc := got.PackageContext; pc.Path.String() != "t.packageContext" || pc.Data.Plain["k"] != "v" || !cmp.Equal(pc.RemoveKeys, []string{"z"}) {
		t.Errorf("package context %+v", pc)
	}
	if inj := got.Injectors[0]; inj.Path.String() != "t.injectors[0]" || inj.Selector != &tpl.Injectors[0] {
		t.Errorf("injector %+v", inj)
	}
	if len(got.Validators) != 0 || len(got.Mutators) != 1 {
		t.Fatalf("validators %v mutators %v", got.Validators, got.Mutators)
	}
	if fn := got.Mutators[0]; fn.Path.String() != "t.pipeline.mutators[0]" || fn.Template != &tpl.Pipeline.Mutators[0] || fn.ConfigMap.Plain["x"] != "1" {
		t.Errorf("function %+v", fn)
	}
	if WalkTemplate(nil, field.NewPath("t")) != nil {
		t.Error("a nil template must walk to nil")
	}
}
