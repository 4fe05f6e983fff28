package porchsim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
)

// porch is Porch's side of the Sim: the porch.kpt.dev/v1alpha1 resources
// served with the rules the Porch server enforces (porch-wire-contract.md),
// on top of the store, whose objects and lock it shares. Its rules live in
// files named for them: tasks.go (what a new draft is made from),
// lifecycle.go (updates, approval, publishing, the latest-revision label,
// the placeholder), refusals.go (what Porch refuses and how it says so),
// resources.go (PackageRevisionResources), files.go (lazy package files).
// The rules themselves are read from pkg/apis/porch/helper.
type porch struct {
	*store.Store
	engine engine
	// rendering, set by tests, runs while a request's engine work runs
	// without the lock.
	rendering func()
	// fileSource fetches the files of revisions imported without them
	// (see SetFileSource); fetched and fileErrors record what it did.
	fileSource func(ctx context.Context, namespace, name string) (map[string]string, error)
	fetched    map[store.Key]struct{}
	fileErrors map[store.Key]error
	// failedRenders are the writes refused because their pipeline failed
	// (see Sim.FailedRenders), by the revision's key: the last one per
	// revision, dropped when a write of it renders or it is deleted.
	failedRenders map[store.Key]FailedRender
}

func newPorch(st *store.Store) *porch {
	p := &porch{
		Store:      st,
		engine:     engine{notBuiltin: kptengine.FailNotBuiltin, memo: newEngineMemo()},
		fetched:    map[store.Key]struct{}{},
		fileErrors: map[store.Key]error{},

		failedRenders: map[store.Key]FailedRender{},
	}
	st.SetRules(store.Rules{
		Stamp: func(obj runtime.Object) {
			if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok {
				p.fillSelfLockLocked(pr)
			}
		},
		Removed: func(obj runtime.Object) {
			if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok && !helper.IsPlaceholder(pr) {
				// The label is computed: deleting the latest revision
				// moves it back to the previous one.
				p.recomputeLatestLocked(pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName)
				delete(p.failedRenders, store.Key{Namespace: pr.Namespace, Name: pr.Name})
			}
		},
		Keep: func(obj runtime.Object) bool {
			pr, ok := obj.(*porchv1alpha1.PackageRevision)
			return ok && p.deleteRefusalLocked(pr) != nil
		},
	})
	return p
}

// serveLocked serves a request of the Sim's clientsets: Porch's resources
// by Porch's rules, the others as the API server does. The garbage
// collector then looks at the object a write stored, as the Kubernetes
// collector looks at every object it sees.
func (p *porch) serveLocked(r *request) (runtime.Object, error) {
	action := r.action
	resource, sub, verb, ns := action.GetResource().Resource, action.GetSubresource(), action.GetVerb(), action.GetNamespace()
	var obj runtime.Object
	var err error
	switch k, stored := p.KindOf(resource); {
	case resource == resPackageRevisions:
		obj, err = p.serveRevisionsLocked(action, ns, sub, verb)
	case resource == resPackageRevisionResources:
		obj, err = p.serveResourcesLocked(action, ns, sub, verb)
	case stored:
		obj, err = p.ServeObjectLocked(k, action, ns, sub, verb)
	default:
		return nil, store.NotServed(action)
	}
	if err != nil {
		return nil, err
	}
	if _, stored := p.KindOf(resource); stored && (verb == "create" || verb == "update" || verb == "patch") {
		if m, err := meta.Accessor(obj); err == nil {
			p.CollectIfOwnersGoneLocked(resource, m.GetNamespace(), m.GetName())
		}
	}
	return obj, nil
}

