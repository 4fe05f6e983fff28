package porchsim

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// applyTaskLocked checks the task of a new draft against the store and
// returns how to make its files (compute, which needs no lock) and its
// status.upstreamLock.
func (p *porch) applyTaskLocked(ns string, repo *configv1alpha1.Repository, spec *porchv1alpha1.PackageRevisionSpec,
	revs []*porchv1alpha1.PackageRevision) (compute func() (map[string]string, error), _ *porchv1alpha1.UpstreamLock, _ error) {
	task := spec.Tasks[0]
	taskPath := field.NewPath("spec", "tasks").Index(0)
	invalid := func(f, msg string) error {
		return apierrors.NewInvalid(packageRevisionKind.GK,
			helper.PackageRevisionName(spec.RepositoryName, spec.PackageName, string(spec.WorkspaceName)),
			field.ErrorList{field.Required(taskPath.Child(f), msg)})
	}
	switch task.Type {
	case porchv1alpha1.TaskTypeInit:
		description := spec.PackageName + " description"
		if task.Init != nil && task.Init.Description != "" {
			description = task.Init.Description
		}
		kf, err := minimalKptfile(lastSegment(spec.PackageName), description)
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		return ready(map[string]string{kptfileName: kf}), nil, nil

	case porchv1alpha1.TaskTypeClone:
		c := task.Clone
		if c == nil || c.Upstream.UpstreamRef == nil || c.Upstream.UpstreamRef.Name == "" {
			if c != nil && (c.Upstream.Git != nil || c.Upstream.Oci != nil) {
				return nil, nil, apierrors.NewBadRequest("porchsim clones only from PackageRevisions (clone.upstreamRef.upstreamRef)")
			}
			return nil, nil, invalid("clone", "clone.upstreamRef.upstreamRef.name is required")
		}
		return p.cloneLocked(ns, repo, spec, c.Upstream.UpstreamRef.Name)

	case porchv1alpha1.TaskTypeEdit:
		if task.Edit == nil || task.Edit.Source == nil || task.Edit.Source.Name == "" {
			return nil, nil, invalid("edit", "edit.sourceRef.name is required")
		}
		return p.editLocked(ns, spec, task.Edit.Source.Name)

	case porchv1alpha1.TaskTypeUpgrade:
		u := task.Upgrade
		if u == nil || u.OldUpstream.Name == "" || u.NewUpstream.Name == "" || u.LocalPackageRevisionRef.Name == "" {
			return nil, nil, invalid("upgrade", "upgrade.oldUpstreamRef, newUpstreamRef and localPackageRevisionRef are required")
		}
		if u.Strategy != "" && u.Strategy != porchv1alpha1.ResourceMerge {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("porchsim supports only the %s upgrade strategy, not %q",
				porchv1alpha1.ResourceMerge, u.Strategy))
		}
		return p.upgradeLocked(ns, spec, u, revs)
	}
	return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("task type %q is not supported by porchsim (init, clone, edit and upgrade are)", task.Type))
}

func (p *porch) cloneLocked(ns string, repo *configv1alpha1.Repository, spec *porchv1alpha1.PackageRevisionSpec, upstream string) (func() (map[string]string, error), *porchv1alpha1.UpstreamLock, error) {
	src, e, ok := p.packageRevisionLocked(ns, upstream)
	if !ok {
		return nil, nil, refuse("failed to fetch package revision %q: package revision %q not found", upstream, upstream)
	}
	if helper.IsPlaceholder(src) {
		return nil, nil, refuse("upstream revision may not be the placeholder package revision %s/%s", src.Spec.RepositoryName, src.Name)
	}
	if !helper.LifecycleIsPublished(src.Spec.Lifecycle) {
		return nil, nil, refuse("upstream package revision %q is %s; only a published revision can be cloned", upstream, src.Spec.Lifecycle)
	}
	files, err := p.filesLocked(e)
	if err != nil {
		return nil, nil, err
	}
	lock := p.lockLocked(src)
	pkg, deployment := spec.PackageName, repo.Spec.Deployment
	return func() (map[string]string, error) {
		out, err := p.engine.clone(files, pkg, deployment, lock)
		if err != nil {
			return nil, refuse("failed to clone package %q: %v", upstream, err)
		}
		return out, nil
	}, lock.upstreamLock(), nil
}

// ready is the compute of a task whose files are already made.
func ready(files map[string]string) func() (map[string]string, error) {
	return func() (map[string]string, error) { return files, nil }
}

