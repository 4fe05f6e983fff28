package porchsim

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// publishedBy is recorded in status.publishedBy of revisions the Sim publishes.
const publishedBy = "porchsim"

// updatePackageRevisionLocked applies Porch's update rules: a Draft or
// Proposed revision may change its metadata, lifecycle (Draft <-> Proposed),
// readinessGates and packageMetadata; a Published or DeletionProposed one
// only its metadata and its lifecycle (Published <-> DeletionProposed).
// Every update of a Draft renders the package again (Porch commits the
// draft anew); if the pipeline fails, the update is refused and nothing
// changes. Publishing is not an update: Porch does it through the approval
// subresource.
func (p *porch) updatePackageRevisionLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	ns, e, cur, err := p.currentLocked(ns, in)
	if err != nil {
		return nil, err
	}

	obj := cur.DeepCopy()
	obj.Labels = maps.Clone(in.Labels)
	obj.Annotations = maps.Clone(in.Annotations)
	obj.Finalizers = slices.Clone(in.Finalizers)
	obj.OwnerReferences = slices.Clone(in.OwnerReferences)
	if cur.DeletionTimestamp != nil && len(in.Finalizers) == 0 {
		// Removing the last finalizer of a revision being deleted deletes it.
		return p.StoreUpdateLocked(resPackageRevisions, e, obj), nil
	}
	lc, errs := updateErrors(cur, in)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(packageRevisionKind.GK, cur.Name, errs)
	}
	obj.Spec.Lifecycle = lc
	if err := p.updateContentLocked(e, in, obj); err != nil {
		return nil, err
	}
	var out runtime.Object
	if cur.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
		// Porch commits a draft on every update, changed or not.
		p.ReplaceLocked(resPackageRevisions, e, obj)
		out = e.Object().DeepCopyObject()
	} else {
		out = p.StoreUpdateLocked(resPackageRevisions, e, obj)
	}
	if cur.Spec.Lifecycle != lc {
		p.recomputeLatestLocked(ns, cur.Spec.RepositoryName, cur.Spec.PackageName)
		if e, ok := p.EntryLocked(resPackageRevisions, ns, cur.Name); ok {
			out = e.Object().DeepCopyObject()
		}
	}
	return out, nil
}

// currentLocked is the stored revision an update of in (to namespace ns,
// in's own when "") applies to, once Porch's optimistic concurrency lets
// it through; and the namespace.
func (p *porch) currentLocked(ns string, in *porchv1alpha1.PackageRevision) (string, *store.Entry, *porchv1alpha1.PackageRevision, error) {
	if ns == "" {
		ns = in.Namespace
	}
	e, err := p.LookupLocked(packageRevisionKind, ns, in.Name)
	if err != nil {
		return "", nil, nil, err
	}
	cur := e.Object().(*porchv1alpha1.PackageRevision)
	if err := checkUpdateVersion(resPackageRevisions, cur.Name, in.ResourceVersion, cur.ResourceVersion); err != nil {
		return "", nil, nil, err
	}
	return ns, e, cur, nil
}

// updateErrors is what Porch refuses in an update of cur to in, and the
// lifecycle the update asks for (Draft when an unpublished revision's
// update names none).
func updateErrors(cur, in *porchv1alpha1.PackageRevision) (porchv1alpha1.PackageRevisionLifecycle, field.ErrorList) {
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
		if !helper.LifecycleIsPublished(lc) {
			errs = append(errs, field.Invalid(lcPath, lc, "value can be only updated to Published,DeletionProposed"))
		} else if helper.IsPlaceholder(cur) && lc != cur.Spec.Lifecycle {
			errs = append(errs, field.Forbidden(lcPath, "the lifecycle of the placeholder revision cannot change"))
		}
		inSpec := in.Spec.DeepCopy()
		inSpec.Lifecycle = cur.Spec.Lifecycle
		if !equality.Semantic.DeepEqual(*inSpec, cur.Spec) {
			errs = append(errs, field.Invalid(field.NewPath("spec"), "...",
				"spec can only update package with lifecycle value one of Draft,Proposed"))
		}
	}
	return lc, errs
}

