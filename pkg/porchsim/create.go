package porchsim

import (
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// createPackageRevisionLocked creates a Draft as Porch does: the name is
// derived from the spec, the one task makes the draft's files, and the
// package is rendered; a render failure refuses the create.
func (p *porch) createPackageRevisionLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	spec := &in.Spec
	if spec.RepositoryName == "" {
		return nil, apierrors.NewBadRequest("spec.repositoryName is required")
	}
	repo, err := p.repositoryLocked(ns, spec.RepositoryName)
	if err != nil {
		return nil, err
	}
	name := helper.PackageRevisionName(spec.RepositoryName, spec.PackageName, string(spec.WorkspaceName))
	if errs := createErrors(in, name); len(errs) > 0 {
		return nil, apierrors.NewInvalid(packageRevisionKind.GK, name, errs)
	}
	revs, err := p.createRefusalLocked(ns, spec, name)
	if err != nil {
		return nil, err
	}
	compute, lock, err := p.applyTaskLocked(ns, repo, spec, revs)
	if err != nil {
		return nil, err
	}
	rendered, err := p.computeDraftLocked(ns, spec, name, compute)
	if err != nil {
		return nil, err
	}
	pr := createdDraft(ns, name, in, repo, lock)
	mirrorKptfile(pr, rendered.files)
	e := p.insertRevisionLocked(pr, rendered.files)
	filesOf(e).skipped = rendered.skipped
	return e.Object().DeepCopyObject(), nil
}

// createErrors is what Porch finds invalid in a create of the revision
// named name.
func createErrors(in *porchv1alpha1.PackageRevision, name string) field.ErrorList {
	spec := &in.Spec
	workspace := string(spec.WorkspaceName)
	errs := validatePackageName(spec.PackageName)
	wsPath := field.NewPath("spec", "workspaceName")
	if workspace == "" {
		errs = append(errs, field.Required(wsPath, "a workspace name is required"))
	}
	for _, msg := range validation.IsDNS1123Label(workspace) {
		errs = append(errs, field.Invalid(wsPath, workspace, msg))
	}
	if len(errs) == 0 {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, msg))
		}
	}
	switch spec.Lifecycle {
	case "", porchv1alpha1.PackageRevisionLifecycleDraft:
	default:
		errs = append(errs, field.Invalid(field.NewPath("spec", "lifecycle"), spec.Lifecycle, "value can be only created as Draft"))
	}
	if _, ok := in.Labels[porchv1alpha1.LatestPackageRevisionLabel]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels", porchv1alpha1.LatestPackageRevisionLabel),
			"label is managed by porch and cannot be set by users"))
	}
	if len(spec.Tasks) != 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "tasks"), len(spec.Tasks), "a create carries exactly one task"))
	}
	return errs
}

// computeDraftLocked makes the files of a new draft (compute) and renders
// them. That is the costly part, and reads only what applyTaskLocked took
// from the store (files are never modified in place), so it runs without
// the lock, as Porch serves creates at the same time. Porch's checks are
// made again afterwards: a revision created meanwhile under the same name
// wins. A render failure refuses the create: Porch renders a new draft
// before it stores it, and nothing is stored.
func (p *porch) computeDraftLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, name string,
	compute func() (map[string]string, error)) (renderOutcome, error) {
	var rendered renderOutcome
	var err error
	p.unlockedLocked(func() {
		var files map[string]string
		if files, err = compute(); err == nil {
			rendered = p.render(files)
		}
	})
	if err != nil {
		return renderOutcome{}, err
	}
	if _, err := p.repositoryLocked(ns, spec.RepositoryName); err != nil {
		return renderOutcome{}, err
	}
	if _, err := p.createRefusalLocked(ns, spec, name); err != nil {
		return renderOutcome{}, err
	}
	key := store.Key{Namespace: ns, Name: name}
	if rendered.failed {
		p.failedRenders[key] = newFailedRender(key, spec, rendered)
		return renderOutcome{}, refuse("%s", rendered.message)
	}
	delete(p.failedRenders, key)
	return rendered, nil
}

// createdDraft is the revision a create stores: what the request may set,
// and what Porch sets itself.
func createdDraft(ns, name string, in *porchv1alpha1.PackageRevision, repo *configv1alpha1.Repository,
	lock *porchv1alpha1.UpstreamLock) *porchv1alpha1.PackageRevision {
	if lock == nil {
		lock = &porchv1alpha1.UpstreamLock{}
	}
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       ns,
			Labels:          maps.Clone(in.Labels),
			Annotations:     maps.Clone(in.Annotations),
			Finalizers:      slices.Clone(in.Finalizers),
			OwnerReferences: slices.Clone(in.OwnerReferences),
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    in.Spec.PackageName,
			RepositoryName: in.Spec.RepositoryName,
			WorkspaceName:  in.Spec.WorkspaceName,
			Lifecycle:      porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:          in.DeepCopy().Spec.Tasks,
		},
		Status: porchv1alpha1.PackageRevisionStatus{
			UpstreamLock: lock,
			Deployment:   repo.Spec.Deployment,
		},
	}
}
