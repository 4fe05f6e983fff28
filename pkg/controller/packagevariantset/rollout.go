package packagevariantset

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/health"
)

// A set with spec.rollout pins the upstream revision it resolved into each
// variant's spec (a variant that follows the latest revision by itself
// would take every new one at once), and holds back the updates of the
// variants whose wave has not opened them yet: they keep the spec they
// have. Creates (new targets) are held back only when creates go in waves
// (spec.rollout.creates: InWaves) or the rollout is paused, deletes
// (vanished targets) only while it is paused. With spec.rollout.health a
// variant has finished its change only once its cluster runs it healthy
// (health.go). pkg/controller/rollout decides; this file hands it the
// facts from the caches and applies its plan to the set's writes.

// planRollout decides the rollout of the set's change and lists in
// w.changes the writes of f it does not hold back.
func (c *Controller) planRollout(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, f *fleet, w *wanted, upstream *porchv1alpha1.PackageRevision) error {
	spec := pvs.Spec.Rollout
	var previousReason string
	if cond := meta.FindStatusCondition(pvs.Status.Conditions, rollout.ConditionRolledOut); cond != nil {
		previousReason = cond.Reason
	}
	in := rollout.Input{
		Spec:             spec,
		Previous:         pvs.Status.Rollout,
		PreviousReason:   previousReason,
		UpstreamRevision: upstream.Spec.Revision,
		Approval:         pvs.Annotations[configv1alpha2.ApproveWaveAnnotation],
		Skip:             pvs.Annotations[configv1alpha2.SkipVariantsAnnotation],
		Resume:           pvs.Annotations[configv1alpha2.ResumeWaveAnnotation],
		Now:              c.now(),
		Namespace:        pvs.Namespace,
		Set:              pvs.Name,
		HeldDeletes:      heldDeletes(spec, w),
	}
	// The change to roll out is the upstream revision with the targets'
	// templates (in.ID, once the waves are known).
	templates := templatesOf(pvs)
	src, err := c.factSource(ctx, pvs)
	if err != nil {
		return err
	}
	// What the rollout knows of each rendered variant, in their waves.
	facts := make([]rollout.Variant, 0, len(f.variants))
	for _, v := range f.variants {
		facts = append(facts, f.factOf(v, src))
	}
	// The matcher the facts' waves came from, compiled once per sync.
	g := src.matcher.Waves(facts)
	in.ID = rollout.ID(upstream.Spec.Revision, templates)
	plan := rollout.Decide(in, g)
	w.changes = f.rolloutChanges(plan.Open, src.createsNow)
	if spec.Paused {
		w.stale = nil
	}
	w.rollout = &plan
	w.waveOf = make(map[string]string, len(f.variants))
	for i, vs := range g.Waves {
		for _, v := range vs {
			w.waveOf[v.Name] = spec.Waves[i].Name
		}
	}
	return nil
}

// factSource is what the facts of a set's variants come from besides the
// caches of the variants: how to tell each one's wave, whether new ones
// are created now, their downstream Repositories, and the health gate.
type factSource struct {
	matcher *rollout.Matcher
	// wavesReadRepositories: a wave has a repositorySelector (worked out
	// once, not per variant).
	wavesReadRepositories bool
	createsNow            bool
	// repository looks a downstream Repository up (nil when there is none).
	repository func(name string) *configv1alpha1.Repository
	// gate, when not nil, gates a variant's finish on its health (m: what
	// the syncs keep of the variant's check).
	gate func(m *healthMemo, pv *configv1alpha1.PackageVariant, repo *configv1alpha1.Repository, rv *rollout.Variant)
}

func (c *Controller) factSource(ctx context.Context, pvs *configv1alpha2.PackageVariantSet) (*factSource, error) {
	hc, err := compileHealth(pvs.Spec.Rollout)
	if err != nil {
		return nil, err
	}
	matcher, err := rollout.NewMatcher(pvs.Spec.Rollout)
	if err != nil {
		return nil, err
	}
	src := &factSource{matcher: matcher, wavesReadRepositories: matcher.ReadsRepositories(), createsNow: rollout.CreatesNow(pvs.Spec.Rollout), repository: func(name string) *configv1alpha1.Repository {
		repo, err := c.repoLister.Repositories(pvs.Namespace).Get(name)
		if err != nil {
			return nil
		}
		return repo
	}}
	if hc != nil {
		src.gate = func(m *healthMemo, pv *configv1alpha1.PackageVariant, repo *configv1alpha1.Repository, rv *rollout.Variant) {
			c.gateOnHealth(ctx, hc, m, pv, repo, rv)
		}
	}
	return src, nil
}