// updateContentLocked applies what an update of an unpublished revision
// may change besides metadata and lifecycle (packageMetadata and
// readinessGates, the latter written into the Kptfile too) to obj, and
// renders a Draft again; a failed render refuses the update. The entry
// gets the files it then holds.
func (p *porch) updateContentLocked(e *store.Entry, in, obj *porchv1alpha1.PackageRevision) error {
	cur := e.Object().(*porchv1alpha1.PackageRevision)
	// The files are read only where needed (a lazy revision's are
	// fetched then, see SetFileSource): a metadata update of a published
	// revision, say a controller adopting it, leaves them alone.
	unpublished := !helper.LifecycleIsPublished(cur.Spec.Lifecycle)
	gatesChanged := unpublished && !equality.Semantic.DeepEqual(in.Spec.ReadinessGates, cur.Spec.ReadinessGates)
	draft := cur.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft
	f := filesOf(e)
	files, skipped := f.files, f.skipped
	if gatesChanged || draft {
		var err error
		if files, err = p.filesLocked(e); err != nil {
			return err
		}
	}
	if unpublished {
		obj.Spec.PackageMetadata = in.Spec.PackageMetadata.DeepCopy()
	}
	if gatesChanged {
		obj.Spec.ReadinessGates = slices.Clone(in.Spec.ReadinessGates)
		// Porch keeps the gates in the Kptfile; write them there so
		// that the next mirror does not undo the change.
		if _, ok := files[kptfileName]; ok {
			if edited, err := withKptfile(files, cur.Spec.PackageName, func(n *yaml.RNode) error {
				return setReadinessGates(n, in.Spec.ReadinessGates)
			}); err == nil {
				files = edited
			}
		}
	}
	if draft {
		rendered := p.render(copyFiles(files))
		if rendered.failed {
			return refuse("E%s%sDetails: %s", helper.RenderFailedMessage[1:], helper.RenderFailedNotStored, rendered.message)
		}
		files, skipped = rendered.files, rendered.skipped
		mirrorKptfile(obj, files)
	}
	// Unless they were read above, these are the entry's own (nil for a
	// lazy revision, which stays lazy).
	f.files, f.skipped = files, skipped
	return nil
}

