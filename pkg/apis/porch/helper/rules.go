package helper

import (
	"fmt"
	"strconv"
	"strings"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Porch's rules about PackageRevisions, as the server applies them and as
// the controllers, porchsim and variantctl read them. Pure functions of the
// objects: no client, no cache.

// PlaceholderWorkspace is the workspace of the placeholder revision that
// tracks a package on its repository's branch (<repo>.<package>.main).
const PlaceholderWorkspace = "main"

// PackageRevisionName is the name Porch gives a revision:
// <repository>.<package path with "/" as ".">.<workspace>. A create that
// sends it is refused when the revision exists, so a retried create never
// makes a second revision.
func PackageRevisionName(repo, pkg, workspace string) string {
	return repo + "." + strings.ReplaceAll(pkg, "/", ".") + "." + workspace
}

// IsPlaceholder reports whether a revision is the placeholder Porch shows
// for a package's branch: revision -1. Porch refuses to clone, edit or
// upgrade from it, never labels it latest, and does not let its lifecycle
// change.
func IsPlaceholder(pr *porchv1alpha1.PackageRevision) bool {
	return pr.Spec.Revision == porchv1alpha1.PlaceholderRevision
}

// LifecycleIsPublished is Porch's rule of final contents: Published or
// DeletionProposed. Such a revision can be cloned, edited from or upgraded,
// and only its metadata and lifecycle can change.
func LifecycleIsPublished(lc porchv1alpha1.PackageRevisionLifecycle) bool {
	return lc == porchv1alpha1.PackageRevisionLifecyclePublished || lc == porchv1alpha1.PackageRevisionLifecycleDeletionProposed
}

// IsPublished is LifecycleIsPublished of a revision.
func IsPublished(pr *porchv1alpha1.PackageRevision) bool {
	return LifecycleIsPublished(pr.Spec.Lifecycle)
}

// IsOpen reports whether a revision is a Draft or Proposed: not final yet.
func IsOpen(pr *porchv1alpha1.PackageRevision) bool {
	switch pr.Spec.Lifecycle {
	case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed, "":
		return true
	}
	return false
}

// UnmetReadinessGates lists the readiness gates of a revision whose
// condition is not True, each as "<type> is <status> (<reason>: <message>)"
// (a gate with no condition is Unknown). Porch's API does not enforce the
// gates (porchctl does): a revision with unmet gates can still be approved,
// but whoever approves by the rules will not.
func UnmetReadinessGates(pr *porchv1alpha1.PackageRevision) []string {
	var out []string
	for _, g := range pr.Spec.ReadinessGates {
		status, detail := porchv1alpha1.ConditionUnknown, "no such condition"
		for _, c := range pr.Status.Conditions {
			if c.Type == g.ConditionType {
				status, detail = c.Status, strings.TrimSuffix(c.Reason+": "+c.Message, ": ")
				break
			}
		}
		if status != porchv1alpha1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s is %s (%s)", g.ConditionType, status, detail))
		}
	}
	return out
}

// Latest is the revision of one package Porch labels kpt.dev/latest-revision:
// the published (or deletion-proposed) revision with the highest number,
// not the placeholder and not being deleted; nil if there is none. Porch
// computes the label, so it moves back when the latest revision goes.
func Latest(revs []*porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	var latest *porchv1alpha1.PackageRevision
	for _, pr := range revs {
		if IsPlaceholder(pr) || !IsPublished(pr) || pr.DeletionTimestamp != nil {
			continue
		}
		if latest == nil || pr.Spec.Revision > latest.Spec.Revision {
			latest = pr
		}
	}
	return latest
}

// PublishedRevision finds the published revision number n among the
// revisions of one package, or nil.
func PublishedRevision(revs []*porchv1alpha1.PackageRevision, n int) *porchv1alpha1.PackageRevision {
	for _, pr := range revs {
		if !IsPlaceholder(pr) && IsPublished(pr) && pr.Spec.Revision == n {
			return pr
		}
	}
	return nil
}

