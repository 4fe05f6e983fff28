package packagevariant

import (
	"fmt"
	"strconv"
	"strings"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// upstreamError is a reason the upstream cannot be used that only a person
// (or a new upstream revision) can fix; it is reported, not retried.
type upstreamError struct{ msg string }

func (e *upstreamError) Error() string { return e.msg }

// isPublished reports whether a revision's contents are final (it can be
// cloned, edited from or upgraded).
func isPublished(pr *porchv1alpha1.PackageRevision) bool {
	return pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished ||
		pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDeletionProposed
}

// isPlaceholder reports whether a revision is the one that tracks a branch
// ("main", revision -1); Porch refuses to clone or edit from it.
func isPlaceholder(pr *porchv1alpha1.PackageRevision) bool {
	return pr.Spec.Revision == porchv1alpha1.PlaceholderRevision || pr.Spec.WorkspaceName == "main"
}

// resolveUpstream picks the upstream revision the variant asks for among
// the revisions of its upstream package:
//   - revision N: the Published revision N;
//   - workspaceName W: the revision in workspace W, which must be Published;
//   - both: they must name the same revision;
//   - neither: the latest Published revision (label kpt.dev/latest-revision,
//     else the highest revision number), followed as it moves.
//
// The placeholder revision is never chosen. The reference controller ignores
// spec.upstream.revision and falls back to the placeholder, which Porch
// refuses to clone.
func resolveUpstream(up *configv1alpha1.Upstream, revs []*porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	where := fmt.Sprintf("upstream package %q in repository %q", up.Package, up.Repo)
	var byWorkspace, byRevision, latestLabelled, highest *porchv1alpha1.PackageRevision
	placeholderOnly := len(revs) > 0
	for _, pr := range revs {
		if string(pr.Spec.WorkspaceName) == up.WorkspaceName && up.WorkspaceName != "" {
			byWorkspace = pr
		}
		if isPlaceholder(pr) {
			continue
		}
		placeholderOnly = false
		if !isPublished(pr) {
			continue
		}
		if up.Revision > 0 && pr.Spec.Revision == up.Revision {
			byRevision = pr
		}
		// Porch computes the label and moves it when revisions come and
		// go; a cache can briefly show it on two revisions. The higher one
		// is the latest.
		if pr.Labels[porchv1alpha1.LatestPackageRevisionLabel] == "true" && pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished &&
			(latestLabelled == nil || pr.Spec.Revision > latestLabelled.Spec.Revision) {
			latestLabelled = pr
		}
		if highest == nil || pr.Spec.Revision > highest.Spec.Revision {
			highest = pr
		}
	}

	if len(revs) == 0 {
		// Whatever revision or workspace was asked for: a misspelt package
		// or repository is the likelier cause, so say that.
		return nil, &upstreamError{fmt.Sprintf("could not find %s; check spec.upstream, or wait for the package to be published", where)}
	}
	switch {
	case up.WorkspaceName != "":
		if byWorkspace == nil {
			return nil, &upstreamError{fmt.Sprintf("%s has no revision in workspace %q; check spec.upstream.workspaceName", where, up.WorkspaceName)}
		}
		if isPlaceholder(byWorkspace) {
			return nil, &upstreamError{fmt.Sprintf("%s: workspace %q is the placeholder revision, which cannot be cloned; name a published revision", where, up.WorkspaceName)}
		}
		if !isPublished(byWorkspace) {
			return nil, &upstreamError{fmt.Sprintf("%s: revision in workspace %q is %s, not Published; publish it, or point spec.upstream at a published revision", where, up.WorkspaceName, byWorkspace.Spec.Lifecycle)}
		}
		if up.Revision > 0 && byWorkspace.Spec.Revision != up.Revision {
			return nil, &upstreamError{fmt.Sprintf("%s: spec.upstream.revision %d and spec.upstream.workspaceName %q disagree (workspace %q is revision %d); set only one, or make them agree",
				where, up.Revision, up.WorkspaceName, up.WorkspaceName, byWorkspace.Spec.Revision)}
		}
		return byWorkspace, nil
	case up.Revision > 0:
		if byRevision == nil {
			return nil, &upstreamError{fmt.Sprintf("%s has no published revision %d; publish it, or change spec.upstream.revision", where, up.Revision)}
		}
		return byRevision, nil
	}
	if latestLabelled != nil {
		return latestLabelled, nil
	}
	if highest != nil {
		return highest, nil
	}
	if placeholderOnly {
		return nil, &upstreamError{fmt.Sprintf("%s has only its placeholder revision (main), which cannot be cloned; publish a revision of the upstream package", where)}
	}
	return nil, &upstreamError{fmt.Sprintf("%s has no published revision yet; publish one", where)}
}

// lockedUpstreamRevision returns the upstream revision a downstream was
// cloned or upgraded from, read from status.upstreamLock.git.ref (whose last
// path segment is "v<N>"). ok is false when the lock does not say (no lock,
// or the upstream was a draft: ref "drafts/...").
func lockedUpstreamRevision(pr *porchv1alpha1.PackageRevision) (rev int, ok bool) {
	lock := pr.Status.UpstreamLock
	if lock == nil || lock.Git == nil || lock.Git.Ref == "" || strings.HasPrefix(lock.Git.Ref, "drafts/") {
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

// upstreamRevisionByNumber finds the Published revision N of the upstream
// package (the old upstream of an upgrade).
func upstreamRevisionByNumber(revs []*porchv1alpha1.PackageRevision, n int) *porchv1alpha1.PackageRevision {
	for _, pr := range revs {
		if !isPlaceholder(pr) && isPublished(pr) && pr.Spec.Revision == n {
			return pr
		}
	}
	return nil
}
