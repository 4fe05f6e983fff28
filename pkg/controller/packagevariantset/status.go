package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
)

// Condition types and reasons of a PackageVariantSet, the reference
// controller's.
const (
	ConditionStalled = conditions.Stalled
	ConditionReady   = conditions.Ready
	// ConditionPaused is True while a person pauses the set.
	ConditionPaused = configv1alpha1.ConditionPaused

	ReasonValidationError   = "ValidationError"
	ReasonUpstreamNotFound  = "UpstreamNotFound"
	ReasonNoMatchingTargets = "NoMatchingTargets"
	ReasonUnexpectedError   = "UnexpectedError"
	// ReasonForbidden: a target's ServiceAccount may not get an object
	// its objectSelector selects.
	ReasonForbidden = "Forbidden"
	// ReasonCostBudgetExceeded: the set's expressions, over all its
	// targets, cost more than one sync may spend.
	ReasonCostBudgetExceeded = "CostBudgetExceeded"
	ReasonValid              = conditions.ReasonValid
	ReasonReconciled         = "Reconciled"
)

const readyMessage = "package variants successfully reconciled"

// renderFailedSuffix ends the Stalled message while a target has no valid
// spec: the rest of the set is still served.
const renderFailedSuffix = "; variants of the other targets are kept up to date, and none is deleted until every target renders"

// outcome is what one sync of a set found and did: everything its status
// is computed from.
type outcome struct {
	// paused: a person paused the set, and the sync did nothing else.
	paused bool
	// fleet holds the set's variants as the sync found them (with how many
	// are Ready), wanted what wantedVariants found (the rollout decision
	// included), managed and manageErr what manageVariants did (zero when
	// it did not run).
	fleet     *fleet
	wanted    *wanted
	managed   manageResult
	manageErr error
}

// calculateStatus is the status of pvs after one sync, computed from its
// outcome alone: the one place a set's status is decided. A paused set
// keeps everything but its Paused condition. A manageErr leaves the
// conditions and the rollout's status as they were: the sync stopped
// before its first create and is retried. pvs is not changed;
// observedGeneration is writeStatus's to set.
func calculateStatus(pvs *configv1alpha2.PackageVariantSet, o outcome) configv1alpha2.PackageVariantSetStatus {
	status := *pvs.Status.DeepCopy()
	if !o.paused {
		f, w, managed := o.fleet, o.wanted, o.managed
		status.DesiredVariants = int32(len(w.variants))
		status.ExistingVariants = int32(len(f.byName) + managed.created - managed.deleted)
		status.ReadyVariants = int32(f.ready)
		if o.manageErr == nil {
			status.Rollout = rolloutOf(pvs, status.Rollout, w.rollout)
		}
	}
	edits := conditionEdits(pvs, o, status)
	conditions.Make(&status.Conditions, pvs.Generation, edits...)
	return status
}

// conditionEdits are the changes one sync that went as o makes to the
// set's conditions, in order; status holds the counts the sync computed.
func conditionEdits(pvs *configv1alpha2.PackageVariantSet, o outcome, status configv1alpha2.PackageVariantSetStatus) []conditions.Edit {
	if o.paused {
		return []conditions.Edit{{Type: ConditionPaused, Status: metav1.ConditionTrue, Reason: configv1alpha1.ReasonPaused,
			Message: confighelper.PausedMessage("PackageVariantSet", pvs)}}
	}
	w, managed := o.wanted, o.managed
	edits := []conditions.Edit{conditions.Remove(ConditionPaused)}
	ready := func(s metav1.ConditionStatus, reason, msg string) []conditions.Edit {
		return append(edits, conditions.Valid(), conditions.Edit{Type: conditions.Ready, Status: s, Reason: reason, Message: msg})
	}
	switch {
	case w.stalled != nil:
		edits = append(edits, conditions.StalledNotReady(w.stalled.reason, w.stalled.message, w.stalled.reason, w.stalled.message)...)
	case errors.As(w.targetsErr, new(*access.DeniedError)):
		edits = ready(metav1.ConditionFalse, ReasonForbidden, fmt.Sprintf("%v; nothing was created or deleted", w.targetsErr))
	case w.targetsErr != nil:
		edits = ready(metav1.ConditionFalse, ReasonUnexpectedError,
			fmt.Sprintf("could not list the targets, so nothing was created or deleted; retrying: %v", w.targetsErr))
	case o.manageErr != nil:
		// Only the counts are news; the conditions and the rollout wait
		// for a sync that gets through.
		return edits
	case len(w.problems) > 0:
		msg := conditions.List(w.problems, 10)
		if w.renderFailed {
			msg += renderFailedSuffix
		}
		edits = append(edits, conditions.StalledNotReady(ReasonValidationError, msg, ReasonValidationError, msg)...)
	case len(managed.writeErrs) > 0:
		edits = ready(metav1.ConditionFalse, ReasonUnexpectedError, fmt.Sprintf("%s; retrying", errors.Join(managed.writeErrs...)))
	default:
		edits = ready(metav1.ConditionTrue, ReasonReconciled, fmt.Sprintf("%s: %d desired, %d exist, %d Ready",
			readyMessage, status.DesiredVariants, status.ExistingVariants, status.ReadyVariants))
	}
	switch plan := w.rollout; {
	case pvs.Spec.Rollout == nil:
		edits = append(edits, conditions.Remove(rollout.ConditionRolledOut))
	case plan != nil:
		edits = append(edits, conditions.Edit{Type: rollout.ConditionRolledOut, Status: plan.Condition.Status, Reason: plan.Condition.Reason, Message: plan.Condition.Message})
	}
	return edits
}

