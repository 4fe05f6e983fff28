package helper

import (
	"slices"
	"strings"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// Approval is the value of a set's ApproveWaveAnnotation: wave of the
// rollout ID. Approving a wave approves the waves before it in the same
// rollout; an approval naming another rollout approves nothing.
type Approval struct {
	Wave string
	ID   string
}

// String is the annotation's value, "<wave>@<id>".
func (a Approval) String() string { return a.Wave + "@" + a.ID }

// ParseApproval reads an annotation value; ok is false when it is not
// "<wave>@<id>" with both parts.
func ParseApproval(v string) (a Approval, ok bool) {
	wave, id, found := strings.Cut(v, "@")
	if !found || wave == "" || id == "" {
		return Approval{}, false
	}
	return Approval{Wave: wave, ID: id}, true
}

// Approves reports whether the approval a lets wave i of spec start in
// the rollout id: it names that wave or a later one, of the same rollout.
func (a Approval) Approves(spec *configv1alpha2.Rollout, id string, i int) bool {
	if a.ID != id || spec == nil {
		return false
	}
	j := slices.IndexFunc(spec.Waves, func(w configv1alpha2.Wave) bool { return w.Name == a.Wave })
	return j >= i
}

// Skip is the value of a set's SkipVariantsAnnotation: variants the
// rollout ID passes over.
type Skip struct {
	Variants []string
	ID       string
}

// String is the annotation's value, "<variant>,<variant>@<id>".
func (s Skip) String() string { return strings.Join(s.Variants, ",") + "@" + s.ID }

// ParseSkip reads an annotation value; ok is false when it is not
// "<variant>[,<variant>...]@<id>" with a variant and an id (empty names
// between commas are dropped).
func ParseSkip(v string) (s Skip, ok bool) {
	names, id, found := strings.Cut(v, "@")
	if !found || id == "" {
		return Skip{}, false
	}
	for n := range strings.SplitSeq(names, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(s.Variants, n) {
			s.Variants = append(s.Variants, n)
		}
	}
	if len(s.Variants) == 0 {
		return Skip{}, false
	}
	s.ID = id
	return s, true
}
