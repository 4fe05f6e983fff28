// Package helper holds logic about the config.porch.kpt.dev API that
// validation and the controllers share: how a PackageVariantSet's template
// is taken apart, with the path of each field. It is pure: plain values
// in, plain values out.
package helper

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// TargetPath is the path of spec.targets[i] of a PackageVariantSet.
func TargetPath(i int) *field.Path {
	return field.NewPath("spec", "targets").Index(i)
}

// TemplatePath is the path of the template of spec.targets[i].
func TemplatePath(i int) *field.Path {
	return TargetPath(i).Child("template")
}

// String is one string of a generated PackageVariant's spec as a template
// gives it: as written (Value), computed by a CEL expression (Expr), or,
// which validation refuses, both.
type String struct {
	// Value is the string as written, at Path; nil when not given.
	Value *string
	Path  *field.Path
	// Expr is the CEL expression that computes it, at ExprPath; nil when
	// not given.
	Expr     *string
	ExprPath *field.Path
	// WithRepository says whether Expr sees the repository variable. Only
	// downstream.repoExpr does not: it chooses the repository, so it is
	// evaluated before the repository is loaded.
	WithRepository bool
}

// Map is a map of the spec: entries as written and entries computed by a
// list of MapExprs, which win for the same key.
type Map struct {
	Plain map[string]string
	// Path is the path of the list of MapExprs (labelExprs, ...).
	Path    *field.Path
	Entries []MapEntry
}

// MapEntry is one MapExpr: its key and its value.
type MapEntry struct {
	Path       *field.Path
	Key, Value String
}

// PackageContext is the package context of the template.
type PackageContext struct {
	Path           *field.Path
	Data           Map
	RemoveKeys     []string
	RemoveKeyExprs []String
}

// Injector is one injector of the template; only its name may be computed.
type Injector struct {
	Path     *field.Path
	Selector *configv1alpha2.InjectionSelectorTemplate
	Name     String
}

// Function is one pipeline function of the template; only entries of its
// configMap may be computed.
type Function struct {
	Path      *field.Path
	Template  *configv1alpha2.FunctionTemplate
	ConfigMap Map
}

// Template is a PackageVariantTemplate taken apart: every string of the
// generated spec a template may write or compute, each with the paths of
// its fields and, for expressions, whether they see the repository. The
// fields are in the order rendering evaluates them (downstream repository
// first), which is also the order validation reports them in.
type Template struct {
	// Source is the template taken apart, for the fields that hold no
	// expression (policies, plain labels and annotations).
	Source *configv1alpha2.PackageVariantTemplate
	Path   *field.Path

	// DownstreamRepo and DownstreamPackage are the downstream, given or
	// not: when neither its value nor its expression is, the target's
	// default applies.
	DownstreamRepo    String
	DownstreamPackage String
	Labels            Map
	Annotations       Map
	// PackageContext is nil when the template has none.
	PackageContext *PackageContext
	Injectors      []Injector
	// Validators and Mutators are the functions of the pipeline, nil when
	// it has none.
	Validators []Function
	Mutators   []Function
}

// WalkTemplate takes tpl, found at fldPath, apart; nil when tpl is nil.
// It is the one place that knows which fields of a template are CEL
// expressions, what their paths are and what they can see; validation,
// rendering and indexing all read templates through it.
func WalkTemplate(tpl *configv1alpha2.PackageVariantTemplate, fldPath *field.Path) *Template {
	if tpl == nil {
		return nil
	}
	t := &Template{Source: tpl, Path: fldPath}
	down := fldPath.Child("downstream")
	t.DownstreamRepo = String{Path: down.Child("repo"), ExprPath: down.Child("repoExpr")}
	t.DownstreamPackage = String{Path: down.Child("package"), ExprPath: down.Child("packageExpr"), WithRepository: true}
	if d := tpl.Downstream; d != nil {
		t.DownstreamRepo.Value, t.DownstreamRepo.Expr = d.Repo, d.RepoExpr
		t.DownstreamPackage.Value, t.DownstreamPackage.Expr = d.Package, d.PackageExpr
	}
	t.Labels = walkMap(tpl.Labels, tpl.LabelExprs, fldPath.Child("labelExprs"))
	t.Annotations = walkMap(tpl.Annotations, tpl.AnnotationExprs, fldPath.Child("annotationExprs"))
	if pc := tpl.PackageContext; pc != nil {
		path := fldPath.Child("packageContext")
		t.PackageContext = &PackageContext{
			Path:       path,
			Data:       walkMap(pc.Data, pc.DataExprs, path.Child("dataExprs")),
			RemoveKeys: pc.RemoveKeys,
		}
		for i := range pc.RemoveKeyExprs {
			t.PackageContext.RemoveKeyExprs = append(t.PackageContext.RemoveKeyExprs, String{
				Expr: &pc.RemoveKeyExprs[i], ExprPath: path.Child("removeKeyExprs").Index(i), WithRepository: true,
			})
		}
	}
	for i := range tpl.Injectors {
		inj := &tpl.Injectors[i]
		path := fldPath.Child("injectors").Index(i)
		t.Injectors = append(t.Injectors, Injector{Path: path, Selector: inj, Name: String{
			Value: inj.Name, Path: path.Child("name"), Expr: inj.NameExpr, ExprPath: path.Child("nameExpr"), WithRepository: true,
		}})
	}
	if p := tpl.Pipeline; p != nil {
		path := fldPath.Child("pipeline")
		t.Validators = walkFunctions(p.Validators, path.Child("validators"))
		t.Mutators = walkFunctions(p.Mutators, path.Child("mutators"))
	}
	return t
}

func walkMap(plain map[string]string, exprs []configv1alpha2.MapExpr, fldPath *field.Path) Map {
	m := Map{Plain: plain, Path: fldPath}
	for i := range exprs {
		me := &exprs[i]
		path := fldPath.Index(i)
		m.Entries = append(m.Entries, MapEntry{
			Path:  path,
			Key:   String{Value: me.Key, Path: path.Child("key"), Expr: me.KeyExpr, ExprPath: path.Child("keyExpr"), WithRepository: true},
			Value: String{Value: me.Value, Path: path.Child("value"), Expr: me.ValueExpr, ExprPath: path.Child("valueExpr"), WithRepository: true},
		})
	}
	return m
}

func walkFunctions(fns []configv1alpha2.FunctionTemplate, fldPath *field.Path) []Function {
	var out []Function
	for i := range fns {
		path := fldPath.Index(i)
		out = append(out, Function{Path: path, Template: &fns[i], ConfigMap: walkMap(fns[i].ConfigMap, fns[i].ConfigMapExprs, path.Child("configMapExprs"))})
	}
	return out
}
