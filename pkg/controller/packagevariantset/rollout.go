package packagevariantset

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/metrics"
)

// A set with spec.rollout pins the upstream revision it resolved into each
// variant's spec (a variant that follows the latest revision by itself
// would take every new one at once), and holds back the updates of the
// variants whose wave has not opened them yet: they keep the spec they
// have. Creates (new targets) and deletes (vanished targets) are never
// held back. pkg/controller/rollout decides; this file hands it the facts
// from the caches and applies its plan to the set's writes.

// planRollout decides the rollout of the set's change and lists in
// w.changes the writes of f it does not hold back.
func (c *Controller) planRollout(pvs *configv1alpha2.PackageVariantSet, f *fleet, w *wanted, upstream *porchv1alpha1.PackageRevision) error {
	matcher, err := rollout.NewMatcher(pvs.Spec.Rollout)
	if err != nil {
		return err
	}
	repository := func(string) *configv1alpha1.Repository { return nil }
	if matcher.ReadsRepositories() {
		repository = func(name string) *configv1alpha1.Repository {
			repo, err := c.repoLister.Repositories(pvs.Namespace).Get(name)
			if err != nil {
				return nil
			}
			return repo
		}
	}
	g, err := f.rolloutWaves(pvs.Spec.Rollout, matcher, repository)
	if err != nil {
		return err
	}
	var previousReason string
	if cond := meta.FindStatusCondition(pvs.Status.Conditions, rollout.ConditionRolledOut); cond != nil {
		previousReason = cond.Reason
	}
	plan := rollout.Decide(rollout.Input{
		Spec:             pvs.Spec.Rollout,
		Previous:         pvs.Status.Rollout,
		PreviousReason:   previousReason,
		ID:               rollout.ID(upstream.Spec.Revision, templatesOf(pvs)),
		UpstreamRevision: upstream.Spec.Revision,
		Approval:         pvs.Annotations[configv1alpha2.ApproveWaveAnnotation],
		Skip:             pvs.Annotations[configv1alpha2.SkipVariantsAnnotation],
		Resume:           pvs.Annotations[configv1alpha2.ResumeWaveAnnotation],
		Now:              c.now(),
		Namespace:        pvs.Namespace,
		Set:              pvs.Name,
	}, g)
	w.changes = f.rolloutChanges(plan.Open)
	w.rollout = &plan
	w.waveOf = make(map[string]string, len(f.variants))
	for i, vs := range g.Waves {
		for _, v := range vs {
			w.waveOf[v.Name] = pvs.Spec.Rollout.Waves[i].Name
		}
	}
	return nil
}

// rolloutWaves are what a rollout knows of each rendered variant, in
// their waves; m works out each variant's wave, with its downstream
// Repository as repository finds it.
func (f *fleet) rolloutWaves(spec *configv1alpha2.Rollout, m *rollout.Matcher, repository func(string) *configv1alpha1.Repository) (rollout.Grouping, error) {
	facts := make([]rollout.Variant, 0, len(f.variants))
	for _, v := range f.variants {
		facts = append(facts, f.factOf(v, m, repository(v.spec.Downstream.Repo)))
	}
	return rollout.Waves(spec, facts)
}

// factOf is what a rollout knows of the rendered variant v, whose
// downstream Repository is repo.
func (f *fleet) factOf(v *rendered, m *rollout.Matcher, repo *configv1alpha1.Repository) rollout.Variant {
	rv := rollout.Variant{Name: v.name, Labels: v.spec.Labels, Wave: v.waveIn(m, repo), Updated: true}
	if cur, ok := f.existing[v.id]; ok {
		rv.Name = cur.Name
		rv.Updated = v.specOf(cur)
		p := v.progressOf(cur)
		rv.Finished, rv.Failed, rv.WaitingFor, rv.Blocked, rv.BlockedSince = p.finished, p.failed, p.waitingFor, p.blocked, p.blockedSince
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

// reportRollout sends the events of a rollout decision on the set and
// puts its wave counts in the metrics (the status is calculateStatus's).
// A set without a rollout has no counts; a set whose sync stopped before
// deciding keeps what it had.
func (c *Controller) reportRollout(pvs *configv1alpha2.PackageVariantSet, plan *rollout.Plan) {
	if pvs.Spec.Rollout == nil {
		c.metrics.SetRollout(pvs.Namespace, pvs.Name, nil)
		return
	}
	if plan == nil {
		return
	}
	for _, e := range plan.Events {
		eventType := corev1.EventTypeNormal
		if e.Warning {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(pvs, eventType, e.Reason, e.Message)
	}
	waves := make([]metrics.WaveVariants, 0, len(plan.Status.Waves))
	for i, ws := range plan.Status.Waves {
		s := plan.States[i]
		waves = append(waves, metrics.WaveVariants{Wave: ws.Name, Pending: s.Pending, Open: s.Open, Finished: s.Finished, Failed: s.Failed, Skipped: s.Skipped})
	}
	c.metrics.SetRollout(pvs.Namespace, pvs.Name, waves)
}

// now is the controller's clock (tests set it).
func (c *Controller) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
}
