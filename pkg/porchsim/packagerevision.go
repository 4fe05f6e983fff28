package porchsim

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
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
func (s *Sim) deleteRefusalLocked(pr *porchv1alpha1.PackageRevision) error {
	gr := porchv1alpha1.Resource(resPackageRevisions)
	switch {
	case helper.IsPlaceholder(pr):
		return refuse("the placeholder revision %q tracks a branch and cannot be deleted", pr.Name)
	case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished:
		return apierrors.NewForbidden(gr, pr.Name, errors.New(
			"published PackageRevisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion"))
	}
	if downstream := s.downstreamOfLocked(pr.Namespace, pr.Name); downstream != "" {
		return apierrors.NewForbidden(gr, pr.Name, fmt.Errorf("cannot delete package revision, it is referenced as upstream by: %s", downstream))
	}
	return nil
}

// downstreamOfLocked names a revision (placeholders aside) whose clone or
// upgrade task names upstream as its (new) upstream, "" if none does; Porch
// refuses to delete such an upstream.
func (s *Sim) downstreamOfLocked(namespace, upstream string) string {
	for _, key := range s.sortedKeysLocked(resPackageRevisions, namespace) {
		pr := s.objects[resPackageRevisions][key].obj.(*porchv1alpha1.PackageRevision)
		if helper.IsPlaceholder(pr) {
			continue
		}
		for _, t := range pr.Spec.Tasks {
			switch {
			case t.Type == porchv1alpha1.TaskTypeClone && t.Clone != nil && t.Clone.Upstream.UpstreamRef != nil && t.Clone.Upstream.UpstreamRef.Name == upstream,
				t.Type == porchv1alpha1.TaskTypeUpgrade && t.Upgrade != nil && t.Upgrade.NewUpstream.Name == upstream:
				return pr.Name
			}
		}
	}
	return ""
}

var packageRevisionResourcesGR = porchv1alpha1.Resource(resPackageRevisionResources)

func (s *Sim) servePackageRevisionLocked(action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub == "approval" && verb == "update" {
		// approval is for people and other automation (the controllers
		// never call it); tests use the Publish helper.
		pr, ok := action.(clienttesting.UpdateAction).GetObject().(*porchv1alpha1.PackageRevision)
		if !ok {
			return nil, apierrors.NewBadRequest("expected a PackageRevision")
		}
		return s.approveLocked(ns, pr)
	}
	if sub != "" {
		return nil, notServed(action)
	}
	k := packageRevisionKind
	switch verb {
	case "get":
		e, err := s.lookupLocked(k, ns, action.(clienttesting.GetAction).GetName())
		if err != nil {
			return nil, err
		}
		return e.obj.DeepCopyObject(), nil
	case "list":
		r := action.(clienttesting.ListAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields, packageRevisionFieldLabels)
		if err != nil {
			return nil, err
		}
		// Porch's lists carry no resourceVersion.
		return k.newList(items, ""), nil
	case "create":
		pr, ok := action.(clienttesting.CreateAction).GetObject().(*porchv1alpha1.PackageRevision)
		if !ok {
			return nil, apierrors.NewBadRequest("expected a PackageRevision")
		}
		return s.createPackageRevisionLocked(ns, pr)
	case "update":
		pr, ok := action.(clienttesting.UpdateAction).GetObject().(*porchv1alpha1.PackageRevision)
		if !ok {
			return nil, apierrors.NewBadRequest("expected a PackageRevision")
		}
		return s.updatePackageRevisionLocked(ns, pr)
	case "patch":
		a := action.(clienttesting.PatchAction)
		e, err := s.lookupLocked(k, ns, a.GetName())
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(k, e.obj, a.GetPatchType(), a.GetPatch())
		if err != nil {
			return nil, err
		}
		return s.updatePackageRevisionLocked(ns, patched.(*porchv1alpha1.PackageRevision))
	case "delete":
		// Porch ignores delete options: preconditions protect nothing.
		return nil, s.deletePackageRevisionLocked(ns, action.(clienttesting.DeleteAction).GetName())
	case "delete-collection":
		r := action.(clienttesting.DeleteCollectionAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields, packageRevisionFieldLabels)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, it := range items {
			pr := it.(*porchv1alpha1.PackageRevision)
			errs = append(errs, s.deletePackageRevisionLocked(pr.Namespace, pr.Name))
		}
		return nil, errors.Join(errs...)
	}
	return nil, notServed(action)
}

