package porchsim

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// The helpers below act as people and other automation would, directly on
// the Sim: they are not counted as requests and no fault applies to them.

// AddPublished stores a Published revision of a package with the given files
// (it writes or overwrites the Kptfile's metadata.name if a Kptfile exists;
// if no Kptfile is given it creates a minimal one). revision must be the
// next revision of that package (error otherwise). The workspace is
// "v<revision>"; the kpt.dev/latest-revision label moves to the new revision
// and the package's placeholder (made at the first publish, as Porch does)
// gets its files. Returns the stored PackageRevision.
func (s *Sim) AddPublished(namespace, repo, pkg string, revision int, files map[string]string) (*porchv1alpha1.PackageRevision, error) {
	p := s.porch
	p.Lock()
	defer p.Unlock()
	workspace := "v" + strconv.Itoa(revision)
	r, name, err := p.checkNewRevisionLocked(namespace, repo, pkg, workspace, revision)
	if err != nil {
		return nil, err
	}
	files, err = withKptfile(files, pkg, func(n *yaml.RNode) error { return setName(n, lastSegment(pkg)) })
	if err != nil {
		return nil, err
	}
	published := store.Now()
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    pkg,
			RepositoryName: repo,
			WorkspaceName:  porchv1alpha1.WorkspaceName(workspace),
			Revision:       revision,
			Lifecycle:      porchv1alpha1.PackageRevisionLifecyclePublished,
			Tasks:          []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{}}},
		},
		Status: porchv1alpha1.PackageRevisionStatus{
			UpstreamLock: &porchv1alpha1.UpstreamLock{},
			Deployment:   r.Spec.Deployment,
			PublishedBy:  publishedBy,
			PublishedAt:  &published,
		},
	}
	mirrorKptfile(pr, files)
	e := p.insertRevisionLocked(pr, files)
	p.recomputeLatestLocked(namespace, repo, pkg)
	p.syncPlaceholderLocked(e, files)
	return e.Object().(*porchv1alpha1.PackageRevision).DeepCopy(), nil
}

// AddPlaceholder stores the "main" placeholder revision (revision -1,
// workspace main, Published) of a package that has none: what Porch shows
// for a package whose branch holds it although no revision was published
// through Porch. It holds the files of the package's latest revision, or a
// minimal Kptfile. (Publishing makes the placeholder by itself.)
func (s *Sim) AddPlaceholder(namespace, repo, pkg string) (*porchv1alpha1.PackageRevision, error) {
	p := s.porch
	p.Lock()
	defer p.Unlock()
	r, _, err := p.checkNewRevisionLocked(namespace, repo, pkg, helper.PlaceholderWorkspace, porchv1alpha1.PlaceholderRevision)
	if err != nil {
		return nil, err
	}
	var files map[string]string
	for _, e := range p.packageEntriesLocked(namespace, repo, pkg) {
		if _, ok := e.Object().(*porchv1alpha1.PackageRevision).Labels[porchv1alpha1.LatestPackageRevisionLabel]; ok {
			latest, err := p.filesLocked(e)
			if err != nil {
				return nil, err
			}
			files = copyFiles(latest)
		}
	}
	if files == nil {
		if files, err = withKptfile(nil, pkg, func(*yaml.RNode) error { return nil }); err != nil {
			return nil, err
		}
	}
	pr := newPlaceholder(namespace, repo, pkg, r.Spec.Deployment)
	pr.Status.UpstreamLock = &porchv1alpha1.UpstreamLock{}
	mirrorKptfile(pr, files)
	e := p.insertRevisionLocked(pr, files)
	return e.Object().(*porchv1alpha1.PackageRevision).DeepCopy(), nil
}

// onRevision runs f, with the Sim's lock held, on the stored revision
// namespace/name (NotFound when there is none), as the helpers below act
// on one revision.
func onRevision[T any](s *Sim, namespace, name string, f func(p *porch, e *store.Entry, pr *porchv1alpha1.PackageRevision) (T, error)) (T, error) {
	p := s.porch
	p.Lock()
	defer p.Unlock()
	e, err := p.LookupLocked(packageRevisionKind, namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(p, e, e.Object().(*porchv1alpha1.PackageRevision))
}

// Propose moves a Draft to Proposed, as a person would. As through the
// API, the package is rendered first; a failing pipeline refuses it.
func (s *Sim) Propose(namespace, name string) error {
	_, err := onRevision(s, namespace, name, func(p *porch, _ *store.Entry, pr *porchv1alpha1.PackageRevision) (struct{}, error) {
		if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
			return struct{}{}, fmt.Errorf("propose %s/%s: lifecycle is %s, not Draft", namespace, name, pr.Spec.Lifecycle)
		}
		in := pr.DeepCopy()
		in.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
		if _, err := p.updatePackageRevisionLocked(namespace, in); err != nil {
			return struct{}{}, fmt.Errorf("propose %s/%s: %w", namespace, name, err)
		}
		return struct{}{}, nil
	})
	return err
}

