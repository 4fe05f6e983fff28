package porchsim

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// placeholderWorkspace is the workspace of the placeholder revision that
// tracks a repository's branch.
const placeholderWorkspace = "main"

// packageRevisionName is the name Porch gives a revision:
// <repository>.<package path with "/" replaced by ".">.<workspaceName>.
func packageRevisionName(repo, pkg, workspace string) string {
	return repo + "." + strings.ReplaceAll(pkg, "/", ".") + "." + workspace
}

func isPlaceholder(pr *porchv1alpha1.PackageRevision) bool {
	return pr.Spec.Revision == porchv1alpha1.PlaceholderRevision
}

// isPublished is Porch's LifecycleIsPublished: Published or DeletionProposed.
func isPublished(lc porchv1alpha1.PackageRevisionLifecycle) bool {
	return lc == porchv1alpha1.PackageRevisionLifecyclePublished || lc == porchv1alpha1.PackageRevisionLifecycleDeletionProposed
}

// refuse is how Porch reports an operation its engine refuses: an internal
// error carrying the reason.
func refuse(format string, args ...any) error {
	return apierrors.NewInternalError(fmt.Errorf(format, args...))
}

// deleteRefusal says why Porch would refuse to delete a revision ("" if it
// would not).
func deleteRefusal(pr *porchv1alpha1.PackageRevision) string {
	switch {
	case isPlaceholder(pr):
		return fmt.Sprintf("the placeholder revision %q tracks a branch and cannot be deleted", pr.Name)
	case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished:
		return fmt.Sprintf("cannot delete package revision %q with lifecycle Published; propose its deletion (lifecycle %s) first",
			pr.Name, porchv1alpha1.PackageRevisionLifecycleDeletionProposed)
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
		return k.newList(items, strconv.FormatInt(s.rv, 10)), nil
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
		return nil, s.deletePackageRevisionLocked(ns, action.(clienttesting.DeleteAction).GetName(), deleteOptions(action))
	case "delete-collection":
		r := action.(clienttesting.DeleteCollectionAction).GetListRestrictions()
		items, err := s.listLocked(k, ns, r.Labels, r.Fields, packageRevisionFieldLabels)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, it := range items {
			pr := it.(*porchv1alpha1.PackageRevision)
			errs = append(errs, s.deletePackageRevisionLocked(pr.Namespace, pr.Name, metav1.DeleteOptions{}))
		}
		return nil, errors.Join(errs...)
	}
	return nil, notServed(action)
}

// createPackageRevisionLocked creates a Draft as Porch does: the name is
// derived from the spec and the one task decides the draft's files.
func (s *Sim) createPackageRevisionLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	spec := &in.Spec
	if spec.RepositoryName == "" {
		return nil, apierrors.NewBadRequest("spec.repository is required")
	}
	repoEntry, ok := s.objects[resRepositories][objectKey{ns, spec.RepositoryName}]
	if !ok {
		return nil, apierrors.NewNotFound(repositoryKind.gr, spec.RepositoryName)
	}
	repo := repoEntry.obj.(*configv1alpha1.Repository)
	workspace := string(spec.WorkspaceName)
	name := packageRevisionName(spec.RepositoryName, spec.PackageName, workspace)

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

	// The name is checked before anything else so that a retried create is
	// answered AlreadyExists, whatever its task.
	if e, ok := s.objects[resPackageRevisions][objectKey{ns, name}]; ok {
		existing := e.obj.(*porchv1alpha1.PackageRevision)
		if existing.Spec.RepositoryName == spec.RepositoryName && existing.Spec.PackageName == spec.PackageName {
			return nil, workspaceNotUnique(name, spec.PackageName, spec.RepositoryName, workspace)
		}
		return nil, apierrors.NewAlreadyExists(packageRevisionKind.gr, name)
	}
	revs := s.packageRevisionsLocked(ns, spec.RepositoryName, spec.PackageName)
	for _, r := range revs {
		if string(r.Spec.WorkspaceName) == workspace {
			return nil, workspaceNotUnique(name, spec.PackageName, spec.RepositoryName, workspace)
		}
	}

	files, lock, err := s.applyTaskLocked(ns, repo, spec, revs)
	if err != nil {
		return nil, err
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
			PackageName:     spec.PackageName,
			RepositoryName:  spec.RepositoryName,
			WorkspaceName:   spec.WorkspaceName,
			Lifecycle:       porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:           in.DeepCopy().Spec.Tasks,
			PackageMetadata: spec.PackageMetadata.DeepCopy(),
		},
		Status: porchv1alpha1.PackageRevisionStatus{
			UpstreamLock: lock,
			Deployment:   repo.Spec.Deployment,
		},
	}
	mirrorKptfile(pr, files)
	s.insertLocked(resPackageRevisions, pr, files)
	return pr.DeepCopy(), nil
}

