package validation

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/porch-variants/variant-controller/pkg/health"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// ExprChecker compiles one CEL expression of a template, found at fldPath,
// without evaluating it; withRepository says whether the repository
// variable is declared for it. The error names the field.
// celtemplate.Cache.Check is the checker of the controller and variantctl.
type ExprChecker func(fldPath *field.Path, expr string, withRepository bool) error

// ValidatePackageVariantSet returns every problem of a set's spec at once,
// in the reference controller's words where it has them. check compiles
// each CEL expression, so that whatever can be known before a target is (a
// syntax error, an unknown variable or field, a result that is not a
// string, an estimated cost over the limit, an error whatever the target)
// is reported with its field path before anything is rendered.
func ValidatePackageVariantSet(pvs *configv1alpha2.PackageVariantSet, check ExprChecker) field.ErrorList {
	var errs field.ErrorList
	upPath := field.NewPath("spec", "upstream")
	if up := pvs.Spec.Upstream; up == nil {
		errs = append(errs, field.Required(upPath, upPath.String()+" is a required field"))
	} else {
		if path := upPath.Child("package"); up.Package == "" {
			errs = append(errs, field.Required(path, path.String()+" is a required field"))
		}
		if path := upPath.Child("repo"); up.Repo == "" {
			errs = append(errs, field.Required(path, path.String()+" is a required field"))
		}
		if path := upPath.Child("revision"); up.Revision < 0 {
			errs = append(errs, field.Invalid(path, up.Revision, fmt.Sprintf(
				"%s %d is invalid: give a published revision number (1 or more), or leave it out to follow the latest published revision", path, up.Revision)))
		}
	}
	if path := field.NewPath("spec", "targets"); len(pvs.Spec.Targets) == 0 {
		errs = append(errs, field.Required(path, "must specify at least one item in "+path.String()))
	}
	for i := range pvs.Spec.Targets {
		errs = append(errs, validateTarget(&pvs.Spec.Targets[i], confighelper.TargetPath(i), check)...)
	}
	errs = append(errs, validateRollout(pvs.Spec.Rollout, field.NewPath("spec", "rollout"))...)
	return errs
}

func validateTarget(t *configv1alpha2.Target, fldPath *field.Path, check ExprChecker) field.ErrorList {
	var errs field.ErrorList
	count := 0
	if t.Repositories != nil {
		count++
		path := fldPath.Child("repositories")
		if len(t.Repositories) == 0 {
			errs = append(errs, field.Required(path, path.String()+" must not be an empty list if specified"))
		}
		for j, r := range t.Repositories {
			if path := path.Index(j).Child("name"); r.Name == "" {
				errs = append(errs, field.Required(path, path.String()+" cannot be empty"))
			}
			errs = append(errs, validatePackageNames(r.PackageNames, path.Index(j).Child("packageNames"))...)
		}
	}
	if s := t.RepositorySelector; s != nil {
		count++
		path := fldPath.Child("repositorySelector")
		errs = append(errs, validateLabelSelector(&s.LabelSelector, path)...)
		errs = append(errs, validatePackageNames(s.PackageNames, path.Child("packageNames"))...)
	}
	if s := t.ObjectSelector; s != nil {
		count++
		path := fldPath.Child("objectSelector")
		// The reference controller's messages spell the field in lower
		// case here.
		if s.APIVersion == "" {
			errs = append(errs, field.Required(path.Child("apiVersion"), fldPath.String()+".objectselector.apiVersion cannot be empty"))
		}
		if s.Kind == "" {
			errs = append(errs, field.Required(path.Child("kind"), fldPath.String()+".objectselector.kind cannot be empty"))
		}
		if gv, err := schema.ParseGroupVersion(s.APIVersion); err == nil && s.Kind != "" {
			if why := confighelper.NeverRead(gv.WithKind(s.Kind).GroupKind()); why != "" {
				errs = append(errs, field.Forbidden(path.Child("kind"), path.Child("kind").String()+": "+why))
			}
		}
		errs = append(errs, validateLabelSelector(&s.LabelSelector, path)...)
		if path := path.Child("name"); s.Name != nil && *s.Name == "" {
			errs = append(errs, field.Invalid(path, *s.Name, path.String()+" cannot be empty if specified"))
		}
		errs = append(errs, validatePackageNames(s.PackageNames, path.Child("packageNames"))...)
	}
	const oneOf = " must specify one of `repositories`, `repositorySelector`, or `objectSelector`"
	switch {
	case count == 0:
		errs = append(errs, field.Required(fldPath, fldPath.String()+oneOf))
	case count > 1:
		errs = append(errs, field.Forbidden(fldPath, fldPath.String()+oneOf))
	}
	errs = append(errs, validateTemplate(confighelper.WalkTemplate(t.Template, fldPath.Child("template")), check)...)
	return errs
}