// createPackageRevisionLocked creates a Draft as Porch does: the name is
// derived from the spec, the one task makes the draft's files, and the
// package is rendered; a render failure refuses the create.
func (s *Sim) createPackageRevisionLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	spec := &in.Spec
	if spec.RepositoryName == "" {
		return nil, apierrors.NewBadRequest("spec.repositoryName is required")
	}
	repoEntry, ok := s.objects[resRepositories][objectKey{ns, spec.RepositoryName}]
	if !ok {
		return nil, apierrors.NewNotFound(repositoryKind.gr, spec.RepositoryName)
	}
	repo := repoEntry.obj.(*configv1alpha1.Repository)
	workspace := string(spec.WorkspaceName)
	name := helper.PackageRevisionName(spec.RepositoryName, spec.PackageName, workspace)

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
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(packageRevisionKind.gk, name, errs)
	}

	revs, err := s.createRefusalLocked(ns, spec, name)
	if err != nil {
		return nil, err
	}
	compute, lock, err := s.applyTaskLocked(ns, repo, spec, revs)
	if err != nil {
		return nil, err
	}
	// The task's engine work and the render are the costly part; they
	// read only what applyTaskLocked took from the store (files are never
	// modified in place), so they run without the Sim's lock, as Porch
	// serves creates at the same time. Porch's checks are made again
	// afterwards: a revision created meanwhile under the same name wins.
	var rendered renderOutcome
	s.unlockedLocked(func() {
		var files map[string]string
		if files, err = compute(); err == nil {
			rendered = s.render(files)
		}
	})
	if err != nil {
		return nil, err
	}
	if _, ok := s.objects[resRepositories][objectKey{ns, spec.RepositoryName}]; !ok {
		return nil, apierrors.NewNotFound(repositoryKind.gr, spec.RepositoryName)
	}
	if _, err := s.createRefusalLocked(ns, spec, name); err != nil {
		return nil, err
	}
	if rendered.failed {
		// Porch renders a new draft before it stores it; a failure
		// refuses the create and nothing is stored.
		return nil, refuse("%s", rendered.message)
	}
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       ns,
			Labels:          maps.Clone(in.Labels),
			Annotations:     maps.Clone(in.Annotations),
			Finalizers:      slices.Clone(in.Finalizers),
			OwnerReferences: slices.Clone(in.OwnerReferences),
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    spec.PackageName,
			RepositoryName: spec.RepositoryName,
			WorkspaceName:  spec.WorkspaceName,
			Lifecycle:      porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:          in.DeepCopy().Spec.Tasks,
		},
		Status: porchv1alpha1.PackageRevisionStatus{
			UpstreamLock: lock,
			Deployment:   repo.Spec.Deployment,
		},
	}
	if pr.Status.UpstreamLock == nil {
		pr.Status.UpstreamLock = &porchv1alpha1.UpstreamLock{}
	}
	mirrorKptfile(pr, rendered.files)
	e := s.insertLocked(resPackageRevisions, pr, rendered.files)
	e.skipped = rendered.skipped
	return e.obj.DeepCopyObject(), nil
}

// unlockedLocked runs work with the Sim's lock released (the caller holds
// it and has it again on return): for the engine work of a request, which
// reads only what the caller took from the store. Tests' rendering hook runs
// first, without the lock.
func (s *Sim) unlockedLocked(work func()) {
	hook := s.rendering
	s.mu.Unlock()
	defer s.mu.Lock()
	if hook != nil {
		hook()
	}
	work()
}