// workspaceNotUnique is Porch's refusal of a second revision with the same
// workspace. Since the name is derived from the workspace it is also the
// answer to a retried create, so it is an AlreadyExists error (409) that
// carries Porch's message.
func workspaceNotUnique(name, pkg, repo, workspace string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusConflict,
		Reason: metav1.StatusReasonAlreadyExists,
		Details: &metav1.StatusDetails{
			Group: porchv1alpha1.GroupName,
			Kind:  resPackageRevisions,
			Name:  name,
		},
		Message: fmt.Sprintf("package revision workspaceNames must be unique; package revision with name %s in repo %s "+
			"with workspaceName %s already exists", pkg, repo, workspace),
	}}
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

// applyTaskLocked makes the files (and status.upstreamLock) of a new draft.
func (s *Sim) applyTaskLocked(ns string, repo *configv1alpha1.Repository, spec *porchv1alpha1.PackageRevisionSpec,
	revs []*porchv1alpha1.PackageRevision) (map[string]string, *porchv1alpha1.UpstreamLock, error) {
	task := spec.Tasks[0]
	taskPath := field.NewPath("spec", "tasks").Index(0)
	invalid := func(f, msg string) error {
		return apierrors.NewInvalid(packageRevisionKind.gk,
			packageRevisionName(spec.RepositoryName, spec.PackageName, string(spec.WorkspaceName)),
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
		return map[string]string{kptfileName: kf}, nil, nil

	case porchv1alpha1.TaskTypeClone:
		c := task.Clone
		if c == nil || c.Upstream.UpstreamRef == nil || c.Upstream.UpstreamRef.Name == "" {
			if c != nil && (c.Upstream.Git != nil || c.Upstream.Oci != nil) {
				return nil, nil, apierrors.NewBadRequest("porchsim clones only from PackageRevisions (clone.upstreamRef.upstreamRef)")
			}
			return nil, nil, invalid("clone", "clone.upstreamRef.upstreamRef.name is required")
		}
		return s.cloneLocked(ns, repo, spec, c.Upstream.UpstreamRef.Name, revs)

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
		return s.upgradeLocked(ns, spec, u)
	}
	return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("task type %q is not supported by porchsim (init, clone, edit and upgrade are)", task.Type))
}

func (s *Sim) cloneLocked(ns string, repo *configv1alpha1.Repository, spec *porchv1alpha1.PackageRevisionSpec, upstream string,
	revs []*porchv1alpha1.PackageRevision) (map[string]string, *porchv1alpha1.UpstreamLock, error) {
	if len(revs) > 0 {
		return nil, nil, refuse("`clone` cannot create a new revision for package %q that already exists in repo %q; "+
			"make subsequent revisions using `edit`", spec.PackageName, spec.RepositoryName)
	}
	src, files, ok := s.packageRevisionLocked(ns, upstream)
	if !ok {
		return nil, nil, refuse("upstream package revision %q of clone not found", upstream)
	}
	if isPlaceholder(src) {
		return nil, nil, refuse("cloning from the placeholder revision %q (revision -1, workspace %q, which tracks a branch) is refused; "+
			"clone a published revision", upstream, src.Spec.WorkspaceName)
	}
	if !isPublished(src.Spec.Lifecycle) {
		return nil, nil, refuse("upstream package revision %q is %s; only a published revision can be cloned", upstream, src.Spec.Lifecycle)
	}
	lock := s.lockLocked(src)
	out, err := withKptfile(files, spec.PackageName, func(n *yaml.RNode) error {
		if err := setName(n, lastSegment(spec.PackageName)); err != nil {
			return err
		}
		return setUpstream(n, lock)
	})
	if err != nil {
		return nil, nil, refuse("clone %q: %v", upstream, err)
	}
	if repo.Spec.Deployment {
		// Porch's package context generator writes the file afresh, as
		// kpt's builtin does: whatever the upstream held there is replaced.
		pc, err := packageContext(lastSegment(spec.PackageName))
		if err != nil {
			return nil, nil, apierrors.NewInternalError(err)
		}
		out[packageContextFile] = pc
	}
	return out, lock.upstreamLock(), nil
}

