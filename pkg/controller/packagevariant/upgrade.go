package packagevariant

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func lockRef(pr *porchv1alpha1.PackageRevision) string {
	if l := pr.Status.UpstreamLock; l != nil && l.Git != nil {
		return l.Git.Ref
	}
	return "unknown"
}

// replaceDraft deletes a stale draft the controller made and nobody edited,
// and makes a fresh one from the new upstream: an upgrade of the latest
// published revision, or a clone when nothing was published yet.
//
// "Nobody edited it" is checked live (uneditedLive), and the draft is
// proposed at the resourceVersion checked before it is deleted (see
// porchWriter.retire): Porch ignores delete preconditions, so a plain
// check-then-delete would lose an edit saved in between.
func (c *Controller) replaceDraft(ctx context.Context, st *state, d *porchv1alpha1.PackageRevision, o *outcome) (bool, error) {
	a := st.applied
	if recordedAuthor(a, d) == unverifiedFiles || a.ResourcesDigest == "" {
		return false, nil
	}
	deleted, err := c.porch.retire(ctx, d, st.upstream.Name,
		func() (*porchv1alpha1.PackageRevision, error) { return c.uneditedLive(ctx, st, d) }, st.proposedToReplace)
	if err != nil {
		return false, fmt.Errorf("replace stale draft %s: %w", d.Name, err)
	}
	if !deleted {
		return false, nil
	}
	c.replaced(ctx, st, d)
	var remaining []*porchv1alpha1.PackageRevision
	for _, pr := range st.drafts {
		if pr.Name != d.Name {
			remaining = append(remaining, pr)
		}
	}
	st.drafts = remaining
	// Workspace numbers keep counting past the deleted draft.
	if st.published != nil {
		next := upgradeOf(st, step{rev: st.published, base: st.upstream})
		return true, c.do(ctx, st, next, o)
	}
	if len(st.proposed) > 0 || len(st.foreign) > 0 || len(st.drafts) > 0 {
		// Porch clones only a package that does not exist yet.
		return true, nil
	}
	return true, c.newDraft(ctx, st, cloneTask(st.upstream), st.upstream, "clone of "+st.upstream.Name+", replacing "+d.Name, o)
}

// finishReplacing completes the replacements an earlier sync began and did
// not end (the delete failed, or the controller stopped between proposing
// the stale draft and deleting it; see porchWriter.retire). A Proposed
// revision of the variant marked with configv1alpha1.ReplacingAnnotation is
// deleted when its files are still the ones the controller wrote; otherwise
// it is given back as the Draft it was, without the mark, so that nothing
// waits for an approval nobody asked for. A marked Draft was proposed by
// the controller and set back to Draft by someone: it is theirs again, and
// a later proposal of it is theirs too, so the mark goes.
func (c *Controller) finishReplacing(ctx context.Context, st *state) error {
	pv := st.pv
	var drafts []int
	for i, p := range st.dsRevs {
		if _, marked := p.Annotations[configv1alpha1.ReplacingAnnotation]; !marked || helper.IsPlaceholder(p) || controllerUID(p) != pv.UID {
			continue
		}
		switch p.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft, "":
			drafts = append(drafts, i)
			continue
		case porchv1alpha1.PackageRevisionLifecycleProposed:
		default:
			continue
		}
		deleted, err := c.porch.retire(ctx, p, st.upstream.Name,
			func() (*porchv1alpha1.PackageRevision, error) { return c.uneditedLive(ctx, st, p) }, st.proposedToReplace)
		if err != nil {
			return fmt.Errorf("finish replacing %s: %w", p.Name, err)
		}
		if deleted {
			c.replaced(ctx, st, p)
			st.gone = append(st.gone, p.Name)
			continue
		}
		if err := c.unmarkReplacing(ctx, st, i); err != nil {
			return err
		}
	}
	sort.Slice(drafts, func(a, b int) bool { return st.dsRevs[drafts[a]].Name < st.dsRevs[drafts[b]].Name })
	for _, i := range drafts {
		if err := c.unmarkReplacing(ctx, st, i); err != nil {
			return err
		}
	}
	return nil
}

