package porchsim

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// refuse is how Porch reports an operation its engine refuses: a 500
// InternalError carrying the reason.
func refuse(format string, args ...any) error {
	return apierrors.NewInternalError(fmt.Errorf(format, args...))
}

// staleResourceVersion is Porch's answer to an update with a stale
// resourceVersion: the API machinery's conflict, wrapped in a 500 (Porch's
// engine returns the conflict as a plain error).
func staleResourceVersion(resource, name string) error {
	return apierrors.NewInternalError(apierrors.NewConflict(porchv1alpha1.Resource(resource), name, errors.New(helper.OptimisticLockMessage)))
}

// checkUpdateVersion applies Porch's optimistic concurrency to an update.
func checkUpdateVersion(resource, name, sent, current string) error {
	switch sent {
	case "":
		return refuse("resourceVersion must be specified for an update")
	case current:
		return nil
	}
	return staleResourceVersion(resource, name)
}

// deleteRefusalLocked is Porch's answer to a delete of a revision it does
// not delete (nil when it would): a Published revision must be proposed for
// deletion first, and a revision other revisions were cloned or upgraded
// from is never deleted (both 403).
func (p *porch) deleteRefusalLocked(pr *porchv1alpha1.PackageRevision) error {
	gr := porchv1alpha1.Resource(resPackageRevisions)
	switch {
	case helper.IsPlaceholder(pr):
		return refuse("the placeholder revision %q tracks a branch and cannot be deleted", pr.Name)
	case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished:
		return apierrors.NewForbidden(gr, pr.Name, errors.New(
			"published PackageRevisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion"))
	}
	if downstream := p.downstreamOfLocked(pr.Namespace, pr.Name); downstream != "" {
		return apierrors.NewForbidden(gr, pr.Name, fmt.Errorf("cannot delete package revision, it is referenced as upstream by: %s", downstream))
	}
	return nil
}

// downstreamOfLocked names a revision (placeholders aside) whose clone or
// upgrade task names upstream as its (new) upstream, "" if none does; Porch
// refuses to delete such an upstream.
func (p *porch) downstreamOfLocked(namespace, upstream string) string {
	for _, e := range p.SortedEntriesLocked(resPackageRevisions, namespace) {
		pr := e.Object().(*porchv1alpha1.PackageRevision)
		if helper.IsPlaceholder(pr) {
			continue
		}
		for _, t := range pr.Spec.Tasks {
			if helper.TaskUpstream(t) == upstream {
				return pr.Name
			}
		}
	}
	return ""
}

// createRefusalLocked makes Porch's checks of a create against what is
// stored, in Porch's order: the workspace (and so the name) first, so that
// a retried create is told the revision exists whatever its task; then a
// clone of a package that exists; then a new package over an existing one.
// It returns the package's revisions.
func (p *porch) createRefusalLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, name string) ([]*porchv1alpha1.PackageRevision, error) {
	workspace := string(spec.WorkspaceName)
	revs := p.packageRevisionsLocked(ns, spec.RepositoryName, spec.PackageName)
	for _, r := range revs {
		if string(r.Spec.WorkspaceName) == workspace {
			return nil, refuse("%s; package revision with name %s in repo %s with workspaceName %s already exists",
				helper.WorkspaceNotUniqueMessage, spec.PackageName, spec.RepositoryName, workspace)
		}
	}
	if _, ok := p.EntryLocked(resPackageRevisions, ns, name); ok {
		// Another package whose dotted path makes the same name.
		return nil, refuse("%s; package revision %s already exists", helper.WorkspaceNotUniqueMessage, name)
	}
	if len(revs) > 0 {
		switch spec.Tasks[0].Type {
		case porchv1alpha1.TaskTypeClone:
			return nil, refuse("`clone` %s %q that already exists in repo %q; make subsequent revisions using `copy`",
				helper.CloneIntoExistingMessage, spec.PackageName, spec.RepositoryName)
		case porchv1alpha1.TaskTypeInit:
			return nil, refuse("package %q already exists in repository %q", spec.PackageName, spec.RepositoryName)
		}
	}
	return revs, nil
}

// validatePackageName checks a package path (helper.IsPackagePath).
func validatePackageName(pkg string) field.ErrorList {
	p := field.NewPath("spec", "packageName")
	if pkg == "" {
		return field.ErrorList{field.Required(p, "a package name is required")}
	}
	if !helper.IsPackagePath(pkg) {
		return field.ErrorList{field.Invalid(p, pkg, "must be a relative path without empty, \".\" or \"..\" segments")}
	}
	return nil
}

// conflictInProgress is Porch's per-revision lock refusing a request that
// overlaps another one on the same revision (409).
func conflictInProgress(namespace, name string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusConflict,
		Reason: metav1.StatusReasonConflict,
		Details: &metav1.StatusDetails{
			Group: porchv1alpha1.GroupName,
			Kind:  resPackageRevisions,
			Name:  name,
		},
		Message: fmt.Sprintf("Operation cannot be fulfilled on packagerevisions.porch.kpt.dev %q: another request is already in progress on package revision \"%s/%s\"",
			name, namespace, name),
	}}
}