// compileHealth compiles the set's health check (nil when it has none).
// Validation has compiled it already: an error here is a bug's.
func compileHealth(spec *configv1alpha2.Rollout) (*healthCheck, error) {
	h := spec.Health
	if h == nil {
		return nil, nil
	}
	path := field.NewPath("spec", "rollout", "health")
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path.Child("apiVersion"), err)
	}
	namer, errs := health.CompileName(h.NameExpr, path.Child("nameExpr"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	judge, errs := health.Compile(health.Exprs{Current: h.Current, InProgress: h.InProgress, Failed: h.Failed}, path)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &healthCheck{gvk: gv.WithKind(h.Kind), namespace: h.Namespace, namer: namer, judge: judge, account: h.ServiceAccountName}, nil
}

// heldDeletes is how many stale variants of w a paused rollout keeps.
func heldDeletes(spec *configv1alpha2.Rollout, w *wanted) int {
	if !spec.Paused {
		return 0
	}
	return len(w.stale)
}

// factOf is what a rollout knows of the rendered variant v.
func (f *fleet) factOf(v *rendered, src *factSource) rollout.Variant {
	var repo *configv1alpha1.Repository
	if src.wavesReadRepositories || src.gate != nil {
		repo = src.repository(v.spec.Downstream.Repo)
	}
	var waveRepo *configv1alpha1.Repository
	if src.wavesReadRepositories {
		waveRepo = repo
	}
	rv := rollout.Variant{Name: v.name, Labels: v.spec.Labels, Wave: v.waveIn(src.matcher, waveRepo), New: true, Updated: src.createsNow}
	if cur, ok := f.existing[v.id]; ok {
		rv.Name, rv.New = cur.Name, false
		rv.Updated = v.specOf(cur)
		p := v.progressOf(cur)
		rv.Finished, rv.Failed, rv.WaitingFor, rv.Blocked, rv.BlockedSince = p.finished, p.failed, p.waitingFor, p.blocked, p.blockedSince
		if src.gate != nil {
			if v.health == nil {
				v.health = &healthMemo{}
			}
			src.gate(v.health, cur, repo, &rv)
		}
	}
	return rv
}

// progress is where a variant stands with its current spec: it has
// published it (Published=True for its generation), it failed (the reason:
// Stalled, or Ready=False for something a person must fix, for its
// generation), the draft or proposal waiting for approval, and what blocks
// its publication by the rules (Published=False, ReadinessGatesNotMet)
// since when (the condition's last transition: when its change started).
type progress struct {
	finished                    bool
	failed, waitingFor, blocked string
	blockedSince                time.Time
}

// variantProgress is where pv stands with its current spec.
func variantProgress(pv *configv1alpha1.PackageVariant) (p progress) {
	current := func(condType string) *metav1.Condition {
		cond := meta.FindStatusCondition(pv.Status.Conditions, condType)
		if cond == nil || cond.ObservedGeneration != pv.Generation {
			return nil
		}
		return cond
	}
	if cond := current(conditions.Stalled); cond != nil && cond.Status == metav1.ConditionTrue {
		p.failed = "Stalled: " + cond.Reason
	}
	if cond := current(conditions.Ready); p.failed == "" && cond != nil && cond.Status == metav1.ConditionFalse {
		switch cond.Reason {
		case configv1alpha1.ReasonRenderFailed, configv1alpha1.ReasonRefused, configv1alpha1.ReasonConflict:
			p.failed = cond.Reason
		}
	}
	pub := current(configv1alpha1.ConditionPublished)
	p.finished = pub != nil && pub.Status == metav1.ConditionTrue
	if pub != nil && pub.Reason == configv1alpha1.ReasonWaitingForApproval && len(pv.Status.DownstreamTargets) > 0 {
		p.waitingFor = pv.Status.DownstreamTargets[0].Name
	}
	if pub != nil && pub.Reason == configv1alpha1.ReasonReadinessGatesNotMet {
		p.blocked, p.blockedSince = pub.Reason, pub.LastTransitionTime.Time
	}
	return p
}

// progressChanged reports whether a variant's update changed where it
// stands with its change (variantProgress), what the set's RolledOut
// condition says of it included.
func progressChanged(o, n *configv1alpha1.PackageVariant) bool {
	return variantProgress(o) != variantProgress(n)
}

// templatesOf are the templates of the set's targets, in order: with the
// upstream revision, what a change to roll out is made of.
func templatesOf(pvs *configv1alpha2.PackageVariantSet) []*configv1alpha2.PackageVariantTemplate {
	out := make([]*configv1alpha2.PackageVariantTemplate, 0, len(pvs.Spec.Targets))
	for i := range pvs.Spec.Targets {
		out = append(out, pvs.Spec.Targets[i].Template)
	}
	return out
}

// now is the controller's clock (tests set it).
func (c *Controller) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
}

// progressOf is variantProgress(pv), worked out again only when pv changed.
func (e *rendered) progressOf(pv *configv1alpha1.PackageVariant) progress {
	if e.progressUID == "" || e.progressUID != pv.UID || e.progressRV != pv.ResourceVersion {
		e.progressUID, e.progressRV, e.progress = pv.UID, pv.ResourceVersion, variantProgress(pv)
	}
	return e.progress
}

// waveIn is the index of the variant's wave (-1: none), worked out by m
// once for each version of its downstream Repository (nil: none, or m
// does not read it).
func (e *rendered) waveIn(m *rollout.Matcher, repo *configv1alpha1.Repository) *int {
	var version string
	var repoLabels map[string]string
	if repo != nil {
		version, repoLabels = repo.ResourceVersion, repo.Labels
	}
	if !e.waveKnown || e.waveRepoVersion != version {
		e.wave, e.waveKnown, e.waveRepoVersion = m.Wave(e.spec.Labels, repoLabels), true, version
	}
	return &e.wave
}

// rolloutChanges are the writes of a rollout that opens the variants
// named open: their updates and creates, and every other create when
// createsNow, in target order. It reads the open names and the creates,
// not every change: a rollout holds most of them back.
func (f *fleet) rolloutChanges(open []string, createsNow bool) []change {
	var out []change
	for _, name := range open {
		if ch, ok := f.changes[f.idOf[name]]; ok && ch.current != nil && ch.current.Name == name {
			out = append(out, ch)
		}
	}
	opened := func(string) bool { return true }
	if !createsNow {
		names := make(map[string]bool, len(open))
		for _, name := range open {
			names[name] = true
		}
		opened = func(name string) bool { return names[name] }
	}
	for id := range f.creates {
		if ch := f.changes[id]; opened(ch.name) {
			out = append(out, ch)
		}
	}
	slices.SortFunc(out, func(a, b change) int { return f.pos[a.id] - f.pos[b.id] })
	return out
}