func validatePackageNames(names []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, pn := range names {
		if path := fldPath.Index(k); pn == "" {
			errs = append(errs, field.Required(path, path.String()+" cannot be empty"))
		}
	}
	return errs
}

func validateLabelSelector(s *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf("%s is not a valid label selector: %v", fldPath, err))}
	}
	return nil
}

// validateTemplate checks a template taken apart by WalkTemplate (nil when
// the target has none): its policies, that each string is given once, and
// that its expressions compile.
func validateTemplate(t *confighelper.Template, check ExprChecker) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	expr := func(s confighelper.String) {
		if s.Expr == nil {
			return
		}
		if err := check(s.ExprPath, *s.Expr, s.WithRepository); err != nil {
			errs = append(errs, field.Invalid(s.ExprPath, *s.Expr, err.Error()))
		}
	}
	// onlyOne refuses a string given both as written and as an expression;
	// owner is where the message puts the blame, names how it names the two.
	onlyOne := func(s confighelper.String, owner *field.Path, name string) {
		if s.Value != nil && s.Expr != nil {
			errs = append(errs, field.Forbidden(s.ExprPath, fmt.Sprintf("%s may specify only one of `%s` and `%sExpr`", owner, name, name)))
		}
	}
	required := func(s confighelper.String, owner *field.Path, name string) {
		if s.Value == nil && s.Expr == nil {
			errs = append(errs, field.Required(s.Path, fmt.Sprintf("%s must specify either `%s` or `%sExpr`", owner, name, name)))
		}
	}
	mapExprs := func(m confighelper.Map) {
		for _, e := range m.Entries {
			onlyOne(e.Key, e.Path, "key")
			onlyOne(e.Value, e.Path, "value")
			required(e.Key, e.Path, "key")
			expr(e.Key)
			expr(e.Value)
		}
	}

	// A variant's adoption policy is refused in the reference
	// PackageVariant controller's words ("... field can only be"), which
	// tooling written against it matches; a template's policies and
	// functions have no reference wording and keep the set's own ("... can
	// only be", "image must not be empty"), which the tests pin.
	tpl := t.Source
	if p, path := tpl.AdoptionPolicy, t.Path.Child("adoptionPolicy"); p != nil && *p != configv1alpha1.AdoptionPolicyAdoptNone && *p != configv1alpha1.AdoptionPolicyAdoptExisting {
		errs = append(errs, notSupported(path, *p, fmt.Sprintf("%s can only be %q or %q", path, configv1alpha1.AdoptionPolicyAdoptNone, configv1alpha1.AdoptionPolicyAdoptExisting)))
	}
	if p, path := tpl.DeletionPolicy, t.Path.Child("deletionPolicy"); p != nil && *p != configv1alpha1.DeletionPolicyOrphan && *p != configv1alpha1.DeletionPolicyDelete {
		errs = append(errs, notSupported(path, *p, deletionPolicyMessage(path)))
	}
	if p, path := tpl.UpgradePolicy, t.Path.Child("upgradePolicy"); p != nil && *p != configv1alpha1.UpgradePolicyAutomatic && *p != configv1alpha1.UpgradePolicyManual {
		errs = append(errs, notSupported(path, *p, upgradePolicyMessage(path)))
	}
	onlyOne(t.DownstreamRepo, t.Path, "downstream.repo")
	onlyOne(t.DownstreamPackage, t.Path, "downstream.package")
	expr(t.DownstreamRepo)
	expr(t.DownstreamPackage)
	mapExprs(t.Labels)
	mapExprs(t.Annotations)
	if pc := t.PackageContext; pc != nil {
		mapExprs(pc.Data)
		for _, s := range pc.RemoveKeyExprs {
			expr(s)
		}
	}
	for _, inj := range t.Injectors {
		onlyOne(inj.Name, inj.Path, "name")
		required(inj.Name, inj.Path, "name")
		expr(inj.Name)
	}
	for _, fns := range [][]confighelper.Function{t.Validators, t.Mutators} {
		for _, fn := range fns {
			if path := fn.Path.Child("image"); fn.Template.Image == "" && fn.Template.Exec == "" {
				errs = append(errs, field.Required(path, path.String()+" must not be empty"))
			}
			mapExprs(fn.ConfigMap)
		}
	}
	return errs
}