// createRefusalLocked makes Porch's checks of a create against what is
// stored, in Porch's order: the workspace (and so the name) first, so that
// a retried create is told the revision exists whatever its task; then a
// clone of a package that exists; then a new package over an existing one.
// It returns the package's revisions.
func (s *Sim) createRefusalLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, name string) ([]*porchv1alpha1.PackageRevision, error) {
	workspace := string(spec.WorkspaceName)
	revs := s.packageRevisionsLocked(ns, spec.RepositoryName, spec.PackageName)
	for _, r := range revs {
		if string(r.Spec.WorkspaceName) == workspace {
			return nil, refuse("%s; package revision with name %s in repo %s with workspaceName %s already exists",
				helper.WorkspaceNotUniqueMessage, spec.PackageName, spec.RepositoryName, workspace)
		}
	}
	if _, ok := s.objects[resPackageRevisions][objectKey{ns, name}]; ok {
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

// validatePackageName checks a package path: segments separated by "/",
// none empty, "." or "..".
func validatePackageName(pkg string) field.ErrorList {
	p := field.NewPath("spec", "packageName")
	if pkg == "" {
		return field.ErrorList{field.Required(p, "a package name is required")}
	}
	for _, seg := range strings.Split(pkg, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return field.ErrorList{field.Invalid(p, pkg, "must be a relative path without empty, \".\" or \"..\" segments")}
		}
	}
	return nil
}

// applyTaskLocked checks the task of a new draft against the store and
// returns how to make its files (compute, which needs no lock) and its
// status.upstreamLock.
func (s *Sim) applyTaskLocked(ns string, repo *configv1alpha1.Repository, spec *porchv1alpha1.PackageRevisionSpec,
	revs []*porchv1alpha1.PackageRevision) (compute func() (map[string]string, error), _ *porchv1alpha1.UpstreamLock, _ error) {
	task := spec.Tasks[0]
	taskPath := field.NewPath("spec", "tasks").Index(0)
	invalid := func(f, msg string) error {
		return apierrors.NewInvalid(packageRevisionKind.gk,
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
		return s.cloneLocked(ns, repo, spec, c.Upstream.UpstreamRef.Name)

	case porchv1alpha1.TaskTypeEdit:
		if task.Edit == nil || task.Edit.Source == nil || task.Edit.Source.Name == "" {
			return nil, nil, invalid("edit", "edit.sourceRef.name is required")
		}
		return s.editLocked(ns, spec, task.Edit.Source.Name)

	case porchv1alpha1.TaskTypeUpgrade:
		u := task.Upgrade
		if u == nil || u.OldUpstream.Name == "" || u.NewUpstream.Name == "" || u.LocalPackageRevisionRef.Name == "" {
			return nil, nil, invalid("upgrade", "upgrade.oldUpstreamRef, newUpstreamRef and localPackageRevisionRef are required")
		}
		if u.Strategy != "" && u.Strategy != porchv1alpha1.ResourceMerge {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("porchsim supports only the %s upgrade strategy, not %q",
				porchv1alpha1.ResourceMerge, u.Strategy))
		}
		return s.upgradeLocked(ns, spec, u, revs)
	}
	return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("task type %q is not supported by porchsim (init, clone, edit and upgrade are)", task.Type))
}