func (p *porch) editLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, source string) (func() (map[string]string, error), *porchv1alpha1.UpstreamLock, error) {
	src, e, ok := p.packageRevisionLocked(ns, source)
	switch {
	case !ok:
		return nil, nil, refuse("failed to fetch package revision %q: package revision %q not found", source, source)
	case src.Spec.RepositoryName != spec.RepositoryName || src.Spec.PackageName != spec.PackageName:
		return nil, nil, refuse("source %q of edit is a revision of package %q in repository %q, not of package %q in repository %q",
			source, src.Spec.PackageName, src.Spec.RepositoryName, spec.PackageName, spec.RepositoryName)
	case helper.IsPlaceholder(src):
		return nil, nil, refuse("source revision may not be the placeholder package revision %s/%s", src.Spec.RepositoryName, src.Name)
	case !helper.LifecycleIsPublished(src.Spec.Lifecycle):
		return nil, nil, refuse("source %q of edit is %s; only a published revision can be edited", source, src.Spec.Lifecycle)
	}
	files, err := p.filesLocked(e)
	if err != nil {
		return nil, nil, err
	}
	return ready(copyFiles(files)), src.Status.UpstreamLock.DeepCopy(), nil
}

func (p *porch) upgradeLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, u *porchv1alpha1.PackageUpgradeTaskSpec,
	revs []*porchv1alpha1.PackageRevision) (func() (map[string]string, error), *porchv1alpha1.UpstreamLock, error) {
	// Porch checks, among the package's own revisions, that the sources of
	// the upgrade are published before it fetches anything.
	for _, r := range revs {
		for _, name := range []string{u.OldUpstream.Name, u.NewUpstream.Name, u.LocalPackageRevisionRef.Name} {
			if r.Name == name && !helper.LifecycleIsPublished(r.Spec.Lifecycle) {
				return nil, nil, refuse("all source PackageRevisions of upgrade task must be published, %q is not", r.Name)
			}
		}
	}
	var prs [3]*porchv1alpha1.PackageRevision
	var entries [3]*store.Entry
	for i, name := range []string{u.OldUpstream.Name, u.NewUpstream.Name, u.LocalPackageRevisionRef.Name} {
		pr, e, ok := p.packageRevisionLocked(ns, name)
		if !ok {
			return nil, nil, refuse("failed to fetch package revision %q: package revision %q not found", name, name)
		}
		prs[i], entries[i] = pr, e
	}
	for _, pr := range prs {
		if !helper.LifecycleIsPublished(pr.Spec.Lifecycle) {
			return nil, nil, refuse("all source PackageRevisions of upgrade task must be published, %q is not", pr.Name)
		}
	}
	oldUp, newUp, local := prs[0], prs[1], prs[2]
	if helper.IsPlaceholder(newUp) {
		return nil, nil, refuse("target upstream revision may not be the placeholder package revision %s/%s", newUp.Spec.RepositoryName, newUp.Name)
	}
	if helper.IsPlaceholder(local) {
		return nil, nil, refuse("source revision may not be the placeholder package revision %s/%s", local.Spec.RepositoryName, local.Name)
	}
	// The files are read once the request is known to be valid: a lazy
	// revision's are fetched only for an upgrade that will use them.
	var files [3]map[string]string
	for i, e := range entries {
		f, err := p.filesLocked(e)
		if err != nil {
			return nil, nil, err
		}
		files[i] = f
	}
	lock := p.lockLocked(newUp)
	pkg, target := spec.PackageName, newUp.Name
	_ = oldUp
	return func() (map[string]string, error) {
		out, err := p.engine.upgrade(files[0], files[1], files[2], pkg, lock)
		if err != nil {
			return nil, refuse("error updating the package %q to revision %q: %v", pkg, target, err)
		}
		return out, nil
	}, lock.upstreamLock(), nil
}

// lockLocked is where a published revision lives in git, as a clone of it
// records it: its repository's URL (ending in .git), the package directory,
// the tag <package>/v<revision> and a made-up, deterministic commit.
func (p *porch) lockLocked(src *porchv1alpha1.PackageRevision) gitLock {
	ref := fmt.Sprintf("%s/v%d", src.Spec.PackageName, src.Spec.Revision)
	url := p.repositoryURLLocked(src.Namespace, src.Spec.RepositoryName)
	if !strings.HasSuffix(url, ".git") {
		url += ".git"
	}
	return gitLock{
		repo:      url,
		directory: src.Spec.PackageName,
		ref:       ref,
		commit:    fakeCommit(src.Namespace, src.Spec.RepositoryName, ref),
	}
}