// Publish moves a Draft or Proposed revision to Published, as an approver
// would: it gets the next revision number of its package and the
// kpt.dev/latest-revision label, and the package's placeholder (made at the
// first publish) gets its files.
func (s *Sim) Publish(namespace, name string) error {
	_, err := onRevision(s, namespace, name, func(p *porch, e *store.Entry, pr *porchv1alpha1.PackageRevision) (struct{}, error) {
		switch pr.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed:
		default:
			return struct{}{}, fmt.Errorf("publish %s/%s: lifecycle is %s, not Draft or Proposed", namespace, name, pr.Spec.Lifecycle)
		}
		if err := p.publishLocked(e, publishedBy); err != nil {
			return struct{}{}, fmt.Errorf("publish %s/%s: %w", namespace, name, err)
		}
		return struct{}{}, nil
	})
	return err
}

// SetResources writes the files of a Draft as a person would: it counts as
// an edit (the revision gets a new resourceVersion and a MODIFIED event).
func (s *Sim) SetResources(namespace, name string, files map[string]string) error {
	_, err := onRevision(s, namespace, name, func(p *porch, e *store.Entry, pr *porchv1alpha1.PackageRevision) (struct{}, error) {
		if lc := pr.Spec.Lifecycle; lc != porchv1alpha1.PackageRevisionLifecycleDraft {
			return struct{}{}, fmt.Errorf("set resources of %s/%s: lifecycle is %s, not Draft", namespace, name, lc)
		}
		p.setFilesLocked(e, copyFiles(files), nil)
		return struct{}{}, nil
	})
	return err
}

// Resources returns a copy of a revision's files. Those of a lazy revision
// (see SetFileSource) are fetched if they were not yet; a failed fetch is
// the error.
func (s *Sim) Resources(namespace, name string) (map[string]string, error) {
	return onRevision(s, namespace, name, func(p *porch, e *store.Entry, _ *porchv1alpha1.PackageRevision) (map[string]string, error) {
		files, err := p.filesLocked(e)
		if err != nil {
			return nil, err
		}
		return copyFiles(files), nil
	})
}

// PackageRevision returns a copy of a stored revision.
func (s *Sim) PackageRevision(namespace, name string) (*porchv1alpha1.PackageRevision, error) {
	return onRevision(s, namespace, name, func(_ *porch, _ *store.Entry, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
		return pr.DeepCopy(), nil
	})
}

// PackageRevisions returns copies of the stored revisions of a namespace
// ("" for all namespaces), ordered by namespace and name.
func (s *Sim) PackageRevisions(namespace string) []porchv1alpha1.PackageRevision {
	return store.StoredCopies[porchv1alpha1.PackageRevision](s.store, resPackageRevisions, namespace)
}

func (p *porch) repositoryLocked(namespace, name string) (*configv1alpha1.Repository, error) {
	e, err := p.LookupLocked(repositoryKind, namespace, name)
	if err != nil {
		return nil, err
	}
	return e.Object().(*configv1alpha1.Repository), nil
}

// checkNewRevisionLocked checks what a helper storing a new revision of
// a package needs: its repository exists, its package name is valid, a
// published revision is the package's next one, and no revision has its
// name yet. It returns the repository and the name.
func (p *porch) checkNewRevisionLocked(namespace, repo, pkg, workspace string, revision int) (*configv1alpha1.Repository, string, error) {
	r, err := p.repositoryLocked(namespace, repo)
	if err != nil {
		return nil, "", err
	}
	if errs := validatePackageName(pkg); len(errs) > 0 {
		return nil, "", errs.ToAggregate()
	}
	if next := p.nextRevisionLocked(namespace, repo, pkg); revision != porchv1alpha1.PlaceholderRevision && revision != next {
		return nil, "", fmt.Errorf("revision %d of package %q in %s/%s is not the next revision (%d)", revision, pkg, namespace, repo, next)
	}
	name := helper.PackageRevisionName(repo, pkg, workspace)
	if _, _, ok := p.packageRevisionLocked(namespace, name); ok {
		return nil, "", fmt.Errorf("package revision %s/%s already exists", namespace, name)
	}
	return r, name, nil
}

// PackageVariants returns copies of the stored PackageVariants of a
// namespace ("" for all namespaces), ordered by namespace and name.
func (s *Sim) PackageVariants(namespace string) []configv1alpha1.PackageVariant {
	return store.StoredCopies[configv1alpha1.PackageVariant](s.store, resPackageVariants, namespace)
}

// putRepositoryLocked stores repo, or, when a Repository of its name
// exists, a copy of that one changed by update; a change of the spec bumps
// generation, as an update through the API would.
func (p *porch) putRepositoryLocked(repo *configv1alpha1.Repository, update func(cur *configv1alpha1.Repository)) *configv1alpha1.Repository {
	e, ok := p.EntryLocked(resRepositories, repo.Namespace, repo.Name)
	if !ok {
		p.InsertLocked(resRepositories, repo, nil)
		return repo.DeepCopy()
	}
	cur := e.Object().(*configv1alpha1.Repository).DeepCopy()
	spec := cur.Spec.DeepCopy()
	update(cur)
	if !equality.Semantic.DeepEqual(*spec, cur.Spec) {
		cur.Generation++
	}
	p.ReplaceLocked(resRepositories, e, cur)
	return cur.DeepCopy()
}
