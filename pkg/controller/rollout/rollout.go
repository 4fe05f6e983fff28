// Package rollout decides how a PackageVariantSet's change reaches its
// variants when the set has spec.rollout: which wave has started, which
// variants get the change now, the status of every wave, the RolledOut
// condition and the events to send. It is pure: the set's sync reads the
// caches, hands the plain facts here and writes what comes back, and
// variantctl's preview runs the same code.
//
// A change is finished for a variant when the variant carries it and has
// published it (its Published condition), and, with a health check, its
// cluster runs it healthy (the caller judges that). Waves run one at a time: a
// started wave opens the change for at most maxConcurrent of its variants
// at once, in name order, and opens the next as each finishes. A wave whose
// variants all carry the change and finished it (or failed, within
// maxFailures) is finished; after soakSeconds the next wave starts, once
// approved if it is Manual. A finished wave stays finished for its rollout
// (a variant of it that changes again later is still opened within its
// maxConcurrent, but does not hold back the waves after it).
package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// Condition type and reasons of a set with a rollout.
const (
	// ConditionRolledOut is True when every variant of the set carries the
	// set's current change and has published it.
	ConditionRolledOut = "RolledOut"

	ReasonRolledOut                = "RolledOut"
	ReasonWaveProgressing          = "WaveProgressing"
	ReasonWaitingForApproval       = "WaitingForApproval"
	ReasonSoaking                  = "Soaking"
	ReasonPaused                   = "Paused"
	ReasonHalted                   = "Halted"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonNoVariants: the set has no variant to roll out (its targets
	// select nothing), which is never "rolled out".
	ReasonNoVariants = "NoVariants"
	// ReasonVariantsWithoutWave: every wave finished, but some variants
	// are in no wave (held on what they carry).
	ReasonVariantsWithoutWave = "VariantsWithoutWave"
)

// Event reasons.
const (
	EventWaveStarted              = "WaveStarted"
	EventWaveFinished             = "WaveFinished"
	EventRolloutComplete          = "RolloutComplete"
	EventRolloutHalted            = "RolloutHalted"
	EventProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// EventWaveEmpty (Warning): a wave started with no variant in it.
	EventWaveEmpty = "WaveEmpty"
	// EventWaveResumed: ResumeWaveAnnotation resumed a halted wave.
	EventWaveResumed = "WaveResumed"
	// EventVariantsWithoutWave (Warning): the waves finished and left
	// variants no wave takes.
	EventVariantsWithoutWave = "VariantsWithoutWave"
)

// Variant is what a rollout knows of one variant the set wants.
type Variant struct {
	// Name of the PackageVariant.
	Name string
	// Labels the set gives it (spec.labels) and the labels of its
	// downstream Repository: they decide its wave.
	Labels, RepositoryLabels map[string]string
	// Wave, when not nil, is the index of the variant's wave in
	// spec.rollout.waves as its labels decide it (-1: none), worked out by
	// the caller (with a Matcher, once for as long as the labels and the
	// spec stay the same); nil: Compute works it out.
	Wave *int
	// New: it has no PackageVariant yet (its target is new).
	New bool
	// Updated: it carries the change, or will when it is created now (a
	// new variant is, unless creates go in waves or the rollout is paused:
	// CreatesNow).
	Updated bool
	// Finished: it carries the change and has published it.
	Finished bool
	// Failed names why the variant failed (something a person must fix);
	// empty when it has not.
	Failed string
	// WaitingFor names the draft or proposal of the variant that waits for
	// approval, for messages; empty when none does.
	WaitingFor string
	// Blocked says why the variant's change cannot be published by the
	// rules (its draft's readiness gates are not met), since BlockedSince;
	// empty when nothing blocks it. Past spec.rollout.progressDeadlineSeconds
	// (counted from BlockedSince, or from its wave's start if later) a
	// blocked variant is failed: nobody is going to approve it.
	Blocked      string
	BlockedSince time.Time
	// Skipped: SkipVariantsAnnotation passes it over in this rollout (set
	// by the decision, from Input.Skip).
	Skipped bool
}

// Input is everything a rollout decision depends on.
type Input struct {
	// Spec is the set's spec.rollout.
	Spec *configv1alpha2.Rollout
	// Previous is the set's status.rollout as last written (nil if none).
	Previous *configv1alpha2.RolloutStatus
	// PreviousReason is the reason of the set's RolledOut condition as last
	// written: an event is sent only when it changes.
	PreviousReason string
	// Namespace and Set name the set, for the messages that tell a person
	// what to run.
	Namespace, Set string
	// ID names the change being rolled out (see ID).
	ID string
	// UpstreamRevision is the upstream revision being rolled out.
	UpstreamRevision int
	// Approval, Skip and Resume are the values of the set's
	// ApproveWaveAnnotation, SkipVariantsAnnotation and
	// ResumeWaveAnnotation.
	Approval, Skip, Resume string
	// Variants are every variant the set wants, in any order (Compute;
	// Decide takes them grouped instead).
	Variants []Variant
	// HeldDeletes is how many variants of vanished targets the set keeps
	// because the rollout is paused, for the message.
	HeldDeletes int
	// Now is the time of the decision.
	Now time.Time
}

// States counts the variants of a wave by state: pending (without the
// change), open (with it, not published), finished, failed, skipped.
type States struct {
	Pending, Open, Finished, Failed, Skipped int
}

// Condition is the RolledOut condition's status, reason and message.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Event is an event to send on the set.
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Plan is a rollout decision.
type Plan struct {
	// Open are the variants that get the change now (they do not carry it
	// yet). The others that do not carry it keep the spec they have.
	Open []string
	// Status is the set's new status.rollout.
	Status *configv1alpha2.RolloutStatus
	// States are the variants of each wave (in the order of Status.Waves)
	// by state, each variant counted once.
	States []States
	// Condition is the set's RolledOut condition.
	Condition Condition
	// Events happened in this decision (a wave started or finished...).
	Events []Event
	// RequeueAfter is when the decision changes with time alone (a soak
	// ends, a deadline passes); 0 when it does not.
	RequeueAfter time.Duration
}

// CreatesNow reports whether a rollout creates the variants of new targets
// at once (Variant.Updated), rather than when their wave opens them: not
// when creates go in waves, not while paused.
func CreatesNow(spec *configv1alpha2.Rollout) bool {
	return spec.Creates != configv1alpha2.RolloutCreatesInWaves && !spec.Paused
}

// ID names a change: a short hash of the upstream revision and what the set
// renders its variants from (the targets' templates, never their selectors:
// a target that only selects more repositories makes no change to roll out).
func ID(upstreamRevision int, templates []*configv1alpha2.PackageVariantTemplate) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", upstreamRevision)
	// Marshalling the API types cannot fail: they hold strings, maps and
	// slices only.
	b, _ := json.Marshal(templates)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// Grouping is the variants of a rollout by wave.
type Grouping struct {
	// Waves are the variants of each wave of spec.rollout.waves, in name
	// order.
	Waves [][]Variant
	// None are the variants no wave takes, in name order: they are held on
	// what they carry, and listed in the status.
	None []Variant
}

// Waves puts each variant in its wave: the first whose selectors match
// it (Matcher.Wave), or in none.
func Waves(spec *configv1alpha2.Rollout, variants []Variant) (Grouping, error) {
	m, err := NewMatcher(spec)
	if err != nil {
		return Grouping{}, err
	}
	return m.Waves(variants), nil
}

// Waves is the package's Waves with m's selectors: a variant whose Wave
// is given is put there, any other where m.Wave says.
func (m *Matcher) Waves(variants []Variant) Grouping {
	g := Grouping{Waves: make([][]Variant, len(m.selectors))}
	for _, v := range variants {
		i := 0
		if v.Wave != nil {
			i = *v.Wave
		} else {
			i = m.Wave(v.Labels, v.RepositoryLabels)
		}
		if i < 0 {
			g.None = append(g.None, v)
			continue
		}
		g.Waves[i] = append(g.Waves[i], v)
	}
	byName := func(a, b Variant) int { return strings.Compare(a.Name, b.Name) }
	for _, w := range g.Waves {
		slices.SortFunc(w, byName)
	}
	slices.SortFunc(g.None, byName)
	return g
}

// Matcher tells a variant's wave from its labels and its Repository's.
type Matcher struct {
	selectors, repositories []labels.Selector
}

// NewMatcher compiles the waves' selectors of a rollout; a selector not
// given matches everything.
func NewMatcher(spec *configv1alpha2.Rollout) (*Matcher, error) {
	m := &Matcher{selectors: make([]labels.Selector, len(spec.Waves)), repositories: make([]labels.Selector, len(spec.Waves))}
	compile := func(sel *metav1.LabelSelector, path string) (labels.Selector, error) {
		if sel == nil {
			return labels.Everything(), nil
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return s, nil
	}
	for i, w := range spec.Waves {
		var err error
		if m.selectors[i], err = compile(w.Selector, fmt.Sprintf("spec.rollout.waves[%d].selector", i)); err != nil {
			return nil, err
		}
		if m.repositories[i], err = compile(w.RepositorySelector, fmt.Sprintf("spec.rollout.waves[%d].repositorySelector", i)); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ReadsRepositories reports whether a wave has a repositorySelector: only
// then does Wave need the Repositories' labels.
func (m *Matcher) ReadsRepositories() bool {
	return slices.ContainsFunc(m.repositories, func(s labels.Selector) bool { return !s.Empty() })
}

// Wave is the index of the wave of a variant with these labels, whose
// downstream Repository has repositoryLabels: the first whose selector
// matches the first and whose repositorySelector matches the second; -1
// when no wave does.
func (m *Matcher) Wave(variantLabels, repositoryLabels map[string]string) int {
	for i := range m.selectors {
		if m.selectors[i].Matches(labels.Set(variantLabels)) && m.repositories[i].Matches(labels.Set(repositoryLabels)) {
			return i
		}
	}
	return -1
}

// approved reports whether the Manual wave i of the rollout id is approved:
// the annotation names it, or a later wave, of the same rollout.
func approved(spec *configv1alpha2.Rollout, annotation, id string, i int) bool {
	a, ok := helper.ParseApproval(annotation)
	return ok && a.Approves(spec, id, i)
}

// notApproving says why an approval annotation that is there approves
// nothing yet ("" when there is none, or it approves an earlier wave of
// this rollout: waiting for the next approval needs no excuse).
func notApproving(spec *configv1alpha2.Rollout, annotation, id string) string {
	if annotation == "" {
		return ""
	}
	a, ok := helper.ParseApproval(annotation)
	switch {
	case !ok:
		return fmt.Sprintf(" (%s=%q approves nothing: it is not <wave>@<rollout id>)", configv1alpha2.ApproveWaveAnnotation, annotation)
	case a.ID != id:
		return fmt.Sprintf(" (%s=%s approves rollout %s, not the current %s)", configv1alpha2.ApproveWaveAnnotation, annotation, a.ID, id)
	case !slices.ContainsFunc(spec.Waves, func(w configv1alpha2.Wave) bool { return w.Name == a.Wave }):
		return fmt.Sprintf(" (%s=%s names no wave of this rollout)", configv1alpha2.ApproveWaveAnnotation, annotation)
	}
	return ""
}
