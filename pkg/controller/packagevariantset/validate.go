package packagevariantset

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// exprCheck compiles one CEL expression; field is its path for the error.
type exprCheck func(field, expr string, withRepository bool) error

// validate returns every problem of a set's spec at once, in the reference
// controller's words where it has them. check compiles each CEL expression
// (celtemplate.Cache.Check), so that whatever can be known before a target
// is (a syntax error, an unknown variable or field, a result that is not a
// string, an estimated cost over the limit, an error whatever the target)
// is reported with its field path before anything is rendered; variantctl
// validate and expand report the same problems from the same code.
func validate(pvs *configv1alpha2.PackageVariantSet, check exprCheck) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if up := pvs.Spec.Upstream; up == nil {
		add("spec.upstream is a required field")
	} else {
		if up.Package == "" {
			add("spec.upstream.package is a required field")
		}
		if up.Repo == "" {
			add("spec.upstream.repo is a required field")
		}
		if up.Revision < 0 {
			add("spec.upstream.revision %d is invalid: give a published revision number (1 or more), or leave it out to follow the latest published revision", up.Revision)
		}
	}
	if len(pvs.Spec.Targets) == 0 {
		add("must specify at least one item in spec.targets")
	}
	for i := range pvs.Spec.Targets {
		errs = append(errs, validateTarget(i, &pvs.Spec.Targets[i], check)...)
	}
	return errs
}

func validateTarget(i int, t *configv1alpha2.Target, check exprCheck) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	count := 0
	if t.Repositories != nil {
		count++
		if len(t.Repositories) == 0 {
			add("spec.targets[%d].repositories must not be an empty list if specified", i)
		}
		for j, r := range t.Repositories {
			if r.Name == "" {
				add("spec.targets[%d].repositories[%d].name cannot be empty", i, j)
			}
			for k, pn := range r.PackageNames {
				if pn == "" {
					add("spec.targets[%d].repositories[%d].packageNames[%d] cannot be empty", i, j, k)
				}
			}
		}
	}
	if s := t.RepositorySelector; s != nil {
		count++
		if _, err := metav1.LabelSelectorAsSelector(&s.LabelSelector); err != nil {
			add("spec.targets[%d].repositorySelector is not a valid label selector: %v", i, err)
		}
		for k, pn := range s.PackageNames {
			if pn == "" {
				add("spec.targets[%d].repositorySelector.packageNames[%d] cannot be empty", i, k)
			}
		}
	}
	if s := t.ObjectSelector; s != nil {
		count++
		if s.APIVersion == "" {
			add("spec.targets[%d].objectselector.apiVersion cannot be empty", i)
		}
		if s.Kind == "" {
			add("spec.targets[%d].objectselector.kind cannot be empty", i)
		}
		if _, err := metav1.LabelSelectorAsSelector(&s.LabelSelector); err != nil {
			add("spec.targets[%d].objectSelector is not a valid label selector: %v", i, err)
		}
		if s.Name != nil && *s.Name == "" {
			add("spec.targets[%d].objectSelector.name cannot be empty if specified", i)
		}
		for k, pn := range s.PackageNames {
			if pn == "" {
				add("spec.targets[%d].objectSelector.packageNames[%d] cannot be empty", i, k)
			}
		}
	}
	if count != 1 {
		add("spec.targets[%d] must specify one of `repositories`, `repositorySelector`, or `objectSelector`", i)
	}
	if t.Template != nil {
		errs = append(errs, validateTemplate(t.Template, fmt.Sprintf("spec.targets[%d].template", i), check)...)
	}
	return errs
}

func validateTemplate(tpl *configv1alpha2.PackageVariantTemplate, field string, check exprCheck) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	expr := func(f string, e *string, withRepository bool) {
		if e == nil {
			return
		}
		if err := check(f, *e, withRepository); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if p := tpl.AdoptionPolicy; p != nil && *p != configv1alpha1.AdoptionPolicyAdoptNone && *p != configv1alpha1.AdoptionPolicyAdoptExisting {
		add("%s.adoptionPolicy can only be %q or %q", field, configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting)
	}
	if p := tpl.DeletionPolicy; p != nil && *p != configv1alpha1.DeletionPolicyOrphan && *p != configv1alpha1.DeletionPolicyDelete {
		add("%s.deletionPolicy can only be %q or %q", field, configv1alpha1.DeletionPolicyOrphan, configv1alpha1.DeletionPolicyDelete)
	}
	if p := tpl.UpgradePolicy; p != nil && *p != configv1alpha1.UpgradePolicyAutomatic && *p != configv1alpha1.UpgradePolicyManual {
		add("%s.upgradePolicy can only be %q or %q", field, configv1alpha1.UpgradePolicyAutomatic, configv1alpha1.UpgradePolicyManual)
	}
	if d := tpl.Downstream; d != nil {
		if d.Repo != nil && d.RepoExpr != nil {
			add("%s may specify only one of `downstream.repo` and `downstream.repoExpr`", field)
		}
		if d.Package != nil && d.PackageExpr != nil {
			add("%s may specify only one of `downstream.package` and `downstream.packageExpr`", field)
		}
		expr(field+".downstream.repoExpr", d.RepoExpr, false)
		expr(field+".downstream.packageExpr", d.PackageExpr, true)
	}
	mapExprs := func(f string, m []configv1alpha2.MapExpr) {
		for j := range m {
			me := &m[j]
			if me.Key != nil && me.KeyExpr != nil {
				add("%s[%d] may specify only one of `key` and `keyExpr`", f, j)
			}
			if me.Value != nil && me.ValueExpr != nil {
				add("%s[%d] may specify only one of `value` and `valueExpr`", f, j)
			}
			if me.Key == nil && me.KeyExpr == nil {
				add("%s[%d] must specify either `key` or `keyExpr`", f, j)
			}
			expr(fmt.Sprintf("%s[%d].keyExpr", f, j), me.KeyExpr, true)
			expr(fmt.Sprintf("%s[%d].valueExpr", f, j), me.ValueExpr, true)
		}
	}
	mapExprs(field+".labelExprs", tpl.LabelExprs)
	mapExprs(field+".annotationExprs", tpl.AnnotationExprs)
	if pc := tpl.PackageContext; pc != nil {
		mapExprs(field+".packageContext.dataExprs", pc.DataExprs)
		for j := range pc.RemoveKeyExprs {
			expr(fmt.Sprintf("%s.packageContext.removeKeyExprs[%d]", field, j), &pc.RemoveKeyExprs[j], true)
		}
	}
	for j, inj := range tpl.Injectors {
		if inj.Name != nil && inj.NameExpr != nil {
			add("%s.injectors[%d] may specify only one of `name` and `nameExpr`", field, j)
		}
		if inj.Name == nil && inj.NameExpr == nil {
			add("%s.injectors[%d] must specify either `name` or `nameExpr`", field, j)
		}
		expr(fmt.Sprintf("%s.injectors[%d].nameExpr", field, j), inj.NameExpr, true)
	}
	if p := tpl.Pipeline; p != nil {
		functions := func(kind string, fns []configv1alpha2.FunctionTemplate) {
			for j := range fns {
				f := fmt.Sprintf("%s.pipeline.%s[%d]", field, kind, j)
				if fns[j].Image == "" && fns[j].Exec == "" {
					add("%s.image must not be empty", f)
				}
				mapExprs(f+".configMapExprs", fns[j].ConfigMapExprs)
			}
		}
		functions("validators", p.Validators)
		functions("mutators", p.Mutators)
	}
	return errs
}