func (s *Sim) editLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, source string) (map[string]string, *porchv1alpha1.UpstreamLock, error) {
	src, files, ok := s.packageRevisionLocked(ns, source)
	switch {
	case !ok:
		return nil, nil, refuse("source package revision %q of edit not found", source)
	case src.Spec.RepositoryName != spec.RepositoryName || src.Spec.PackageName != spec.PackageName:
		return nil, nil, refuse("source %q of edit is a revision of package %q in repository %q, not of package %q in repository %q",
			source, src.Spec.PackageName, src.Spec.RepositoryName, spec.PackageName, spec.RepositoryName)
	case isPlaceholder(src):
		return nil, nil, refuse("editing from the placeholder revision %q (revision -1, which tracks a branch) is refused; "+
			"edit a published revision", source)
	case !isPublished(src.Spec.Lifecycle):
		return nil, nil, refuse("source %q of edit is %s; only a published revision can be edited", source, src.Spec.Lifecycle)
	}
	return copyFiles(files), src.Status.UpstreamLock.DeepCopy(), nil
}

func (s *Sim) upgradeLocked(ns string, spec *porchv1alpha1.PackageRevisionSpec, u *porchv1alpha1.PackageUpgradeTaskSpec) (map[string]string, *porchv1alpha1.UpstreamLock, error) {
	var prs [3]*porchv1alpha1.PackageRevision
	var files [3]map[string]string
	for i, name := range []string{u.OldUpstream.Name, u.NewUpstream.Name, u.LocalPackageRevisionRef.Name} {
		pr, f, ok := s.packageRevisionLocked(ns, name)
		if !ok {
			return nil, nil, refuse("source package revision %q of upgrade not found", name)
		}
		prs[i], files[i] = pr, f
	}
	for _, pr := range prs {
		if !isPublished(pr.Spec.Lifecycle) {
			return nil, nil, refuse("all source PackageRevisions of upgrade task must be published, %q is not", pr.Name)
		}
	}
	oldUp, newUp, local := prs[0], prs[1], prs[2]
	if local.Spec.RepositoryName != spec.RepositoryName || local.Spec.PackageName != spec.PackageName {
		return nil, nil, refuse("local revision %q of upgrade is a revision of package %q in repository %q, not of package %q in repository %q",
			local.Name, local.Spec.PackageName, local.Spec.RepositoryName, spec.PackageName, spec.RepositoryName)
	}
	if isPlaceholder(newUp) {
		return nil, nil, refuse("upgrading to the placeholder revision %q (revision -1, which tracks a branch) is refused; "+
			"upgrade to a published revision", newUp.Name)
	}
	merged, err := mergePackages(files[0], files[1], files[2])
	if err != nil {
		return nil, nil, refuse("upgrade from %q to %q: %v", oldUp.Name, newUp.Name, err)
	}
	lock := s.lockLocked(newUp)
	out, err := withKptfile(merged, spec.PackageName, func(n *yaml.RNode) error {
		if err := setName(n, lastSegment(spec.PackageName)); err != nil {
			return err
		}
		return setUpstream(n, lock)
	})
	if err != nil {
		return nil, nil, refuse("upgrade to %q: %v", newUp.Name, err)
	}
	return out, lock.upstreamLock(), nil
}

