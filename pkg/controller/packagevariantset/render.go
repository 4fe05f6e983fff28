package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"sort"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
)

// renderer renders the templates of one set generation.
type renderer struct {
	cel *celtemplate.Cache
	// budget is what this sync's evaluations may spend, and the context
	// they stop on.
	budget   *celtemplate.Budget
	set      celtemplate.SetKey
	pvs      *configv1alpha2.PackageVariantSet
	upstream *porchv1alpha1.PackageRevision
	// repository looks a downstream Repository up by name (from the cache).
	repository func(name string) (*configv1alpha1.Repository, bool)
	// loaded is the downstream Repository the last render looked up (""
	// when it stopped before).
	loaded string
}

// repositoryVersion is the resourceVersion of the downstream Repository
// of that name ("" when there is none, or no name).
func (r *renderer) repositoryVersion(name string) string {
	if name == "" {
		return ""
	}
	repo, ok := r.repository(name)
	if !ok {
		return ""
	}
	return repo.ResourceVersion
}

// variantUpstream is the upstream of every variant of the set: the set's,
// as written; with a rollout, pinned to the revision the set resolved, so
// that each variant keeps the revision its wave last opened it for (one
// following the latest revision would take every new one at once).
func (r *renderer) variantUpstream() *configv1alpha1.Upstream {
	up := *r.pvs.Spec.Upstream
	if r.pvs.Spec.Rollout != nil {
		up.Revision = r.upstream.Spec.Revision
	}
	return &up
}

// render computes the spec of the variant for one target, in the order
// the design document gives: downstream.repoExpr first (without the
// repository variable), then the downstream Repository is loaded and every
// other expression evaluated. The upstream is copied as written, so each
// variant resolves (and follows) it itself; with a rollout, it names the
// revision the set resolved.
func (r *renderer) render(t target) (*configv1alpha1.PackageVariantSpec, error) {
	spec := &configv1alpha1.PackageVariantSpec{
		Upstream:   r.variantUpstream(),
		Downstream: &configv1alpha1.Downstream{Repo: t.repoDefault, Package: t.packageDefault},
	}
	tpl := confighelper.WalkTemplate(t.template, confighelper.TemplatePath(t.index))
	if tpl == nil {
		return spec, nil
	}
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
	eval := func(s confighelper.String) (string, error) {
		return r.cel.Evaluate(r.budget, r.set, s.ExprPath.String(), *s.Expr, s.WithRepository, vars)
	}

	var err error
	if spec.Downstream.Repo, err = downstream(tpl.DownstreamRepo, spec.Downstream.Repo, eval); err != nil {
		return nil, err
	}
	r.loaded = spec.Downstream.Repo
	repo, ok := r.repository(spec.Downstream.Repo)
	if !ok {
		return nil, fmt.Errorf("%s: downstream repository %q could not be loaded: there is no Repository of that name in namespace %s", tpl.Path, spec.Downstream.Repo, r.pvs.Namespace)
	}
	vars.Repository = celtemplate.Object{Name: repo.Name, Namespace: repo.Namespace, Labels: repo.Labels, Annotations: repo.Annotations}

	if spec.Downstream.Package, err = downstream(tpl.DownstreamPackage, spec.Downstream.Package, eval); err != nil {
		return nil, err
	}
	copyPolicies(spec, tpl)
	if spec.Labels, err = overlay(tpl.Labels, eval); err != nil {
		return nil, err
	}
	if spec.Annotations, err = overlay(tpl.Annotations, eval); err != nil {
		return nil, err
	}
	if spec.PackageContext, err = renderPackageContext(tpl.PackageContext, eval); err != nil {
		return nil, err
	}
	for _, inj := range tpl.Injectors {
		sel := configv1alpha1.InjectionSelector{Group: inj.Selector.Group, Version: inj.Selector.Version, Kind: inj.Selector.Kind}
		if sel.Name, err = value(inj.Name, eval); err != nil {
			return nil, err
		}
		spec.Injectors = append(spec.Injectors, sel)
	}
	if spec.Pipeline, err = renderPipeline(tpl, eval); err != nil {
		return nil, err
	}
	return spec, nil
}

