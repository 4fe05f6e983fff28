package packagevariantset

import (
	"fmt"
	"sort"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
)

// renderer renders the templates of one set generation.
type renderer struct {
	cel      *celtemplate.Cache
	set      celtemplate.SetKey
	pvs      *configv1alpha2.PackageVariantSet
	upstream *porchv1alpha1.PackageRevision
	// repository looks a downstream Repository up by name (from the cache).
	repository func(name string) (*configv1alpha1.Repository, bool)
}

// render computes the spec of the variant for one target, in the order
// the design document gives: downstream.repoExpr first (without the
// repository variable), then the downstream Repository is loaded and every
// other expression evaluated. The upstream is copied as written, so each
// variant resolves (and follows) it itself.
func (r *renderer) render(t target) (*configv1alpha1.PackageVariantSpec, error) {
	up := *r.pvs.Spec.Upstream
	spec := &configv1alpha1.PackageVariantSpec{
		Upstream:   &up,
		Downstream: &configv1alpha1.Downstream{Repo: t.repoDefault, Package: t.packageDefault},
	}
	tpl := t.template
	if tpl == nil {
		return spec, nil
	}
	field := fmt.Sprintf("spec.targets[%d].template", t.index)
	vars := celtemplate.Vars{
		RepoDefault:    t.repoDefault,
		PackageDefault: t.packageDefault,
		Upstream:       objectOfRevision(r.upstream),
	}
	if t.object != nil {
		vars.Target = celtemplate.ObjectTarget(*t.object)
	} else {
		vars.Target = celtemplate.RepoPackageTarget(t.repoDefault, t.packageDefault)
	}
	eval := func(f string, expr string, withRepository bool) (string, error) {
		return r.cel.Evaluate(r.set, f, expr, withRepository, vars)
	}

	if d := tpl.Downstream; d != nil {
		if d.Repo != nil && *d.Repo != "" {
			spec.Downstream.Repo = *d.Repo
		}
		if d.RepoExpr != nil && *d.RepoExpr != "" {
			repo, err := eval(field+".downstream.repoExpr", *d.RepoExpr, false)
			if err != nil {
				return nil, err
			}
			spec.Downstream.Repo = repo
		}
	}
	repo, ok := r.repository(spec.Downstream.Repo)
	if !ok {
		return nil, fmt.Errorf("%s: downstream repository %q could not be loaded: there is no Repository of that name in namespace %s", field, spec.Downstream.Repo, r.pvs.Namespace)
	}
	vars.Repository = celtemplate.Object{Name: repo.Name, Namespace: repo.Namespace, Labels: repo.Labels, Annotations: repo.Annotations}

	if d := tpl.Downstream; d != nil {
		if d.Package != nil && *d.Package != "" {
			spec.Downstream.Package = *d.Package
		}
		if d.PackageExpr != nil && *d.PackageExpr != "" {
			pkg, err := eval(field+".downstream.packageExpr", *d.PackageExpr, true)
			if err != nil {
				return nil, err
			}
			spec.Downstream.Package = pkg
		}
	}
	if tpl.AdoptionPolicy != nil {
		spec.AdoptionPolicy = *tpl.AdoptionPolicy
	}
	if tpl.DeletionPolicy != nil {
		spec.DeletionPolicy = *tpl.DeletionPolicy
	}
	if tpl.UpgradePolicy != nil {
		spec.UpgradePolicy = *tpl.UpgradePolicy
	}
	var err error
	if spec.Labels, err = overlay(field+".labelExprs", tpl.Labels, tpl.LabelExprs, eval); err != nil {
		return nil, err
	}
	if spec.Annotations, err = overlay(field+".annotationExprs", tpl.Annotations, tpl.AnnotationExprs, eval); err != nil {
		return nil, err
	}
	if pc := tpl.PackageContext; pc != nil {
		data, err := overlay(field+".packageContext.dataExprs", pc.Data, pc.DataExprs, eval)
		if err != nil {
			return nil, err
		}
		keys := map[string]bool{}
		for _, k := range pc.RemoveKeys {
			keys[k] = true
		}
		for i, e := range pc.RemoveKeyExprs {
			k, err := eval(fmt.Sprintf("%s.packageContext.removeKeyExprs[%d]", field, i), e, true)
			if err != nil {
				return nil, err
			}
			keys[k] = true
		}
		var removeKeys []string
		for k := range keys {
			removeKeys = append(removeKeys, k)
		}
		sort.Strings(removeKeys)
		if data != nil || removeKeys != nil {
			spec.PackageContext = &configv1alpha1.PackageContext{Data: data, RemoveKeys: removeKeys}
		}
	}
	for i, inj := range tpl.Injectors {
		sel := configv1alpha1.InjectionSelector{Group: inj.Group, Version: inj.Version, Kind: inj.Kind}
		if inj.Name != nil {
			sel.Name = *inj.Name
		}
		if inj.NameExpr != nil {
			if sel.Name, err = eval(fmt.Sprintf("%s.injectors[%d].nameExpr", field, i), *inj.NameExpr, true); err != nil {
				return nil, err
			}
		}
		spec.Injectors = append(spec.Injectors, sel)
	}
	if p := tpl.Pipeline; p != nil {
		var pipeline kptfilev1.Pipeline
		if pipeline.Validators, err = renderFunctions(field+".pipeline.validators", p.Validators, eval); err != nil {
			return nil, err
		}
		if pipeline.Mutators, err = renderFunctions(field+".pipeline.mutators", p.Mutators, eval); err != nil {
			return nil, err
		}
		if len(pipeline.Validators) > 0 || len(pipeline.Mutators) > 0 {
			spec.Pipeline = &pipeline
		}
	}
	return spec, nil
}

type evalFunc func(field, expr string, withRepository bool) (string, error)

func renderFunctions(field string, fns []configv1alpha2.FunctionTemplate, eval evalFunc) ([]kptfilev1.Function, error) {
	var out []kptfilev1.Function
	for i := range fns {
		f := *fns[i].Function.DeepCopy()
		cm, err := overlay(fmt.Sprintf("%s[%d].configMapExprs", field, i), f.ConfigMap, fns[i].ConfigMapExprs, eval)
		if err != nil {
			return nil, err
		}
		f.ConfigMap = cm
		out = append(out, f)
	}
	return out, nil
}

// overlay copies a plain map and sets the entries its expressions compute;
// nil when the result is empty.
func overlay(field string, plain map[string]string, exprs []configv1alpha2.MapExpr, eval evalFunc) (map[string]string, error) {
	out := make(map[string]string, len(plain)+len(exprs))
	for k, v := range plain {
		out[k] = v
	}
	for i, me := range exprs {
		var k, v string
		var err error
		if me.Key != nil {
			k = *me.Key
		}
		if me.KeyExpr != nil {
			if k, err = eval(fmt.Sprintf("%s[%d].keyExpr", field, i), *me.KeyExpr, true); err != nil {
				return nil, err
			}
		}
		if me.Value != nil {
			v = *me.Value
		}
		if me.ValueExpr != nil {
			if v, err = eval(fmt.Sprintf("%s[%d].valueExpr", field, i), *me.ValueExpr, true); err != nil {
				return nil, err
			}
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func objectOfRevision(pr *porchv1alpha1.PackageRevision) celtemplate.Object {
	if pr == nil {
		return celtemplate.Object{}
	}
	return celtemplate.Object{Name: pr.Name, Namespace: pr.Namespace, Labels: pr.Labels, Annotations: pr.Annotations}
}
