package validation

import (
	"fmt"
	"strconv"
	"strings"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// validateRollout checks a set's spec.rollout: named, unique waves with
// valid selectors, a maxConcurrent of at least one variant, a known
// approval, and no negative time or count.
func validateRollout(r *configv1alpha2.Rollout, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	wavesPath := fldPath.Child("waves")
	if len(r.Waves) == 0 {
		errs = append(errs, standard(field.Required(wavesPath, "a rollout needs at least one wave")))
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
		if w.MaxConcurrent != nil {
			if msg := maxConcurrentProblem(w.MaxConcurrent.String()); msg != "" {
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

// maxConcurrentProblem says what is wrong with a wave's maxConcurrent: a
// whole number of variants (1 or more) or a percentage of the wave
// ("1%" to "100%").
func maxConcurrentProblem(v string) string {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 100 {
			return fmt.Sprintf("a percentage must be a whole number from 1%% to 100%%, not %q", v)
		}
		return ""
	}
	if n, err := strconv.Atoi(v); err != nil || n < 1 {
		return fmt.Sprintf("must be a number of variants (1 or more) or a percentage of the wave such as \"25%%\", not %q", v)
	}
	return ""
}
