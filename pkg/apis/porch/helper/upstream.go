package helper

import (
	"fmt"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// UpstreamError is a reason a spec.upstream selects no usable revision that
// only a person (or a new upstream revision) can fix; it says what to do.
type UpstreamError struct{ msg string }

func (e *UpstreamError) Error() string { return e.msg }

// ResolveUpstream picks the upstream revision the variant asks for among
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
func ResolveUpstream(up *configv1alpha1.Upstream, revs []*porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	where := fmt.Sprintf("upstream package %q in repository %q", up.Package, up.Repo)
	var byWorkspace, byRevision *porchv1alpha1.PackageRevision
	placeholderOnly := len(revs) > 0
	for _, pr := range revs {
		if string(pr.Spec.WorkspaceName) == up.WorkspaceName && up.WorkspaceName != "" {
			byWorkspace = pr
		}
		if IsPlaceholder(pr) {
			continue
		}
		placeholderOnly = false
		if up.Revision > 0 && IsPublished(pr) && pr.Spec.Revision == up.Revision {
			byRevision = pr
		}
	}

	if len(revs) == 0 {
		// Whatever revision or workspace was asked for: a misspelt package
		// or repository is the likelier cause, so say that.
		return nil, &UpstreamError{fmt.Sprintf("could not find %s; check spec.upstream, or wait for the package to be published", where)}
	}
	switch {
	case up.WorkspaceName != "":
		if byWorkspace == nil {
			return nil, &UpstreamError{fmt.Sprintf("%s has no revision in workspace %q; check spec.upstream.workspaceName", where, up.WorkspaceName)}
		}
		if IsPlaceholder(byWorkspace) {
			return nil, &UpstreamError{fmt.Sprintf("%s: workspace %q is the placeholder revision, which cannot be cloned; name a published revision", where, up.WorkspaceName)}
		}
		if !IsPublished(byWorkspace) {
			return nil, &UpstreamError{fmt.Sprintf("%s: revision in workspace %q is %s, not Published; publish it, or point spec.upstream at a published revision", where, up.WorkspaceName, byWorkspace.Spec.Lifecycle)}
		}
		if up.Revision > 0 && byWorkspace.Spec.Revision != up.Revision {
			return nil, &UpstreamError{fmt.Sprintf("%s: spec.upstream.revision %d and spec.upstream.workspaceName %q disagree (workspace %q is revision %d); set only one, or make them agree",
				where, up.Revision, up.WorkspaceName, up.WorkspaceName, byWorkspace.Spec.Revision)}
		}
		return byWorkspace, nil
	case up.Revision > 0:
		if byRevision == nil {
			return nil, &UpstreamError{fmt.Sprintf("%s has no published revision %d; publish it, or change spec.upstream.revision", where, up.Revision)}
		}
		return byRevision, nil
	}
	if latest := LatestAsSeen(revs); latest != nil {
		return latest, nil
	}
	if placeholderOnly {
		return nil, &UpstreamError{fmt.Sprintf("%s has only its placeholder revision (main), which cannot be cloned; publish a revision of the upstream package", where)}
	}
	return nil, &UpstreamError{fmt.Sprintf("%s has no published revision yet; publish one", where)}
}

// LatestAsSeen is the latest revision of one package as a reader of Porch's
// answers finds it: the Published revision labelled kpt.dev/latest-revision
// (the higher one, when a cache briefly shows the label on two), else the
// highest-numbered published one (Latest).
func LatestAsSeen(revs []*porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	var labelled *porchv1alpha1.PackageRevision
	for _, pr := range revs {
		if IsPlaceholder(pr) || pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished ||
			pr.Labels[porchv1alpha1.LatestPackageRevisionLabel] != "true" {
			continue
		}
		if labelled == nil || pr.Spec.Revision > labelled.Spec.Revision {
			labelled = pr
		}
	}
	if labelled != nil {
		return labelled
	}
	var highest *porchv1alpha1.PackageRevision
	for _, pr := range revs {
		if IsPlaceholder(pr) || !IsPublished(pr) {
			continue
		}
		if highest == nil || pr.Spec.Revision > highest.Spec.Revision {
			highest = pr
		}
	}
	return highest
}