func (s *Sim) cloneLocked(ns string, repo *configv1alpha1.Repository, spec *porchv1alpha1.PackageRevisionSpec, upstream string) (func() (map[string]string, error), *porchv1alpha1.UpstreamLock, error) {
	src, e, ok := s.packageRevisionLocked(ns, upstream)
	if !ok {
		return nil, nil, refuse("failed to fetch package revision %q: package revision %q not found", upstream, upstream)
	}
	if helper.IsPlaceholder(src) {
		return nil, nil, refuse("upstream revision may not be the placeholder package revision %s/%s", src.Spec.RepositoryName, src.Name)
	}
	if !helper.LifecycleIsPublished(src.Spec.Lifecycle) {
		return nil, nil, refuse("upstream package revision %q is %s; only a published revision can be cloned", upstream, src.Spec.Lifecycle)
	}
	files, err := s.filesLocked(e)
	if err != nil {
		return nil, nil, err
	}
	lock := s.lockLocked(src)
	pkg, deployment := spec.PackageName, repo.Spec.Deployment
	return func() (map[string]string, error) {
		out, err := s.engine.clone(files, pkg, deployment, lock)
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

func (s *Sim) editLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, source string) (func() (map[string]string, error), *porchv1alpha1.UpstreamLock, error) {
	src, e, ok := s.packageRevisionLocked(ns, source)
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
	files, err := s.filesLocked(e)
	if err != nil {
		return nil, nil, err
	}
	return ready(copyFiles(files)), src.Status.UpstreamLock.DeepCopy(), nil
}

func (s *Sim) upgradeLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, u *porchv1alpha1.PackageUpgradeTaskSpec,
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
	var entries [3]*entry
	for i, name := range []string{u.OldUpstream.Name, u.NewUpstream.Name, u.LocalPackageRevisionRef.Name} {
		pr, e, ok := s.packageRevisionLocked(ns, name)
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
		f, err := s.filesLocked(e)
		if err != nil {
			return nil, nil, err
		}
		files[i] = f
	}
	lock := s.lockLocked(newUp)
	pkg, target := spec.PackageName, newUp.Name
	_ = oldUp
	return func() (map[string]string, error) {
		out, err := s.engine.upgrade(files[0], files[1], files[2], pkg, lock)
		if err != nil {
			return nil, refuse("error updating the package %q to revision %q: %v", pkg, target, err)
		}
		return out, nil
	}, lock.upstreamLock(), nil
}