// rolloutOf is status.rollout after a sync that decided plan: none for a
// set without a rollout; what it had (cur) when the sync stopped before
// deciding.
func rolloutOf(pvs *configv1alpha2.PackageVariantSet, cur *configv1alpha2.RolloutStatus, plan *rollout.Plan) *configv1alpha2.RolloutStatus {
	switch {
	case pvs.Spec.Rollout == nil:
		return nil
	case plan != nil:
		return plan.Status
	}
	return cur
}

// writeStatus writes the status when it differs from what the cache holds.
func (c *Controller) writeStatus(ctx context.Context, old, pvs *configv1alpha2.PackageVariantSet) error {
	pvs.Status.ObservedGeneration = pvs.Generation
	if equality.Semantic.DeepEqual(old.Status, pvs.Status) {
		return nil
	}
	if wait := c.progressWait(old, pvs); wait > 0 {
		// The counts are written with the next change a person acts on,
		// or when the wait is over.
		c.progressWrites.AddAfter(cache.MetaObjectToName(pvs), wait)
		return nil
	}
	sets := c.client.ConfigV1alpha2().PackageVariantSets(pvs.Namespace)
	// Recorded before the write: its echo may arrive before its answer.
	c.recordStatusWrite(pvs.UID, pvs.Status.DeepCopy())
	updated, err := sets.UpdateStatus(ctx, pvs, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// The cache is behind the server. As the ReplicaSet controller
		// does, read the set live and write the status once more onto
		// what the server holds, if that is still the set (same uid) and
		// the spec (generation) the status was computed from. Waiting for
		// the cache instead costs a rate-limited retry per conflict, and
		// those back off exponentially: a cache that lags for a while
		// (a watch in its reflector's backoff) leaves the set's status
		// stale for minutes after it caught up.
		live, getErr := sets.Get(ctx, pvs.Name, metav1.GetOptions{})
		if getErr == nil && live.UID == pvs.UID && live.Generation == pvs.Generation {
			klog.FromContext(ctx).V(2).Info("Status write conflicted; writing onto the live set", "cached", pvs.ResourceVersion, "live", live.ResourceVersion)
			retry := live.DeepCopy()
			retry.Status = pvs.Status
			old = live
			updated, err = sets.UpdateStatus(ctx, retry, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("update status of PackageVariantSet %s/%s: %w", pvs.Namespace, pvs.Name, err)
	}
	c.written.Record(old.ResourceVersion, updated)
	return nil
}

// ownStatusWrite reports whether an update of a set is the echo of one of
// its own last status writes: nothing but the status changed, and the
// status is one the controller wrote. Syncing again for it would compute the
// same status from the same inputs: whatever changed since has its own
// event (readiness changes of variants arrive batched, after
// readinessDelay, and an echo must not undo that batching with an
// immediate sync). Told by content, not by resourceVersion: the echo can
// arrive before the write's answer does.
func (c *Controller) ownStatusWrite(oldObj, newObj interface{}) bool {
	o, ok1 := oldObj.(*configv1alpha2.PackageVariantSet)
	n, ok2 := newObj.(*configv1alpha2.PackageVariantSet)
	if !ok1 || !ok2 || o.Generation != n.Generation || o.UID != n.UID ||
		!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		!slices.Equal(o.Finalizers, n.Finalizers) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) {
		return false
	}
	written, ok := c.statusWrites.Load(n.UID)
	return ok && written.(*lastWrites).has(&n.Status)
}

// lastWrites are the last few statuses written of one set: syncs that
// follow each other closely write again before the echo of the write
// before arrives; and when the last was written.
type lastWrites struct {
	mu       sync.Mutex
	statuses [4]*configv1alpha2.PackageVariantSetStatus
	next     int
	at       time.Time
}

func (l *lastWrites) add(st *configv1alpha2.PackageVariantSetStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[l.next] = st
	l.next = (l.next + 1) % len(l.statuses)
	l.at = time.Now()
}

// writtenAt is when the last status was written.
func (l *lastWrites) writtenAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

func (l *lastWrites) has(st *configv1alpha2.PackageVariantSetStatus) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.statuses[:], func(w *configv1alpha2.PackageVariantSetStatus) bool {
		return w != nil && equality.Semantic.DeepEqual(w, st)
	})
}