// lockLocked is where a published revision lives in git: its repository's
// URL, the package directory, the tag <package>/v<revision> and a made-up,
// deterministic commit.
func (s *Sim) lockLocked(src *porchv1alpha1.PackageRevision) gitLock {
	repo := src.Spec.RepositoryName
	if e, ok := s.objects[resRepositories][objectKey{src.Namespace, repo}]; ok {
		if g := e.obj.(*configv1alpha1.Repository).Spec.Git; g != nil && g.Repo != "" {
			repo = g.Repo
		}
	}
	ref := fmt.Sprintf("%s/v%d", src.Spec.PackageName, src.Spec.Revision)
	return gitLock{
		repo:      repo,
		directory: src.Spec.PackageName,
		ref:       ref,
		commit:    fakeCommit(src.Namespace, src.Spec.RepositoryName, ref),
	}
}

// mirrorKptfile copies what Porch mirrors from the Kptfile into the
// revision; an unparseable Kptfile leaves the mirrors as they were.
func mirrorKptfile(pr *porchv1alpha1.PackageRevision, files map[string]string) {
	gates, conds, err := kptfileMirror(files)
	if err != nil {
		return
	}
	pr.Spec.ReadinessGates = gates
	pr.Status.Conditions = conds
}

// updatePackageRevisionLocked applies Porch's update rules: a Draft or
// Proposed revision may change its metadata, lifecycle (Draft <-> Proposed),
// readinessGates and packageMetadata; a Published or DeletionProposed one
// only its metadata and its lifecycle (Published <-> DeletionProposed).
// Publishing is not an update: Porch does it through the approval
// subresource, which the Sim replaces with the Publish helper.
func (s *Sim) updatePackageRevisionLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	k := packageRevisionKind
	e, err := s.lookupLocked(k, ns, in.Name)
	if err != nil {
		return nil, err
	}
	cur := e.obj.(*porchv1alpha1.PackageRevision)
	switch in.ResourceVersion {
	case "":
		return nil, apierrors.NewBadRequest("resourceVersion must be specified for an update")
	case cur.ResourceVersion:
	default:
		return nil, apierrors.NewConflict(k.gr, cur.Name, errors.New(optimisticLockMsg))
	}

	obj := cur.DeepCopy()
	obj.Labels = maps.Clone(in.Labels)
	obj.Annotations = maps.Clone(in.Annotations)
	obj.Finalizers = slices.Clone(in.Finalizers)
	obj.OwnerReferences = slices.Clone(in.OwnerReferences)
	if cur.DeletionTimestamp != nil && len(in.Finalizers) == 0 {
		// Removing the last finalizer of a revision being deleted deletes it.
		return s.storeUpdateLocked(resPackageRevisions, e, obj), nil
	}

	var errs field.ErrorList
	if in.Labels[porchv1alpha1.LatestPackageRevisionLabel] != cur.Labels[porchv1alpha1.LatestPackageRevisionLabel] {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels", porchv1alpha1.LatestPackageRevisionLabel),
			"label is managed by porch and cannot be modified by users"))
	}
	if cur.DeletionTimestamp != nil {
		for _, f := range in.Finalizers {
			if !slices.Contains(cur.Finalizers, f) {
				errs = append(errs, field.Forbidden(field.NewPath("metadata", "finalizers"),
					"no new finalizers can be added if the object is being deleted"))
				break
			}
		}
	}
	lc := in.Spec.Lifecycle
	lcPath := field.NewPath("spec", "lifecycle")
	switch cur.Spec.Lifecycle {
	case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed:
		if lc == "" {
			lc = porchv1alpha1.PackageRevisionLifecycleDraft
		}
		if lc != porchv1alpha1.PackageRevisionLifecycleDraft && lc != porchv1alpha1.PackageRevisionLifecycleProposed {
			errs = append(errs, field.Invalid(lcPath, lc, "value can be only updated to Draft,Proposed "+
				"(a Proposed revision is published through the approval subresource)"))
		}
		specPath := field.NewPath("spec")
		for _, f := range []struct {
			name     string
			old, new any
		}{
			{"packageName", cur.Spec.PackageName, in.Spec.PackageName},
			{"repository", cur.Spec.RepositoryName, in.Spec.RepositoryName},
			{"workspaceName", cur.Spec.WorkspaceName, in.Spec.WorkspaceName},
			{"revision", cur.Spec.Revision, in.Spec.Revision},
			{"parent", cur.Spec.Parent, in.Spec.Parent},
			{"tasks", cur.Spec.Tasks, in.Spec.Tasks},
		} {
			if !equality.Semantic.DeepEqual(f.old, f.new) {
				errs = append(errs, field.Forbidden(specPath.Child(f.name), "field is immutable"))
			}
		}
	default: // Published, DeletionProposed
		if !isPublished(lc) {
			errs = append(errs, field.Invalid(lcPath, lc, "value can be only updated to Published,DeletionProposed"))
		} else if isPlaceholder(cur) && lc != cur.Spec.Lifecycle {
			errs = append(errs, field.Forbidden(lcPath, "the lifecycle of the placeholder revision cannot change"))
		}
		inSpec := in.Spec.DeepCopy()
		inSpec.Lifecycle = cur.Spec.Lifecycle
		if !equality.Semantic.DeepEqual(*inSpec, cur.Spec) {
			errs = append(errs, field.Invalid(field.NewPath("spec"), "...",
				"spec can only update package with lifecycle value one of Draft,Proposed"))
		}
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(k.gk, cur.Name, errs)
	}

	obj.Spec.Lifecycle = lc
	if !isPublished(cur.Spec.Lifecycle) {
		obj.Spec.PackageMetadata = in.Spec.PackageMetadata.DeepCopy()
		if !equality.Semantic.DeepEqual(in.Spec.ReadinessGates, cur.Spec.ReadinessGates) {
			obj.Spec.ReadinessGates = slices.Clone(in.Spec.ReadinessGates)
			// Porch keeps the gates in the Kptfile; write them there so
			// that the next mirror does not undo the change.
			if _, ok := e.files[kptfileName]; ok {
				files, err := withKptfile(e.files, cur.Spec.PackageName, func(n *yaml.RNode) error {
					return setReadinessGates(n, in.Spec.ReadinessGates)
				})
				if err == nil {
					e.files = files
				}
			}
		}
	}
	if !equality.Semantic.DeepEqual(obj.Spec, cur.Spec) {
		obj.Generation++
	}
	return s.storeUpdateLocked(resPackageRevisions, e, obj), nil
}