// MaxWaves is the most waves a rollout may have; the CRD says the same
// (maxItems), which bounds the cost of its rules.
const MaxWaves = 100

// validateRollout checks a set's spec.rollout: named, unique waves with
// valid selectors, a maxConcurrent of at least one variant, a known
// approval, and no negative time or count.
func validateRollout(r *configv1alpha2.Rollout, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	wavesPath := fldPath.Child("waves")
	switch {
	case len(r.Waves) == 0:
		errs = append(errs, standard(field.Required(wavesPath, "a rollout needs at least one wave")))
	case len(r.Waves) > MaxWaves:
		errs = append(errs, standard(field.TooMany(wavesPath, len(r.Waves), MaxWaves)))
	}
	seen := map[string]bool{}
	for i, w := range r.Waves {
		path := wavesPath.Index(i)
		switch {
		case w.Name == "":
			errs = append(errs, standard(field.Required(path.Child("name"), "every wave needs a name")))
		case seen[w.Name]:
			errs = append(errs, standard(field.Duplicate(path.Child("name"), w.Name)))
		default:
			for _, msg := range utilvalidation.IsDNS1123Label(w.Name) {
				errs = append(errs, standard(field.Invalid(path.Child("name"), w.Name, msg)))
			}
		}
		seen[w.Name] = true
		if w.Selector != nil {
			errs = append(errs, validateLabelSelector(w.Selector, path.Child("selector"))...)
		}
		if w.RepositorySelector != nil {
			errs = append(errs, validateLabelSelector(w.RepositorySelector, path.Child("repositorySelector"))...)
		}
		if w.MaxConcurrent != nil {
			if msg := maxConcurrentProblem(*w.MaxConcurrent); msg != "" {
				errs = append(errs, standard(field.Invalid(path.Child("maxConcurrent"), w.MaxConcurrent.String(), msg)))
			}
		}
		switch w.Approval {
		case "", configv1alpha2.WaveApprovalAutomatic, configv1alpha2.WaveApprovalManual:
		default:
			errs = append(errs, standard(field.NotSupported(path.Child("approval"), w.Approval,
				[]string{string(configv1alpha2.WaveApprovalAutomatic), string(configv1alpha2.WaveApprovalManual)})))
		}
	}
	errs = append(errs, validateHealth(r.Health, fldPath.Child("health"))...)
	switch r.Creates {
	case "", configv1alpha2.RolloutCreatesImmediate, configv1alpha2.RolloutCreatesInWaves:
	default:
		errs = append(errs, standard(field.NotSupported(fldPath.Child("creates"), r.Creates,
			[]string{string(configv1alpha2.RolloutCreatesImmediate), string(configv1alpha2.RolloutCreatesInWaves)})))
	}
	for _, f := range []struct {
		name  string
		value *int32
	}{{"soakSeconds", r.SoakSeconds}, {"maxFailures", r.MaxFailures}} {
		if f.value != nil && *f.value < 0 {
			errs = append(errs, standard(field.Invalid(fldPath.Child(f.name), *f.value, "must be 0 or more")))
		}
	}
	if v := r.ProgressDeadlineSeconds; v != nil && *v < 1 {
		errs = append(errs, standard(field.Invalid(fldPath.Child("progressDeadlineSeconds"), *v, "must be 1 or more (leave it out for no deadline)")))
	}
	return errs
}

