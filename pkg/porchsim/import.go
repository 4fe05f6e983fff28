package porchsim

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// Import stores a PackageRevision with its files as a real Porch reported
// them (for example `kubectl get packagerevisions -o yaml` and the
// matching PackageRevisionResources), so a snapshot of a cluster can be
// replayed. Spec, status, labels, annotations, finalizers and owner
// references are kept as given, and so is the uid: objects of the snapshot
// that name the revision by uid (owner references, preconditions) still
// find it. Without a uid, the revision gets the one Porch derives from its
// namespace and name (helper.PackageRevisionUID). The Sim assigns
// resourceVersion and creationTimestamp as it does for any object it
// stores, and drops a deletionTimestamp. The name is derived
// (<repository>.<package>.<workspace>) when empty.
//
// files nil, with a file source set (SetFileSource), imports the revision
// without its files: they are fetched on first need. Otherwise the files
// are stored as given.
//
// Import checks what Porch itself guarantees of stored revisions: the
// repository exists, the package name and lifecycle are valid, a Published
// revision has a revision number (the placeholder has -1 and workspace
// "main"), an unpublished one has none, neither the name nor the
// package's workspace is taken, and the uid is no other object's. It is a
// helper: not counted as a request, never faulted, and, like Restore, it
// never garbage-collects: owners may be restored after their dependents.
// Returns the stored PackageRevision.
func (s *Sim) Import(in *porchv1alpha1.PackageRevision, files map[string]string) (*porchv1alpha1.PackageRevision, error) {
	p := s.porch
	if in == nil {
		return nil, fmt.Errorf("import: no PackageRevision given")
	}
	p.Lock()
	defer p.Unlock()
	pr := in.DeepCopy()
	pr.TypeMeta = metav1.TypeMeta{}
	spec := &pr.Spec
	ref := pr.Name
	if ref == "" {
		ref = fmt.Sprintf("%s/%s workspace %q", spec.RepositoryName, spec.PackageName, spec.WorkspaceName)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("PackageRevision %s: %s", ref, fmt.Sprintf(format, args...))
	}
	if err := p.checkImportedIdentityLocked(pr, fail); err != nil {
		return nil, err
	}
	if err := checkImportedLifecycle(spec, fail); err != nil {
		return nil, err
	}
	if err := p.checkImportedUniqueLocked(pr, fail); err != nil {
		return nil, err
	}
	lazy := files == nil && p.fileSource != nil
	if !lazy {
		if err := checkFiles(files); err != nil {
			if files == nil {
				return nil, fail("%v (or set a file source, SetFileSource, to fetch them on first need)", err)
			}
			return nil, fail("%v", err)
		}
	}
	if pr.UID == "" {
		pr.UID = helper.PackageRevisionUID(pr.Namespace, pr.Name)
	}
	if held, ok := p.HolderLocked(pr.UID); ok {
		return nil, fail("metadata.uid %q is already the uid of %s %s/%s", pr.UID, held.Resource, held.Namespace, held.Name)
	}

	pr.ResourceVersion = ""
	pr.ManagedFields = nil
	pr.DeletionTimestamp = nil
	pr.DeletionGracePeriodSeconds = nil
	pr.CreationTimestamp = store.Now()
	var stored map[string]string
	if !lazy {
		stored = copyFiles(files)
	}
	e := p.StoreNewLocked(resPackageRevisions, pr, &revisionFiles{files: stored, lazy: lazy})
	return e.Object().(*porchv1alpha1.PackageRevision).DeepCopy(), nil
}

// failf makes an Import error about the revision being imported.
type failf func(format string, args ...any) error

// checkImportedIdentityLocked checks the fields that name an imported
// revision (namespace, repository, package, workspace) and derives its
// name from them when it has none.
func (p *porch) checkImportedIdentityLocked(pr *porchv1alpha1.PackageRevision, fail failf) error {
	spec := &pr.Spec
	if pr.Namespace == "" {
		return fail("metadata.namespace is required")
	}
	if spec.RepositoryName == "" {
		return fail("spec.repository is required")
	}
	if _, err := p.repositoryLocked(pr.Namespace, spec.RepositoryName); err != nil {
		return fail("spec.repository: %v", err)
	}
	if spec.PackageName == "" {
		return fail("spec.packageName is required")
	}
	if errs := validatePackageName(spec.PackageName); len(errs) > 0 {
		return fail("spec.packageName: %v", errs.ToAggregate())
	}
	if spec.WorkspaceName == "" {
		return fail("spec.workspaceName is required")
	}
	if pr.Name == "" {
		pr.Name = helper.PackageRevisionName(spec.RepositoryName, spec.PackageName, string(spec.WorkspaceName))
	}
	for _, msg := range validation.IsDNS1123Subdomain(pr.Name) {
		return fail("metadata.name: %s", msg)
	}
	return nil
}

// checkImportedLifecycle checks that the lifecycle is one Porch knows and
// that the revision number fits it: a Published revision has one (the
// placeholder -1), an unpublished one has none.
func checkImportedLifecycle(spec *porchv1alpha1.PackageRevisionSpec, fail failf) error {
	switch lc := spec.Lifecycle; lc {
	case porchv1alpha1.PackageRevisionLifecyclePublished, porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
		placeholder := spec.WorkspaceName == helper.PlaceholderWorkspace
		switch {
		case placeholder && spec.Revision != porchv1alpha1.PlaceholderRevision:
			return fail("spec.revision is %d; the placeholder revision (workspace %q) has revision %d", spec.Revision, helper.PlaceholderWorkspace, porchv1alpha1.PlaceholderRevision)
		case !placeholder && spec.Revision < 1:
			return fail("spec.revision is %d; a %s revision has a revision number of 1 or more", spec.Revision, lc)
		}
	case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed:
		if spec.Revision != 0 {
			return fail("spec.revision is %d; a %s revision has no revision number (0)", spec.Revision, lc)
		}
	case "":
		return fail("spec.lifecycle is required (Draft, Proposed, Published or DeletionProposed)")
	default:
		return fail("spec.lifecycle %q is not one of Draft, Proposed, Published, DeletionProposed", lc)
	}
	return nil
}

// checkImportedUniqueLocked checks that neither the revision's name nor
// its package's workspace or revision number is taken.
func (p *porch) checkImportedUniqueLocked(pr *porchv1alpha1.PackageRevision, fail failf) error {
	spec := &pr.Spec
	if _, _, ok := p.packageRevisionLocked(pr.Namespace, pr.Name); ok {
		return fail("a package revision named %q already exists in namespace %q", pr.Name, pr.Namespace)
	}
	for _, e := range p.packageEntriesLocked(pr.Namespace, spec.RepositoryName, spec.PackageName) {
		other := e.Object().(*porchv1alpha1.PackageRevision)
		if other.Spec.WorkspaceName == spec.WorkspaceName {
			return fail("workspace %q of package %q in repository %q is already used by %s", spec.WorkspaceName, spec.PackageName, spec.RepositoryName, other.Name)
		}
		if spec.Revision > 0 && other.Spec.Revision == spec.Revision {
			return fail("revision %d of package %q in repository %q already exists (%s)", spec.Revision, spec.PackageName, spec.RepositoryName, other.Name)
		}
	}
	return nil
}