// recordStatusWrite remembers a status about to be written of a set.
func (c *Controller) recordStatusWrite(uid types.UID, st *configv1alpha2.PackageVariantSetStatus) {
	written, _ := c.statusWrites.LoadOrStore(uid, &lastWrites{})
	written.(*lastWrites).add(st)
}

// progressEvery is how often, in readiness delays, a set's status is
// written for its progress alone. A set syncs about once per readiness
// delay while its variants become Ready or publish; writing each sync's
// counts would make the set's requests follow the backend's speed rather
// than what happened.
const progressEvery = 5

// progressWait is how long the write of pvs's status waits: 0, unless
// only its progress (counts) changed since old, the fleet is not at rest
// (every variant there and Ready), and the set's last status write was
// less than progressEvery readiness delays ago. Without a readiness delay
// (variantctl, where no time passes) nothing waits.
func (c *Controller) progressWait(old, pvs *configv1alpha2.PackageVariantSet) time.Duration {
	every := progressEvery * c.readinessDelay
	if every <= 0 || !progressOnly(&old.Status, &pvs.Status) || atRest(&pvs.Status) {
		return 0
	}
	written, ok := c.statusWrites.Load(pvs.UID)
	if !ok {
		return 0
	}
	return max(every-time.Since(written.(*lastWrites).writtenAt()), 0)
}

// atRest says that every variant the set wants is there and Ready: a
// count a person waits for.
func atRest(st *configv1alpha2.PackageVariantSetStatus) bool {
	return st.ReadyVariants == st.DesiredVariants && st.ExistingVariants == st.DesiredVariants
}

// progressOnly says that two statuses differ in their counts alone: the
// variants desired, existing and Ready, a rollout's progress and wave
// counts (not its failures), the states of the variants of a wave that
// neither failed nor are skipped, and the messages that only spell those out (Ready while
// Reconciled, RolledOut while a wave progresses). Any other change (a
// condition's status or reason, a wave's phase) is news.
func progressOnly(a, b *configv1alpha2.PackageVariantSetStatus) bool {
	return equality.Semantic.DeepEqual(withoutProgress(a), withoutProgress(b))
}

// withoutProgress is a copy of st without what progressOnly leaves out.
func withoutProgress(st *configv1alpha2.PackageVariantSetStatus) *configv1alpha2.PackageVariantSetStatus {
	out := st.DeepCopy()
	out.DesiredVariants, out.ExistingVariants, out.ReadyVariants = 0, 0, 0
	for i := range out.Conditions {
		cond := &out.Conditions[i]
		if (cond.Type == ConditionReady && cond.Reason == ReasonReconciled) ||
			(cond.Type == rollout.ConditionRolledOut && cond.Reason == rollout.ReasonWaveProgressing) {
			cond.Message = ""
		}
	}
	if r := out.Rollout; r != nil {
		r.Progress = ""
		for i := range r.Waves {
			w := &r.Waves[i]
			w.Finished, w.Updated, w.VariantStatesNotListed = 0, 0, 0
			// a variant's way through the wave is progress; its failure
			// or skip is news
			w.VariantStates = slices.DeleteFunc(w.VariantStates, func(v configv1alpha2.VariantState) bool {
				return v.State != configv1alpha2.VariantFailed && v.State != configv1alpha2.VariantSkipped
			})
		}
	}
	return out
}
