package packagevariant

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// act takes the plan's actions and records their outcome in o. A problem
// of the package or the variant (a mutation that cannot be applied,
// another owner's open draft) is recorded, not returned: retrying does not
// help, a change does. A failed render is recorded and retried on its own
// backoff.
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

// actOn takes the plan's actions in order, up to the first that ends the
// pass, which leaves the downstream where o.progress says; after the
// others it is where the plan says (p.done).
func (c *Controller) actOn(ctx context.Context, st *state, p plan, o *outcome) error {
	logger := klog.FromContext(ctx)
	for _, a := range p.actions {
		o.noteUpgrade(a.hold)
		if a.kind != actNone {
			logger.V(4).Info("Acting on the plan", "action", a.kind, "packageRevision", klog.KObj(a.rev), "why", a.why)
		}
		if err := c.do(ctx, st, a, o); err != nil || a.ends() {
			return err
		}
	}
	o.progress = p.done
	return nil
}

// do takes one action; one that ends the pass records where it left the
// downstream in o.progress.
func (c *Controller) do(ctx context.Context, st *state, a action, o *outcome) error {
	switch a.kind {
	case actNone:
		return nil
	case actWrite:
		return c.writeRead(ctx, st, a.rev, a.base, a.read)
	case actRecord:
		st.recordRead(a.rev, a.base, a.read)
		return nil
	case actRenderWait:
		return a.read.pending
	case actBlocked:
		return a.err
	case actWait:
		o.progress = a.wait
		return nil
	case actClone:
		return c.newDraft(ctx, st, cloneTask(st.upstream), st.upstream, "clone of "+st.upstream.Name, o)
	case actEdit:
		return c.newDraft(ctx, st, editTask(a.rev), a.base, "edit of "+a.rev.Name+" to apply the variant's changes", o)
	case actUpgrade:
		return c.newDraft(ctx, st, upgradeTask(a.from, a.base, a.rev), a.base,
			fmt.Sprintf("upgrade of %s from upstream revision %d to %d", a.rev.Name, a.from.Spec.Revision, a.base.Spec.Revision), o)
	case actReplace:
		replaced, err := c.replaceDraft(ctx, st, a.rev, o)
		if err != nil || replaced {
			return err
		}
		kind := progressDraftEdited
		if recordedAuthor(st.applied, a.rev) == unverifiedFiles {
			kind = progressDraftUnverified
		}
		o.progress = progress{kind: kind, revision: a.rev, upstream: st.upstream}
		return nil
	}
	return fmt.Errorf("unknown action %d on %s", a.kind, klog.KObj(a.rev))
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
	rd, err := c.read(ctx, st, draft)
	if err != nil {
		return err
	}
	// The new draft is kept current as any of the variant's drafts is.
	if err := c.do(ctx, st, draftAction(st.pv, step{rev: draft, base: base}, rd), o); err != nil {
		return err
	}
	o.progress = progress{kind: progressReady}
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