// serveRevisionsLocked serves PackageRevisions: reads as the store does,
// writes by Porch's rules, and the approval subresource.
func (p *porch) serveRevisionsLocked(action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub == "approval" && verb == "update" {
		// approval is for people and other automation (the controllers
		// never call it); tests use the Publish helper.
		pr, ok := action.(clienttesting.UpdateAction).GetObject().(*porchv1alpha1.PackageRevision)
		if !ok {
			return nil, apierrors.NewBadRequest("expected a PackageRevision")
		}
		return p.approveLocked(ns, pr)
	}
	if sub != "" {
		return nil, store.NotServed(action)
	}
	return p.ServeKindLocked(packageRevisionKind, p, action, ns, sub, verb)
}

// CreateLocked, UpdateLocked and DeleteLocked are porch's store.Writer for
// PackageRevisions.
func (p *porch) CreateLocked(ns string, obj runtime.Object) (runtime.Object, error) {
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, apierrors.NewBadRequest("expected a PackageRevision")
	}
	return p.createPackageRevisionLocked(ns, pr)
}

func (p *porch) UpdateLocked(ns string, obj runtime.Object, _ string) (runtime.Object, error) {
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, apierrors.NewBadRequest("expected a PackageRevision")
	}
	return p.updatePackageRevisionLocked(ns, pr)
}

// DeleteLocked ignores the delete options, as Porch does: preconditions
// protect nothing.
func (p *porch) DeleteLocked(ns, name string, _ metav1.DeleteOptions) error {
	e, err := p.LookupLocked(packageRevisionKind, ns, name)
	if err != nil {
		return err
	}
	if err := p.deleteRefusalLocked(e.Object().(*porchv1alpha1.PackageRevision)); err != nil {
		return err
	}
	p.DeleteEntryLocked(resPackageRevisions, e, false)
	return nil
}

// unlockedLocked runs work with the Sim's lock released (the caller holds
// it and has it again on return): for the engine work of a request, which
// reads only what the caller took from the store. Tests' rendering hook runs
// first, without the lock.
func (p *porch) unlockedLocked(work func()) {
	hook := p.rendering
	p.Unlock()
	defer p.Lock()
	if hook != nil {
		hook()
	}
	work()
}

// repositoryURLLocked is the git URL of a repository (its name when it has
// none).
func (p *porch) repositoryURLLocked(namespace, repo string) string {
	if e, ok := p.EntryLocked(resRepositories, namespace, repo); ok {
		if g := e.Object().(*configv1alpha1.Repository).Spec.Git; g != nil && g.Repo != "" {
			return g.Repo
		}
	}
	return repo
}

// fillSelfLockLocked records in a PackageRevision about to be stored where
// it lives in git: drafts/<package>/<workspace>,
// proposed/<package>/<workspace>, <package>/v<revision>, or the branch
// (main) for the placeholder, at its commit (its resourceVersion).
func (p *porch) fillSelfLockLocked(pr *porchv1alpha1.PackageRevision) {
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
		repo:      p.repositoryURLLocked(pr.Namespace, pr.Spec.RepositoryName),
		directory: pr.Spec.PackageName,
		ref:       ref,
		commit:    pr.ResourceVersion,
	}.upstreamLock()
}

// packageRevisionLocked returns a stored revision and its entry, whose
// files are read through filesLocked.
func (p *porch) packageRevisionLocked(ns, name string) (*porchv1alpha1.PackageRevision, *store.Entry, bool) {
	e, ok := p.EntryLocked(resPackageRevisions, ns, name)
	if !ok {
		return nil, nil, false
	}
	return e.Object().(*porchv1alpha1.PackageRevision), e, true
}

// packageEntriesLocked lists the revisions of one package, by name, from
// the store's index of packages (a PackageRevision's group).
func (p *porch) packageEntriesLocked(ns, repo, pkg string) []*store.Entry {
	return p.GroupLocked(resPackageRevisions, packageKey{ns, repo, pkg})
}

func (p *porch) packageRevisionsLocked(ns, repo, pkg string) []*porchv1alpha1.PackageRevision {
	var out []*porchv1alpha1.PackageRevision
	for _, e := range p.packageEntriesLocked(ns, repo, pkg) {
		out = append(out, e.Object().(*porchv1alpha1.PackageRevision))
	}
	return out
}