// unmarkReplacing takes the replacement mark off st.dsRevs[i], a revision
// the controller proposed to delete and did not, and sets it back to Draft
// if it is still Proposed; st.dsRevs[i] becomes the revision as stored.
// Nothing is done when the revision is gone, or no longer the variant's.
func (c *Controller) unmarkReplacing(ctx context.Context, st *state, i int) error {
	pr := st.dsRevs[i]
	live, err := c.client.PorchV1alpha1().PackageRevisions(pr.Namespace).Get(ctx, pr.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get %s: %w", pr.Name, err)
	}
	if _, marked := live.Annotations[configv1alpha1.ReplacingAnnotation]; !marked || controllerUID(live) != st.pv.UID {
		return nil
	}
	upd := live.DeepCopy()
	unmark(upd)
	updated, err := c.porch.update(ctx, upd)
	if err != nil {
		return fmt.Errorf("set %s back to Draft: %w", pr.Name, err)
	}
	klog.FromContext(ctx).Info("Took the replacement mark off a revision that stays", "packageRevision", klog.KObj(pr), "lifecycle", updated.Spec.Lifecycle)
	st.dsRevs[i] = updated
	return nil
}

// proposedToReplace keeps the variant's record of a draft it proposed on
// the way to deleting it: a draft recorded by its resourceVersion alone (as
// Porch made it) is recorded at the proposal's, which is the variant's own
// change, so that a delete that fails leaves the draft still recognised as
// unedited.
func (st *state) proposedToReplace(pr *porchv1alpha1.PackageRevision) {
	if a := st.applied; a != nil && a.Downstream == pr.Name && strings.HasPrefix(a.ResourcesDigest, createdMark) {
		st.recordCreated(pr)
	}
}

// replaced logs and records that a stale draft was deleted to be replaced.
func (c *Controller) replaced(ctx context.Context, st *state, d *porchv1alpha1.PackageRevision) {
	klog.FromContext(ctx).Info("Deleted unedited draft based on an old upstream", "packageRevision", klog.KObj(d), "upstream", st.upstream.Name)
	c.recorder.Eventf(st.pv, corev1.EventTypeNormal, "Replaced",
		"Draft %s was based on an old upstream and unedited; replacing it with a draft from %s", d.Name, st.upstream.Name)
	if a := st.applied; a != nil && a.Downstream == d.Name {
		st.applied = nil
	}
}

// uneditedLive reads a draft's files and then the draft itself from Porch,
// not from the cache, and returns the draft when it is as the variant last
// recorded it (authorOf) and still, at the same commit, a Draft the
// variant controls (or the Proposed revision an unfinished replacement
// marked); nil otherwise. A person who changed the files or proposed the
// draft before the second read is seen.
func (c *Controller) uneditedLive(ctx context.Context, st *state, d *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	pv := st.pv
	prr, err := c.porch.getResources(ctx, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	author := authorOf(st.applied, d, prr.Spec.Resources, prr.ResourceVersion)
	if author == editedFiles {
		if c.unrecordedWrite(ctx, st, d) {
			st.recordUnverifiedFiles()
		} else {
			logEdited(ctx, st, d, prr.ResourceVersion)
		}
	}
	if author != ownFiles {
		return nil, nil
	}
	live, err := c.client.PorchV1alpha1().PackageRevisions(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", d.Name, err)
	}
	_, marked := live.Annotations[configv1alpha1.ReplacingAnnotation]
	ours := live.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft ||
		live.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed && marked
	// One commit holds a revision and its files: another resourceVersion
	// means a change since the files were read.
	if !ours || controllerUID(live) != pv.UID || live.ResourceVersion != prr.ResourceVersion {
		return nil, nil
	}
	return live, nil
}
