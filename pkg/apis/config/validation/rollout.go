package validation

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/health"
)

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