func (s *Sim) deletePackageRevisionLocked(ns, name string, opts metav1.DeleteOptions) error {
	e, err := s.lookupLocked(packageRevisionKind, ns, name)
	if err != nil {
		return err
	}
	if reason := deleteRefusal(e.obj.(*porchv1alpha1.PackageRevision)); reason != "" {
		return refuse("%s", reason)
	}
	if err := checkPreconditions(packageRevisionKind, e.obj, opts.Preconditions); err != nil {
		return err
	}
	s.deleteEntryLocked(resPackageRevisions, e, orphans(opts))
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
		return resourcesOf(e, nil), nil
	case "list":
		r := action.(clienttesting.ListAction).GetListRestrictions()
		if err := checkFieldSelector(r.Fields, packageRevisionFieldLabels); err != nil {
			return nil, err
		}
		l := &porchv1alpha1.PackageRevisionResourcesList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(s.rv, 10)}}
		for _, key := range s.sortedKeysLocked(resPackageRevisions, ns) {
			e := s.objects[resPackageRevisions][key]
			if selects(r.Labels, r.Fields, mustAccessor(e.obj).GetLabels(), packageRevisionKind.fields(e.obj)) {
				l.Items = append(l.Items, *resourcesOf(e, nil))
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

// resourcesOf is the PackageRevisionResources of a stored revision. Only an
// update's response carries a render status.
func resourcesOf(e *entry, rs *porchv1alpha1.RenderStatus) *porchv1alpha1.PackageRevisionResources {
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
			Resources:      copyFiles(e.files),
		},
	}
	if rs != nil {
		prr.Status.RenderStatus = *rs.DeepCopy()
	}
	return prr
}