// approveLocked serves an update of the approval subresource: Proposed ->
// Published (the next revision number, the latest-revision label, the
// placeholder), Proposed -> Draft (a rejection), Published ->
// DeletionProposed and back. Only spec.lifecycle of the request is used;
// its resourceVersion must be current. Anything else is refused with
// Porch's messages (422).
func (p *porch) approveLocked(ns string, in *porchv1alpha1.PackageRevision) (runtime.Object, error) {
	ns, e, cur, err := p.currentLocked(ns, in)
	if err != nil {
		return nil, err
	}
	from, to := cur.Spec.Lifecycle, in.Spec.Lifecycle
	lcPath := field.NewPath("spec", "lifecycle")
	var errs field.ErrorList
	switch from {
	case porchv1alpha1.PackageRevisionLifecyclePublished:
		if to != porchv1alpha1.PackageRevisionLifecycleDeletionProposed {
			errs = append(errs, field.Invalid(lcPath, from, "package with Published lifecycle value can only be updated to 'ProposeDeletion'"))
		}
	case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
		if to != porchv1alpha1.PackageRevisionLifecyclePublished {
			errs = append(errs, field.Invalid(lcPath, from, "package with DeletionProposed lifecycle value can only be updated to 'Published'"))
		}
	case porchv1alpha1.PackageRevisionLifecycleProposed:
	default:
		errs = append(errs, field.Invalid(lcPath, from, "cannot approve package with "+string(from)+" lifecycle value; only Proposed packages can be approved"))
	}
	switch to {
	case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecyclePublished:
	case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
		if from != porchv1alpha1.PackageRevisionLifecyclePublished {
			errs = append(errs, field.Invalid(lcPath, to, "cannot update lifecycle DeletionProposed; only Published packages require approval for deletion"))
		}
	default:
		errs = append(errs, field.Invalid(lcPath, to, "value for approval can be only one of Draft,Published"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(packageRevisionKind.GK, cur.Name, errs)
	}
	if from == porchv1alpha1.PackageRevisionLifecycleProposed && to == porchv1alpha1.PackageRevisionLifecyclePublished {
		// Porch records the authenticated user; porchsim's API server
		// passes it in status.publishedBy of the request.
		by := in.Status.PublishedBy
		if by == "" {
			by = publishedBy
		}
		if err := p.publishLocked(e, by); err != nil {
			return nil, err
		}
		return e.Object().DeepCopyObject(), nil
	}
	obj := cur.DeepCopy()
	obj.Spec.Lifecycle = to
	p.ReplaceLocked(resPackageRevisions, e, obj)
	p.recomputeLatestLocked(ns, cur.Spec.RepositoryName, cur.Spec.PackageName)
	return e.Object().DeepCopyObject(), nil
}

// publishLocked publishes a Draft or Proposed revision: the next revision
// number of its package, publishedBy and the publish time, the
// latest-revision label, and the package's placeholder (made at the first
// publish) now holding its files. The files are read first (a lazy
// revision's are fetched): if that fails, nothing changes.
func (p *porch) publishLocked(e *store.Entry, by string) error {
	files, err := p.filesLocked(e)
	if err != nil {
		return err
	}
	pr := e.Object().(*porchv1alpha1.PackageRevision)
	ns, repo, pkg := pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName
	obj := pr.DeepCopy()
	obj.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	obj.Spec.Revision = p.nextRevisionLocked(ns, repo, pkg)
	published := store.Now()
	obj.Status.PublishedBy = by
	obj.Status.PublishedAt = &published
	p.ReplaceLocked(resPackageRevisions, e, obj)
	p.recomputeLatestLocked(ns, repo, pkg)
	p.syncPlaceholderLocked(e, files)
	return nil
}

// nextRevisionLocked is the revision number the next publish of a package
// gets (helper.NextRevision).
func (p *porch) nextRevisionLocked(ns, repo, pkg string) int {
	return helper.NextRevision(p.packageRevisionsLocked(ns, repo, pkg))
}

// recomputeLatestLocked gives kpt.dev/latest-revision to the package's
// published (or deletion-proposed) revision with the highest number and
// takes it from every other revision. Porch computes the label: when the
// latest revision is deleted, it moves back to the previous one; the
// placeholder never has it.
func (p *porch) recomputeLatestLocked(ns, repo, pkg string) {
	entries := p.packageEntriesLocked(ns, repo, pkg)
	prs := make([]*porchv1alpha1.PackageRevision, len(entries))
	for i, e := range entries {
		prs[i] = e.Object().(*porchv1alpha1.PackageRevision)
	}
	var latest *store.Entry
	if pr := helper.Latest(prs); pr != nil {
		latest = entries[slices.Index(prs, pr)]
	}
	// Drop the label first, then set it, so that no reader ever sees two
	// latest revisions.
	for _, e := range entries {
		pr := e.Object().(*porchv1alpha1.PackageRevision)
		if _, ok := pr.Labels[porchv1alpha1.LatestPackageRevisionLabel]; !ok || e == latest {
			continue
		}
		obj := pr.DeepCopy()
		delete(obj.Labels, porchv1alpha1.LatestPackageRevisionLabel)
		if len(obj.Labels) == 0 {
			obj.Labels = nil
		}
		p.ReplaceLocked(resPackageRevisions, e, obj)
	}
	if latest == nil {
		return
	}
	pr := latest.Object().(*porchv1alpha1.PackageRevision)
	if pr.Labels[porchv1alpha1.LatestPackageRevisionLabel] == "true" {
		return
	}
	obj := pr.DeepCopy()
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels[porchv1alpha1.LatestPackageRevisionLabel] = "true"
	p.ReplaceLocked(resPackageRevisions, latest, obj)
}

// syncPlaceholderLocked makes the package's branch hold the revision just
// published: Porch shows the branch as the placeholder revision
// <repo>.<package>.main (revision -1, Published, no labels), made at the
// package's first publish, with the files, tasks and upstream lock of the
// latest revision published, files (the caller read them: publishing must
// not fail halfway).
func (p *porch) syncPlaceholderLocked(published *store.Entry, files map[string]string) {
	pub := published.Object().(*porchv1alpha1.PackageRevision)
	ns, repo, pkg := pub.Namespace, pub.Spec.RepositoryName, pub.Spec.PackageName
	mirror := func(ph *porchv1alpha1.PackageRevision) {
		ph.Spec.Tasks = pub.DeepCopy().Spec.Tasks
		ph.Status.UpstreamLock = pub.Status.UpstreamLock.DeepCopy()
		ph.Status.PublishedBy = pub.Status.PublishedBy
		ph.Status.PublishedAt = pub.Status.PublishedAt.DeepCopy()
		mirrorKptfile(ph, files)
	}
	for _, e := range p.packageEntriesLocked(ns, repo, pkg) {
		pr := e.Object().(*porchv1alpha1.PackageRevision)
		if !helper.IsPlaceholder(pr) {
			continue
		}
		obj := pr.DeepCopy()
		mirror(obj)
		// The branch now holds these files, whatever it held before: a
		// lazy placeholder's are not fetched.
		f := filesOf(e)
		f.files, f.lazy = copyFiles(files), false
		p.ReplaceLocked(resPackageRevisions, e, obj)
		return
	}
	ph := newPlaceholder(ns, repo, pkg, pub.Status.Deployment)
	mirror(ph)
	p.insertRevisionLocked(ph, copyFiles(files))
}

// newPlaceholder is the placeholder revision of a package: Porch shows the
// package's branch as <repo>.<package>.main, revision -1, Published, no
// labels.
func newPlaceholder(ns, repo, pkg string, deployment bool) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: helper.PackageRevisionName(repo, pkg, helper.PlaceholderWorkspace), Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    pkg,
			RepositoryName: repo,
			WorkspaceName:  helper.PlaceholderWorkspace,
			Revision:       porchv1alpha1.PlaceholderRevision,
			Lifecycle:      porchv1alpha1.PackageRevisionLifecyclePublished,
		},
		Status: porchv1alpha1.PackageRevisionStatus{Deployment: deployment},
	}
}