// copyPolicies copies the policies and the ServiceAccount the template
// gives (no expressions: the API has none for them).
func copyPolicies(spec *configv1alpha1.PackageVariantSpec, tpl *confighelper.Template) {
	if p := tpl.Source.AdoptionPolicy; p != nil {
		spec.AdoptionPolicy = *p
	}
	if p := tpl.Source.DeletionPolicy; p != nil {
		spec.DeletionPolicy = *p
	}
	if p := tpl.Source.UpgradePolicy; p != nil {
		spec.UpgradePolicy = *p
	}
	if a := tpl.Source.ServiceAccountName; a != nil {
		spec.ServiceAccountName = *a
	}
}

// renderPackageContext is the package context of the spec: its data
// overlaid with what the expressions compute, and the keys to remove,
// written and computed, sorted and once each; nil when it has neither.
func renderPackageContext(pc *confighelper.PackageContext, eval evalFunc) (*configv1alpha1.PackageContext, error) {
	if pc == nil {
		return nil, nil
	}
	data, err := overlay(pc.Data, eval)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for _, k := range pc.RemoveKeys {
		keys[k] = true
	}
	for _, e := range pc.RemoveKeyExprs {
		k, err := eval(e)
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
	if data == nil && removeKeys == nil {
		return nil, nil
	}
	return &configv1alpha1.PackageContext{Data: data, RemoveKeys: removeKeys}, nil
}

// renderPipeline is the spec's pipeline: the template's validators and
// mutators with their configMaps rendered; nil when it has none.
func renderPipeline(tpl *confighelper.Template, eval evalFunc) (*kptfilev1.Pipeline, error) {
	var pipeline kptfilev1.Pipeline
	var err error
	if pipeline.Validators, err = renderFunctions(tpl.Validators, eval); err != nil {
		return nil, err
	}
	if pipeline.Mutators, err = renderFunctions(tpl.Mutators, eval); err != nil {
		return nil, err
	}
	if len(pipeline.Validators) == 0 && len(pipeline.Mutators) == 0 {
		return nil, nil
	}
	return &pipeline, nil
}

type evalFunc func(s confighelper.String) (string, error)

// value is a string of the spec: its expression's result when it has one,
// else the value as written ("" when neither is given).
func value(s confighelper.String, eval evalFunc) (string, error) {
	if s.Expr != nil {
		return eval(s)
	}
	if s.Value != nil {
		return *s.Value, nil
	}
	return "", nil
}

// downstream is the downstream repository or package: def unless the
// template gives a non-empty value or expression.
func downstream(s confighelper.String, def string, eval evalFunc) (string, error) {
	if s.Expr != nil && *s.Expr != "" {
		return eval(s)
	}
	if s.Value != nil && *s.Value != "" {
		return *s.Value, nil
	}
	return def, nil
}

func renderFunctions(fns []confighelper.Function, eval evalFunc) ([]kptfilev1.Function, error) {
	var out []kptfilev1.Function
	for _, fn := range fns {
		f := *fn.Template.Function.DeepCopy()
		cm, err := overlay(fn.ConfigMap, eval)
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
func overlay(m confighelper.Map, eval evalFunc) (map[string]string, error) {
	out := make(map[string]string, len(m.Plain)+len(m.Entries))
	for k, v := range m.Plain {
		out[k] = v
	}
	for _, e := range m.Entries {
		k, err := value(e.Key, eval)
		if err != nil {
			return nil, err
		}
		v, err := value(e.Value, eval)
		if err != nil {
			return nil, err
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

// stopsRendering returns err when it ends the rendering of the whole set
// rather than of one target.
func stopsRendering(err error) error {
	var overBudget *celtemplate.BudgetError
	if errors.As(err, &overBudget) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