// updateResourcesLocked stores the files of a Draft and "renders" them.
func (s *Sim) updateResourcesLocked(ns string, in *porchv1alpha1.PackageRevisionResources) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	e, ok := s.objects[resPackageRevisions][objectKey{ns, in.Name}]
	if !ok {
		return nil, apierrors.NewNotFound(packageRevisionResourcesGR, in.Name)
	}
	pr := e.obj.(*porchv1alpha1.PackageRevision)
	if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
		return nil, refuse("cannot update a package revision with lifecycle value %q; package must be Draft", pr.Spec.Lifecycle)
	}
	switch in.ResourceVersion {
	case "":
		return nil, apierrors.NewBadRequest("resourceVersion must be specified for an update")
	case pr.ResourceVersion:
	default:
		return nil, apierrors.NewConflict(packageRevisionResourcesGR, in.Name, errors.New(optimisticLockMsg))
	}
	files := copyFiles(in.Spec.Resources)
	rs := render(files)
	s.setFilesLocked(e, files)
	return resourcesOf(e, &rs), nil
}

// setFilesLocked stores new files for a revision. The files and the
// PackageRevision are one object in Porch: the revision gets a new
// resourceVersion and a MODIFIED event, and its Kptfile mirrors are
// refreshed. Identical files change nothing.
func (s *Sim) setFilesLocked(e *entry, files map[string]string) {
	if maps.Equal(files, e.files) {
		return
	}
	cur := e.obj.(*porchv1alpha1.PackageRevision)
	obj := cur.DeepCopy()
	mirrorKptfile(obj, files)
	if !equality.Semantic.DeepEqual(obj.Spec, cur.Spec) {
		obj.Generation++
	}
	e.files = files
	s.replaceLocked(resPackageRevisions, e, obj)
}

// packageRevisionLocked returns a stored revision and its files (shared:
// do not modify).
func (s *Sim) packageRevisionLocked(ns, name string) (*porchv1alpha1.PackageRevision, map[string]string, bool) {
	e, ok := s.objects[resPackageRevisions][objectKey{ns, name}]
	if !ok {
		return nil, nil, false
	}
	return e.obj.(*porchv1alpha1.PackageRevision), e.files, true
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

// nextRevisionLocked is the revision number the next publish of a package
// gets: one more than the highest, the placeholder's -1 aside.
func (s *Sim) nextRevisionLocked(ns, repo, pkg string) int {
	next := 1
	for _, pr := range s.packageRevisionsLocked(ns, repo, pkg) {
		if pr.Spec.Revision >= next {
			next = pr.Spec.Revision + 1
		}
	}
	return next
}

// dropLatestLabelLocked removes kpt.dev/latest-revision from the package's
// revisions; it is about to move to a newly published one.
func (s *Sim) dropLatestLabelLocked(ns, repo, pkg string) {
	for _, e := range s.packageEntriesLocked(ns, repo, pkg) {
		pr := e.obj.(*porchv1alpha1.PackageRevision)
		if _, ok := pr.Labels[porchv1alpha1.LatestPackageRevisionLabel]; !ok {
			continue
		}
		obj := pr.DeepCopy()
		delete(obj.Labels, porchv1alpha1.LatestPackageRevisionLabel)
		if len(obj.Labels) == 0 {
			obj.Labels = nil
		}
		s.replaceLocked(resPackageRevisions, e, obj)
	}
}

// syncPlaceholderLocked gives the package's placeholder revision, if it has
// one, the files of the newly published revision: the branch it tracks now
// holds them.
func (s *Sim) syncPlaceholderLocked(ns, repo, pkg string, files map[string]string) {
	for _, e := range s.packageEntriesLocked(ns, repo, pkg) {
		if isPlaceholder(e.obj.(*porchv1alpha1.PackageRevision)) {
			s.setFilesLocked(e, copyFiles(files))
		}
	}
}