// NextWorkspace is <prefix><N>, N one more than the highest N among the
// workspaces of revs that have the prefix (the PackageVariant controllers
// number their drafts packagevariant-1, -2, ... as the reference does).
// Numbers keep counting past deleted revisions the list still holds.
func NextWorkspace(prefix string, revs []*porchv1alpha1.PackageRevision) string {
	highest := 0
	for _, pr := range revs {
		rest, ok := strings.CutPrefix(string(pr.Spec.WorkspaceName), prefix)
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n > highest {
			highest = n
		}
	}
	return prefix + strconv.Itoa(highest+1)
}

// LockedUpstreamRevision returns the upstream revision a downstream was
// cloned or upgraded from, read from status.upstreamLock.git.ref, whose
// last path segment is "v<N>" for a published upstream. ok is false when
// the lock does not say: no lock, or the upstream was a draft (a ref
// starting with "drafts/").
func LockedUpstreamRevision(pr *porchv1alpha1.PackageRevision) (rev int, ok bool) {
	lock := pr.Status.UpstreamLock
	if lock == nil || lock.Git == nil || lock.Git.Ref == "" || LockedToDraft(pr) {
		return 0, false
	}
	ref := lock.Git.Ref
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	n, err := strconv.Atoi(strings.TrimPrefix(ref, "v"))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// LockedToDraft reports whether a revision was cloned from an unpublished
// draft (its upstream lock's ref starts with "drafts/").
func LockedToDraft(pr *porchv1alpha1.PackageRevision) bool {
	lock := pr.Status.UpstreamLock
	return lock != nil && lock.Git != nil && strings.HasPrefix(lock.Git.Ref, "drafts/")
}

// IsPackagePath reports whether Porch takes pkg as a package path:
// segments separated by "/", none of them empty, "." or "..".
func IsPackagePath(pkg string) bool {
	for _, seg := range strings.Split(pkg, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// NextRevision is the revision number Porch gives the next publish of a
// package, among whose revisions revs: one more than the highest (the
// placeholder's -1 aside), 1 for the first.
func NextRevision(revs []*porchv1alpha1.PackageRevision) int {
	next := 1
	for _, pr := range revs {
		if pr.Spec.Revision >= next {
			next = pr.Spec.Revision + 1
		}
	}
	return next
}

// TaskUpstream names the revision a task makes a revision from as its
// upstream: the upstreamRef of a clone, the new upstream of an upgrade; ""
// for other tasks. Porch refuses to delete a revision that another one's
// task names so.
func TaskUpstream(t porchv1alpha1.Task) string {
	switch {
	case t.Type == porchv1alpha1.TaskTypeClone && t.Clone != nil && t.Clone.Upstream.UpstreamRef != nil:
		return t.Clone.Upstream.UpstreamRef.Name
	case t.Type == porchv1alpha1.TaskTypeUpgrade && t.Upgrade != nil:
		return t.Upgrade.NewUpstream.Name
	}
	return ""
}

// DescribeTask says what a task makes a revision from, as people read it:
// "clone of R", "edit of R", "upgrade of R from OLD to NEW"; otherwise the
// task's type.
func DescribeTask(t porchv1alpha1.Task) string {
	switch {
	case t.Clone != nil && t.Clone.Upstream.UpstreamRef != nil:
		return "clone of " + t.Clone.Upstream.UpstreamRef.Name
	case t.Edit != nil && t.Edit.Source != nil:
		return "edit of " + t.Edit.Source.Name
	case t.Upgrade != nil:
		return fmt.Sprintf("upgrade of %s from %s to %s", t.Upgrade.LocalPackageRevisionRef.Name, t.Upgrade.OldUpstream.Name, t.Upgrade.NewUpstream.Name)
	}
	return string(t.Type)
}
