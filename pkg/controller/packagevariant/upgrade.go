package packagevariant

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// createUpgrade makes an upgrade draft of a published downstream revision
// to the selected upstream (three-way resource-merge in Porch), then
// applies the variant to it.
func (c *Controller) createUpgrade(ctx context.Context, st *state, local *porchv1alpha1.PackageRevision, o *outcome) error {
	oldRev, ok := helper.LockedUpstreamRevision(local)
	var oldUpstream *porchv1alpha1.PackageRevision
	if ok {
		oldUpstream = helper.PublishedRevision(st.upRevs, oldRev)
	}
	if oldUpstream == nil {
		o.progress = progress{kind: progressCannotUpgrade, revision: local, upstream: st.upstream}
		return nil
	}
	return c.newDraft(ctx, st, upgradeTask(oldUpstream, st.upstream, local), st.upstream,
		fmt.Sprintf("upgrade of %s from upstream revision %d to %d", local.Name, oldUpstream.Spec.Revision, st.upstream.Spec.Revision), o)
}

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
	pv := st.pv
	a := pv.Status.Applied
	if a == nil || a.Downstream != d.Name || a.ResourcesDigest == "" {
		return false, nil
	}
	deleted, err := c.porch.retire(ctx, d, st.upstream.Name,
		func() (*porchv1alpha1.PackageRevision, error) { return c.uneditedLive(ctx, pv, d) }, st.proposedToReplace)
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
		return true, c.createUpgrade(ctx, st, st.published, o)
	}
	if len(st.proposed) > 0 || len(st.foreign) > 0 || len(st.drafts) > 0 {
		// Porch clones only a package that does not exist yet.
		return true, nil
	}
	return true, c.newDraft(ctx, st, cloneTask(st.upstream), st.upstream, "clone of "+st.upstream.Name+", replacing "+d.Name, o)
}

// proposedToReplace keeps the variant's record of a draft it proposed on
// the way to deleting it: a draft recorded by its resourceVersion alone (as
// Porch made it) is recorded at the proposal's, which is the variant's own
// change, so that a delete that fails leaves the draft still recognised as
// unedited.
func (st *state) proposedToReplace(pr *porchv1alpha1.PackageRevision) {
	if a := st.pv.Status.Applied; a != nil && a.Downstream == pr.Name && strings.HasPrefix(a.ResourcesDigest, createdMark) {
		recordCreated(st.pv, pr)
	}
}

// replaced logs and records that a stale draft was deleted to be replaced.
func (c *Controller) replaced(ctx context.Context, st *state, d *porchv1alpha1.PackageRevision) {
	klog.FromContext(ctx).Info("Deleted unedited draft based on an old upstream", "packageRevision", klog.KObj(d), "upstream", st.upstream.Name)
	c.recorder.Eventf(st.pv, corev1.EventTypeNormal, "Replaced",
		"Draft %s was based on an old upstream and unedited; replacing it with a draft from %s", d.Name, st.upstream.Name)
	if a := st.pv.Status.Applied; a != nil && a.Downstream == d.Name {
		st.pv.Status.Applied = nil
	}
}

// uneditedLive reads a draft's files and then the draft itself from Porch,
// not from the cache, and returns the draft when it is as the variant last
// recorded it (editedSince) and still, at the same commit, a Draft the
// variant controls (or the Proposed revision an unfinished replacement
// marked); nil otherwise. A person who changed the files or proposed the
// draft before the second read is seen.
func (c *Controller) uneditedLive(ctx context.Context, pv *configv1alpha1.PackageVariant, d *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	prr, err := c.porch.getResources(ctx, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if editedSince(pv.Status.Applied, d.Name, prr.Spec.Resources, prr.ResourceVersion) {
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