// lockLocked is where a published revision lives in git, as a clone of it
// records it: its repository's URL (ending in .git), the package directory,
// the tag <package>/v<revision> and a made-up, deterministic commit.
func (s *Sim) lockLocked(src *porchv1alpha1.PackageRevision) gitLock {
	ref := fmt.Sprintf("%s/v%d", src.Spec.PackageName, src.Spec.Revision)
	url := s.repositoryURLLocked(src.Namespace, src.Spec.RepositoryName)
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

// repositoryURLLocked is the git URL of a repository (its name when it has
// none).
func (s *Sim) repositoryURLLocked(namespace, repo string) string {
	if e, ok := s.objects[resRepositories][objectKey{namespace, repo}]; ok {
		if g := e.obj.(*configv1alpha1.Repository).Spec.Git; g != nil && g.Repo != "" {
			return g.Repo
		}
	}
	return repo
}

// fillSelfLockLocked records in a PackageRevision about to be stored where
// it lives in git: drafts/<package>/<workspace>,
// proposed/<package>/<workspace>, <package>/v<revision>, or the branch
// (main) for the placeholder, at its commit (its resourceVersion).
func (s *Sim) fillSelfLockLocked(pr *porchv1alpha1.PackageRevision) {
	ref := ""
	switch {
	case helper.IsPlaceholder(pr):
		ref = helper.PlaceholderWorkspace
	case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft:
		ref = fmt.Sprintf("drafts/%s/%s", pr.Spec.PackageName, pr.Spec.WorkspaceName)
	case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed:
		ref = fmt.Sprintf("proposed/%s/%s", pr.Spec.PackageName, pr.Spec.WorkspaceName)
	default:
		ref = fmt.Sprintf("%s/v%d", pr.Spec.PackageName, pr.Spec.Revision)
	}
	pr.Status.SelfLock = gitLock{
		repo:      s.repositoryURLLocked(pr.Namespace, pr.Spec.RepositoryName),
		directory: pr.Spec.PackageName,
		ref:       ref,
		commit:    pr.ResourceVersion,
	}.upstreamLock()
}

// mirrorKptfile copies what Porch mirrors from the Kptfile into the
// revision: readiness gates, conditions and the package metadata; an
// unparseable Kptfile leaves the mirrors as they were.
func mirrorKptfile(pr *porchv1alpha1.PackageRevision, files map[string]string) {
	m, err := kptfileMirror(files)
	if err != nil {
		return
	}
	pr.Spec.ReadinessGates = m.gates
	pr.Status.Conditions = m.conditions
	pr.Spec.PackageMetadata = m.metadata
}

func (s *Sim) deletePackageRevisionLocked(ns, name string) error {
	e, err := s.lookupLocked(packageRevisionKind, ns, name)
	if err != nil {
		return err
	}
	if err := s.deleteRefusalLocked(e.obj.(*porchv1alpha1.PackageRevision)); err != nil {
		return err
	}
	s.deleteEntryLocked(resPackageRevisions, e, false)
	return nil
}

func (s *Sim) servePackageRevisionResourcesLocked(action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub != "" {
		return nil, notServed(action)
	}
	switch verb {
	case "get":
		name := action.(clienttesting.GetAction).GetName()
		e, ok := s.objects[resPackageRevisions][objectKey{ns, name}]
		if !ok {
			return nil, apierrors.NewNotFound(packageRevisionResourcesGR, name)
		}
		return s.resourcesLocked(e, nil)
	case "list":
		r := action.(clienttesting.ListAction).GetListRestrictions()
		if err := checkFieldSelector(r.Fields, packageRevisionFieldLabels); err != nil {
			return nil, err
		}
		// Every item of the list carries its files, so the list fetches
		// those of each lazy revision it selects (one call of the file
		// source per revision not fetched yet, see SetFileSource); the
		// selectors are applied first, so that a narrow list (a field
		// selector on spec.repository or spec.packageName, say) fetches
		// only what it returns. A failed fetch fails the list.
		l := &porchv1alpha1.PackageRevisionResourcesList{}
		for _, key := range s.sortedKeysLocked(resPackageRevisions, ns) {
			e := s.objects[resPackageRevisions][key]
			if selects(r.Labels, r.Fields, mustAccessor(e.obj).GetLabels(), packageRevisionKind.fields(e.obj)) {
				prr, err := s.resourcesLocked(e, nil)
				if err != nil {
					return nil, err
				}
				l.Items = append(l.Items, *prr)
			}
		}
		return l, nil
	case "update":
		prr, ok := action.(clienttesting.UpdateAction).GetObject().(*porchv1alpha1.PackageRevisionResources)
		if !ok {
			return nil, apierrors.NewBadRequest("expected a PackageRevisionResources")
		}
		return s.updateResourcesLocked(ns, prr)
	}
	// create, delete and patch are not served by Porch either.
	return nil, notServed(action)
}

// resourcesLocked is the PackageRevisionResources of a stored revision
// (whose files a lazy revision fetches, see filesLocked). Only an update's
// response carries a render status.
func (s *Sim) resourcesLocked(e *entry, rs *porchv1alpha1.RenderStatus) (*porchv1alpha1.PackageRevisionResources, error) {
	files, err := s.filesLocked(e)
	if err != nil {
		return nil, err
	}
	pr := e.obj.(*porchv1alpha1.PackageRevision)
	prr := &porchv1alpha1.PackageRevisionResources{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pr.Name,
			Namespace:         pr.Namespace,
			UID:               pr.UID,
			ResourceVersion:   pr.ResourceVersion,
			Generation:        pr.Generation,
			CreationTimestamp: pr.CreationTimestamp,
			Labels:            maps.Clone(pr.Labels),
			Annotations:       maps.Clone(pr.Annotations),
		},
		Spec: porchv1alpha1.PackageRevisionResourcesSpec{
			PackageName:    pr.Spec.PackageName,
			WorkspaceName:  pr.Spec.WorkspaceName,
			Revision:       pr.Spec.Revision,
			RepositoryName: pr.Spec.RepositoryName,
			Resources:      copyFiles(files),
		},
	}
	if rs != nil {
		prr.Status.RenderStatus = *rs.DeepCopy()
	}
	return prr, nil
}

