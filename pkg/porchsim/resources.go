package porchsim

import (
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
)

var packageRevisionResourcesGR = porchv1alpha1.Resource(resPackageRevisionResources)

func (p *porch) serveResourcesLocked(action clienttesting.Action, ns, sub, verb string) (runtime.Object, error) {
	if sub != "" {
		return nil, store.NotServed(action)
	}
	switch verb {
	case "get":
		name := action.(clienttesting.GetAction).GetName()
		e, ok := p.EntryLocked(resPackageRevisions, ns, name)
		if !ok {
			return nil, apierrors.NewNotFound(packageRevisionResourcesGR, name)
		}
		return p.resourcesLocked(e, nil)
	case "list":
		r := action.(clienttesting.ListAction).GetListRestrictions()
		if err := store.CheckFieldSelector(r.Fields, packageRevisionFieldLabels); err != nil {
			return nil, err
		}
		// Every item of the list carries its files, so the list fetches
		// those of each lazy revision it selects (one call of the file
		// source per revision not fetched yet, see SetFileSource); the
		// selectors are applied first, so that a narrow list (a field
		// selector on spec.repository or spec.packageName, say) fetches
		// only what it returns. A failed fetch fails the list.
		l := &porchv1alpha1.PackageRevisionResourcesList{}
		for _, e := range p.SortedEntriesLocked(resPackageRevisions, ns) {
			if store.Selects(r.Labels, r.Fields, store.MustAccessor(e.Object()).GetLabels(), packageRevisionKind.Fields(e.Object())) {
				prr, err := p.resourcesLocked(e, nil)
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
		return p.updateResourcesLocked(ns, prr)
	}
	// create, delete and patch are not served by Porch either.
	return nil, store.NotServed(action)
}

// resourcesLocked is the PackageRevisionResources of a stored revision
// (whose files a lazy revision fetches, see filesLocked). Only an update's
// response carries a render status.
func (p *porch) resourcesLocked(e *store.Entry, rs *porchv1alpha1.RenderStatus) (*porchv1alpha1.PackageRevisionResources, error) {
	files, err := p.filesLocked(e)
	if err != nil {
		return nil, err
	}
	pr := e.Object().(*porchv1alpha1.PackageRevision)
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
func (p *porch) updateResourcesLocked(ns string, in *porchv1alpha1.PackageRevisionResources) (runtime.Object, error) {
	if ns == "" {
		ns = in.Namespace
	}
	e, ok := p.EntryLocked(resPackageRevisions, ns, in.Name)
	if !ok {
		return nil, apierrors.NewNotFound(packageRevisionResourcesGR, in.Name)
	}
	pr := e.Object().(*porchv1alpha1.PackageRevision)
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
	stored, err := p.filesLocked(e)
	if err != nil {
		return nil, err
	}
	rv := pr.ResourceVersion
	var rendered renderOutcome
	p.unlockedLocked(func() {
		var healed map[string]string
		if healed, err = kptengine.Heal(stored, in.Spec.Resources); err == nil {
			rendered = p.render(healed)
		}
	})
	if cur, ok := p.EntryLocked(resPackageRevisions, ns, in.Name); !ok || cur != e || e.Object().(*porchv1alpha1.PackageRevision).ResourceVersion != rv {
		if !ok {
			return nil, apierrors.NewNotFound(packageRevisionResourcesGR, in.Name)
		}
		return nil, staleResourceVersion(resPackageRevisionResources, in.Name)
	}
	pr = e.Object().(*porchv1alpha1.PackageRevision)
	if err != nil {
		return nil, refuse("failed to heal resources: %v", err)
	}
	key := store.Key{Namespace: ns, Name: in.Name}
	if rendered.failed {
		p.failedRenders[key] = newFailedRender(key, &pr.Spec, rendered)
		if pr.Annotations[porchv1alpha1.PushOnRenderFailureAnnotation] != "true" {
			return nil, refuse("%s%sDetails: %s", helper.RenderFailedMessage, helper.RenderFailedNotStored, rendered.message)
		}
		p.setFilesLocked(e, rendered.files, rendered.skipped)
		return nil, refuse("%s%sDetails: %s", helper.RenderFailedMessage, helper.RenderFailedStored, rendered.message)
	}
	delete(p.failedRenders, key)
	p.setFilesLocked(e, rendered.files, rendered.skipped)
	rs := rendered.status
	return p.resourcesLocked(e, &rs)
}

// setFilesLocked stores new files for a revision. The files and the
// PackageRevision are one object in Porch, committed together: the revision
// gets a new resourceVersion (a new commit, even for identical files) and a
// MODIFIED event, and its Kptfile mirrors are refreshed.
func (p *porch) setFilesLocked(e *store.Entry, files map[string]string, skipped []string) {
	cur := e.Object().(*porchv1alpha1.PackageRevision)
	obj := cur.DeepCopy()
	mirrorKptfile(obj, files)
	f := filesOf(e)
	f.files, f.lazy = files, false
	f.skipped = skipped
	p.ReplaceLocked(resPackageRevisions, e, obj)
}
