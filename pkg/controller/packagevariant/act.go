package packagevariant

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// act makes the writes the plan calls for and records their outcome in
// o. A problem of the package or the variant (a mutation that cannot be
// applied, another owner's open draft) is recorded, not returned: retrying
// does not help, a change does. A failed render is recorded and retried on
// its own backoff.
func (c *Controller) act(ctx context.Context, st *state, p plan, o *outcome) error {
	err := c.actOn(ctx, st, p, o)
	switch {
	case errors.As(err, &o.mutation), errors.As(err, &o.otherDraft):
		err = nil
	}
	if err == nil {
		err = c.checkInjections(ctx, st, o)
	}
	var pending *renderPending
	if rerr, ok := isRenderError(err); ok {
		o.render = rerr
		return workloop.RetryAfter(c.renderRetries.failed(st.pv.UID, rerr.retryKey()), err)
	} else if errors.As(err, &pending) {
		// Still failing as reported; the status says so already.
		return workloop.RetryAfter(pending.after, nil)
	}
	return err
}

// actOn makes the writes of one plan.
func (c *Controller) actOn(ctx context.Context, st *state, p plan, o *outcome) error {
	switch p.kind {
	case planDrafts:
		return c.actOnDrafts(ctx, st, p.steps, o)
	case planProposed:
		return c.actOnProposed(ctx, st, p.steps[0], o)
	case planUpgrade:
		o.noteUpgrade(p.steps[0].hold)
		return c.createUpgrade(ctx, st, p.steps[0].rev, o)
	case planPublished:
		return c.actOnPublished(ctx, st, p.steps[0], o)
	case planDeletionProposed:
		// Restoring the downstream, or making a new draft, would overrule
		// the person who proposed the deletion: wait for their decision.
		o.noteUpgrade("")
		o.progress = progress{kind: progressDeletionProposed, revision: st.deletionProposed}
		return nil
	case planForeign:
		o.noteUpgrade("")
		o.progress = progress{kind: progressForeign, others: st.foreign}
		return nil
	}
	o.noteUpgrade("")
	return c.newDraft(ctx, st, cloneTask(st.upstream), st.upstream, "clone of "+st.upstream.Name, o)
}

// newDraft makes the variant's next draft with task, applies the variant
// to it on top of base, and records the downstream as up to date.
func (c *Controller) newDraft(ctx context.Context, st *state, task porchv1alpha1.Task, base *porchv1alpha1.PackageRevision, why string, o *outcome) error {
	draft, err := c.createDraft(ctx, st.pv, st.dsRevs, task, why)
	if unknown := (*createUnknown)(nil); errors.As(err, &unknown) {
		// A draft of that name may now hold a fresh clone: a record of an
		// earlier draft of the same name (Porch names drafts by
		// workspace, and a deleted one's name comes back) would take it
		// for up to date, and then for edited.
		st.recordUnverified(unknown.name)
	}
	if err != nil {
		return err
	}
	st.created = draft
	st.recordCreated(draft)
	if _, err := c.applyTo(ctx, st, draft, base, true); err != nil {
		return err
	}
	o.progress = progress{kind: progressReady}
	return nil
}

// actOnDrafts keeps the variant's open drafts current. A draft based on an
// old upstream is replaced only when nobody edited it since the controller
// wrote it (Porch cannot upgrade a draft in place); an edited one is kept.
func (c *Controller) actOnDrafts(ctx context.Context, st *state, steps []step, o *outcome) error {
	for _, s := range steps {
		o.noteUpgrade(s.hold)
		if s.stale {
			replaced, err := c.replaceDraft(ctx, st, s.rev, o)
			if err != nil || replaced {
				return err
			}
			kind := progressDraftEdited
			if recordedAuthor(st.applied, s.rev) == unverifiedFiles {
				kind = progressDraftUnverified
			}
			o.progress = progress{kind: kind, revision: s.rev, upstream: st.upstream}
			return nil
		}
		if c.upToDate(ctx, st, s.rev, s.base) {
			continue
		}
		if _, err := c.applyTo(ctx, st, s.rev, s.base, true); err != nil {
			return err
		}
	}
	o.progress = progress{kind: progressReady}
	return nil
}

// actOnPublished handles a downstream whose latest revision is Published
// on the selected upstream: an edit draft when the variant's mutations
// would change the package, nothing otherwise.
func (c *Controller) actOnPublished(ctx context.Context, st *state, s step, o *outcome) error {
	o.noteUpgrade(s.hold)
	if c.upToDate(ctx, st, s.rev, s.base) {
		o.progress = progress{kind: progressReady}
		return nil
	}
	changed, err := c.applyTo(ctx, st, s.rev, s.base, false)
	if err != nil {
		return err
	}
	if changed {
		return c.newDraft(ctx, st, editTask(s.rev), s.base, "edit of "+s.rev.Name+" to apply the variant's changes", o)
	}
	o.progress = progress{kind: progressReady}
	return nil
}

// actOnProposed: Porch refuses changes to a Proposed revision, so the
// variant reports that it waits for the approval instead of failing (the
// reference errors for ever) or making another draft.
func (c *Controller) actOnProposed(ctx context.Context, st *state, s step, o *outcome) error {
	o.noteUpgrade(s.hold)
	if s.stale {
		o.progress = progress{kind: progressApprovalBeforeUpgrade, revision: s.rev, upstream: st.upstream}
		return nil
	}
	if !c.upToDate(ctx, st, s.rev, s.base) {
		changed, err := c.applyTo(ctx, st, s.rev, s.base, false)
		if err != nil {
			return err
		}
		if changed {
			o.progress = progress{kind: progressApprovalBeforeChanges, revision: s.rev}
			return nil
		}
	}
	o.progress = progress{kind: progressReadyProposed, revision: s.rev}
	return nil
}

// checkInjections records in o when the variant's last write looked up an
// object to inject that its ServiceAccount may not get: the package holds
// the refusal in place of the object. The variant is synced again when the
// refusal expires, so a grant takes effect without another change.
func (c *Controller) checkInjections(ctx context.Context, st *state, o *outcome) error {
	pv := st.pv
	if c.access == nil || st.applied == nil {
		return nil
	}
	for _, ref := range st.applied.Injected {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			continue
		}
		var denied *access.DeniedError
		if err := c.access.MayGet(ctx, pv.Namespace, pv.Spec.ServiceAccountName, gv.WithKind(ref.Kind), ref.Name); errors.As(err, &denied) {
			o.denied = &deniedInjection{ref: ref, err: denied}
			return workloop.RetryAfter(denied.RetryAfter, nil)
		}
	}
	return nil
}
