package packagevariant

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// ensureDownstream decides, from the variant's revisions of the downstream
// package, whether to create a clone, edit or upgrade draft, update a
// draft, wait for approval, or do nothing.
func (c *Controller) ensureDownstream(ctx context.Context, st *state) error {
	pv := st.pv
	switch {
	case len(st.drafts) > 0:
		return c.ensureDrafts(ctx, st)
	case len(st.proposed) > 0:
		return c.ensureProposed(ctx, st)
	case st.published != nil:
		return c.ensurePublished(ctx, st, st.published)
	case st.deletionProposed != nil:
		// Someone proposed deleting the downstream. Restoring it, or making
		// a new draft, would overrule that person: wait for their decision.
		meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionUpgradeAvailable)
		setNotReady(pv, ReasonDeletionProposed, fmt.Sprintf(
			"downstream %s is proposed for deletion, so the variant changes nothing; approve the deletion and delete or retarget this variant, or set the revision back to Published",
			st.deletionProposed.Name))
		return nil
	}
	meta.RemoveStatusCondition(&pv.Status.Conditions, ConditionUpgradeAvailable)
	if len(st.foreign) > 0 {
		names := make([]string, 0, len(st.foreign))
		for _, pr := range st.foreign {
			names = append(names, pr.Name)
		}
		hint := "set spec.adoptionPolicy: adoptExisting to take it over, or choose another spec.downstream"
		if adoptionPolicy(pv) == configv1alpha1.AdoptionPolicyAdoptExisting {
			hint = "its revisions are controlled by another owner and cannot be adopted; remove that owner reference or choose another spec.downstream"
		}
		setNotReady(pv, ReasonError, fmt.Sprintf("downstream package %s already exists (%s) and is not managed by this variant; %s",
			describePackage(pv.Spec.Downstream.Repo, pv.Spec.Downstream.Package), conditions.List(names, 3), hint))
		return nil
	}
	return c.newDraft(ctx, st, cloneTask(st.upstream), st.upstream, "clone of "+st.upstream.Name)
}

// newDraft makes the variant's next draft with task, applies the variant
// to it on top of base, and reports the variant Ready.
func (c *Controller) newDraft(ctx context.Context, st *state, task porchv1alpha1.Task, base *porchv1alpha1.PackageRevision, why string) error {
	draft, err := c.createDraft(ctx, st.pv, st.dsRevs, task, why)
	if err != nil {
		return err
	}
	st.created = draft
	if _, err := c.applyTo(ctx, st.pv, draft, base, true, st.rendered); err != nil {
		return err
	}
	setReady(st.pv, readyMessage)
	return nil
}

// ensureDrafts keeps the variant's open drafts current. A draft based on an
// old upstream is replaced only when nobody edited it since the controller
// wrote it (Porch cannot upgrade a draft in place); an edited one is kept.
func (c *Controller) ensureDrafts(ctx context.Context, st *state) error {
	pv := st.pv
	for _, d := range st.drafts {
		base := st.upstream
		if held := c.holdUpgrade(st, d); held != nil {
			base = held
		} else if needsUpgrade(d, st.upstream) {
			replaced, err := c.replaceDraft(ctx, st, d)
			if err != nil || replaced {
				return err
			}
			setNotReady(pv, ReasonDraftEdited, fmt.Sprintf(
				"upstream moved to %s (revision %d) but draft %s was changed since the controller last wrote it, so it is kept as it is: publish it (an upgrade draft follows) or delete it (a new draft is made from the new upstream)",
				st.upstream.Name, st.upstream.Spec.Revision, d.Name))
			return nil
		}
		if c.upToDate(ctx, pv, d, base) {
			continue
		}
		if _, err := c.applyTo(ctx, pv, d, base, true, st.rendered); err != nil {
			return err
		}
	}
	setReady(pv, readyMessage)
	return nil
}

// ensurePublished handles a downstream whose latest revision is Published:
// an upgrade draft when the upstream moved, an edit draft when the variant's
// mutations would change the package, nothing otherwise.
func (c *Controller) ensurePublished(ctx context.Context, st *state, pub *porchv1alpha1.PackageRevision) error {
	pv := st.pv
	base := st.upstream
	if held := c.holdUpgrade(st, pub); held != nil {
		base = held
	} else if needsUpgrade(pub, st.upstream) {
		return c.createUpgrade(ctx, st, pub)
	}
	if c.upToDate(ctx, pv, pub, base) {
		setReady(pv, readyMessage)
		return nil
	}
	changed, err := c.applyTo(ctx, pv, pub, base, false, st.rendered)
	if err != nil {
		return err
	}
	if changed {
		return c.newDraft(ctx, st, editTask(pub), base, "edit of "+pub.Name+" to apply the variant's changes")
	}
	setReady(pv, readyMessage)
	return nil
}

// ensureProposed: Porch refuses changes to a Proposed revision, so the
// variant reports that it waits for the approval instead of failing (the
// reference errors for ever) or making another draft.
func (c *Controller) ensureProposed(ctx context.Context, st *state) error {
	pv := st.pv
	p := st.proposed[0]
	base := st.upstream
	if held := c.holdUpgrade(st, p); held != nil {
		base = held
	} else if needsUpgrade(p, st.upstream) {
		setNotReady(pv, ReasonWaitingForApproval, fmt.Sprintf("%s is Proposed and waiting for approval; the upgrade to %s follows in a new draft once it is published (or set back to Draft)", p.Name, st.upstream.Name))
		return nil
	}
	if !c.upToDate(ctx, pv, p, base) {
		changed, err := c.applyTo(ctx, pv, p, base, false, st.rendered)
		if err != nil {
			return err
		}
		if changed {
			setNotReady(pv, ReasonWaitingForApproval, fmt.Sprintf("%s is Proposed and waiting for approval; the variant's changes follow in a new draft once it is published (or set back to Draft)", p.Name))
			return nil
		}
	}
	setReady(pv, fmt.Sprintf("%s; %s is Proposed and waiting for approval", readyMessage, p.Name))
	return nil
}