// percentage is a maxConcurrent written as a percentage; the CRD's rule on
// the field is the same expression.
var percentage = regexp.MustCompile(`^(100|[1-9][0-9]?)%$`)

// maxConcurrentProblem says what is wrong with a wave's maxConcurrent: a
// whole number of variants (1 or more) or a percentage of the wave
// ("1%" to "100%"). A number written as a string ("5") is refused, as
// Kubernetes refuses it in a Deployment's maxSurge: it is neither, and the
// rollout would take it for one variant at a time.
func maxConcurrentProblem(v intstr.IntOrString) string {
	switch {
	case v.Type == intstr.Int && v.IntVal < 1:
		return fmt.Sprintf("must be a number of variants (1 or more) or a percentage of the wave such as \"25%%\", not \"%d\"", v.IntVal)
	case v.Type == intstr.Int, percentage.MatchString(v.StrVal):
		return ""
	case strings.HasSuffix(v.StrVal, "%"):
		return fmt.Sprintf("a percentage must be a whole number from 1%% to 100%%, not %q", v.StrVal)
	}
	if _, err := strconv.Atoi(v.StrVal); err == nil {
		return fmt.Sprintf("a number of variants is written without quotes (maxConcurrent: %s), a percentage with %% (\"25%%\"), not %q", v.StrVal, v.StrVal)
	}
	return fmt.Sprintf("must be a number of variants (1 or more) or a percentage of the wave such as \"25%%\", not %q", v.StrVal)
}

// validateHealth checks a rollout's health check: a kind, and expressions
// that compile.
func validateHealth(h *configv1alpha2.RolloutHealth, fldPath *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	if h.APIVersion == "" {
		errs = append(errs, standard(field.Required(fldPath.Child("apiVersion"), "the apiVersion of the objects that say what each variant's cluster runs")))
	} else if _, err := schema.ParseGroupVersion(h.APIVersion); err != nil {
		errs = append(errs, standard(field.Invalid(fldPath.Child("apiVersion"), h.APIVersion, err.Error())))
	}
	if h.Namespace != "" {
		for _, msg := range utilvalidation.IsDNS1123Label(h.Namespace) {
			errs = append(errs, standard(field.Invalid(fldPath.Child("namespace"), h.Namespace, msg)))
		}
	}
	if h.Kind == "" {
		errs = append(errs, standard(field.Required(fldPath.Child("kind"), "the kind of the objects that say what each variant's cluster runs")))
	}
	_, nameErrs := health.CompileName(h.NameExpr, fldPath.Child("nameExpr"))
	_, exprErrs := health.Compile(health.Exprs{Current: h.Current, InProgress: h.InProgress, Failed: h.Failed}, fldPath)
	for _, e := range append(nameErrs, exprErrs...) {
		errs = append(errs, standard(e))
	}
	return errs
}

// standard makes the Detail of an error that has no reference wording the
// error's whole standard text ("<field>: <type>: <detail>"): the rules of
// a rollout and its health check, and a package context's reserved keys.
func standard(e *field.Error) *field.Error {
	e.Detail = e.Error()
	return e
}