// updateResourcesLocked stores the files of a Draft after healing (the
// comments an update lost are copied back from the stored files) and
// rendering them, as Porch does. A failed render stores nothing and answers 500, unless the
// revision asks to keep its files anyway (porch.kpt.dev/push-on-render-
// failure): then the files sent are stored, with the Kptfile recording the
// failure, and the answer is still a 500. It releases the Sim's lock while
// it heals and renders (see below) and holds it again when it returns.
func (s *Sim) updateResourcesLocked(ns string, in *porchv1alpha1.PackageRevisionResources) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	e, ok := s.objects[resPackageRevisions][objectKey{ns, in.Name}]
	if !ok {
		return nil, apierrors.NewNotFound(packageRevisionResourcesGR, in.Name)
	}
	pr := e.obj.(*porchv1alpha1.PackageRevision)
	if err := checkUpdateVersion(resPackageRevisionResources, in.Name, in.ResourceVersion, pr.ResourceVersion); err != nil {
		return nil, err
	}
	if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
		return nil, refuse("cannot update a package revision with lifecycle value %q; package must be Draft", pr.Spec.Lifecycle)
	}
	// Porch puts back the comments the update lost, then renders. That
	// is the costly part of the request and reads only the stored files
	// (never modified in place: a change stores a new map) and the request,
	// so it runs without the Sim's lock, as Porch renders requests for
	// different revisions at the same time. A change of the revision
	// meanwhile makes this update stale, as a new commit would in Porch.
	stored, err := s.filesLocked(e)
	if err != nil {
		return nil, err
	}
	rv := pr.ResourceVersion
	var rendered renderOutcome
	s.unlockedLocked(func() {
		var healed map[string]string
		if healed, err = kptengine.Heal(stored, in.Spec.Resources); err == nil {
			rendered = s.render(healed)
		}
	})
	if cur, ok := s.objects[resPackageRevisions][objectKey{ns, in.Name}]; !ok || cur != e || e.obj.(*porchv1alpha1.PackageRevision).ResourceVersion != rv {
		if !ok {
			return nil, apierrors.NewNotFound(packageRevisionResourcesGR, in.Name)
		}
		return nil, staleResourceVersion(resPackageRevisionResources, in.Name)
	}
	pr = e.obj.(*porchv1alpha1.PackageRevision)
	if err != nil {
		return nil, refuse("failed to heal resources: %v", err)
	}
	if rendered.failed {
		if pr.Annotations[porchv1alpha1.PushOnRenderFailureAnnotation] != "true" {
			return nil, refuse("%s%sDetails: %s", helper.RenderFailedMessage, helper.RenderFailedNotStored, rendered.message)
		}
		s.setFilesLocked(e, rendered.files, rendered.skipped)
		return nil, refuse("%s%sDetails: %s", helper.RenderFailedMessage, helper.RenderFailedStored, rendered.message)
	}
	s.setFilesLocked(e, rendered.files, rendered.skipped)
	rs := rendered.status
	return s.resourcesLocked(e, &rs)
}

// setFilesLocked stores new files for a revision. The files and the
// PackageRevision are one object in Porch, committed together: the revision
// gets a new resourceVersion (a new commit, even for identical files) and a
// MODIFIED event, and its Kptfile mirrors are refreshed.
func (s *Sim) setFilesLocked(e *entry, files map[string]string, skipped []string) {
	cur := e.obj.(*porchv1alpha1.PackageRevision)
	obj := cur.DeepCopy()
	mirrorKptfile(obj, files)
	e.files, e.lazy = files, false
	e.skipped = skipped
	s.replaceLocked(resPackageRevisions, e, obj)
}

// packageRevisionLocked returns a stored revision and its entry, whose
// files are read through filesLocked.
func (s *Sim) packageRevisionLocked(ns, name string) (*porchv1alpha1.PackageRevision, *entry, bool) {
	e, ok := s.objects[resPackageRevisions][objectKey{ns, name}]
	if !ok {
		return nil, nil, false
	}
	return e.obj.(*porchv1alpha1.PackageRevision), e, true
}

// packageEntriesLocked lists the revisions of one package, by name, from
// the package index (see index.go).
func (s *Sim) packageEntriesLocked(ns, repo, pkg string) []*entry {
	names := slices.Sorted(maps.Keys(s.packages[packageKey{ns, repo, pkg}]))
	out := make([]*entry, 0, len(names))
	for _, name := range names {
		out = append(out, s.objects[resPackageRevisions][objectKey{ns, name}])
	}
	return out
}

func (s *Sim) packageRevisionsLocked(ns, repo, pkg string) []*porchv1alpha1.PackageRevision {
	var out []*porchv1alpha1.PackageRevision
	for _, e := range s.packageEntriesLocked(ns, repo, pkg) {
		out = append(out, e.obj.(*porchv1alpha1.PackageRevision))
	}
	return out
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
