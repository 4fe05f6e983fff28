package packagevariant

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

// errDraftPending means a draft was just created (or already existed) and
// the informer cache must show it before the variant does anything more.
var errDraftPending = errors.New("draft created; waiting for it to appear in the cache")

func ownerReference(pv *configv1alpha1.PackageVariant) metav1.OwnerReference {
	isController := true
	return metav1.OwnerReference{
		APIVersion: configv1alpha1.SchemeGroupVersion.String(),
		Kind:       "PackageVariant",
		Name:       pv.Name,
		UID:        pv.UID,
		Controller: &isController,
	}
}

// controllerUID returns the UID of the controller owner of a revision, or "".
func controllerUID(pr *porchv1alpha1.PackageRevision) types.UID {
	if ref := metav1.GetControllerOf(pr); ref != nil {
		return ref.UID
	}
	return ""
}

func hasOwner(pr *porchv1alpha1.PackageRevision, uid types.UID) bool {
	for _, ref := range pr.OwnerReferences {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func withoutOwner(refs []metav1.OwnerReference, uid types.UID) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range refs {
		if ref.UID != uid {
			out = append(out, ref)
		}
	}
	return out
}

func copyMap(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// createDraft asks Porch for a new Draft of the downstream package made by
// task. It returns errDraftPending when the draft already existed, so the
// caller waits for the cache instead of guessing.
//
// The draft asks Porch to store the files of a resources update even when
// its pipeline fails to render (porch.kpt.dev/push-on-render-failure):
// without it a failed render leaves the bare clone, which carries none of
// the variant's changes and no sign of the failure, for a person to
// publish; with it the draft holds the variant's changes and a Rendered=False
// condition that Porch shows on the PackageRevision.
//
// It makes no draft beside a Draft or Proposed revision of the package that
// the variant does not manage (an *otherDraftOpen): a package has one open
// draft at a time.
func (c *Controller) createDraft(ctx context.Context, pv *configv1alpha1.PackageVariant, revs []*porchv1alpha1.PackageRevision, task porchv1alpha1.Task, why string) (*porchv1alpha1.PackageRevision, error) {
	if open := otherOpenDrafts(pv, revs); len(open) > 0 {
		return nil, &otherDraftOpen{pv: pv, revisions: open}
	}
	ds := pv.Spec.Downstream
	ws := helper.NextWorkspace(configv1alpha1.DraftWorkspacePrefix, revs)
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            helper.PackageRevisionName(ds.Repo, ds.Package, ws),
			Namespace:       pv.Namespace,
			OwnerReferences: []metav1.OwnerReference{ownerReference(pv)},
			Labels:          copyMap(pv.Spec.Labels),
			Annotations:     draftAnnotations(pv),
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    ds.Package,
			RepositoryName: ds.Repo,
			WorkspaceName:  porchv1alpha1.WorkspaceName(ws),
			Lifecycle:      porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:          []porchv1alpha1.Task{task},
		},
	}
	created, err := c.porch.create(ctx, pr)
	if apierrors.IsAlreadyExists(err) {
		// A retry after a lost response, or a cache that lags: the draft is
		// there. Wait until the cache shows it rather than make another.
		c.expectDraft(pv.UID, pr.Name)
		return nil, errDraftPending
	}
	if err != nil {
		if outcomeUnknown(err) {
			// The draft may exist (the answer was lost): Porch is asked
			// before anything else is created, or a second draft (with
			// the next free workspace number) could follow.
			c.expectUnconfirmed(pv.UID, pr.Name)
		}
		return nil, fmt.Errorf("create draft %s (%s): %w", pr.Name, task.Type, err)
	}
	c.expectDraft(pv.UID, created.Name)
	recordCreated(pv, created)
	klog.FromContext(ctx).Info("Created draft", "packageRevision", klog.KObj(created), "task", task.Type)
	c.recorder.Eventf(pv, corev1.EventTypeNormal, "Created", "Created draft %s: %s", created.Name, why)
	return created, nil
}

// otherDraftOpen: the downstream package has Draft or Proposed revisions
// the variant does not manage, so it makes no draft of its own.
type otherDraftOpen struct {
	pv        *configv1alpha1.PackageVariant
	revisions []*porchv1alpha1.PackageRevision
}

func (e *otherDraftOpen) Error() string {
	names := make([]string, 0, len(e.revisions))
	owners := map[string]bool{}
	for _, pr := range e.revisions {
		names = append(names, fmt.Sprintf("%s (%s)", pr.Name, pr.Spec.Lifecycle))
		if ref := metav1.GetControllerOf(pr); ref != nil {
			owners[fmt.Sprintf("%s %s", ref.Kind, ref.Name)] = true
		}
	}
	sort.Strings(names)
	ds := e.pv.Spec.Downstream
	msg := fmt.Sprintf("downstream package %s has an open revision this variant does not manage: %s", describePackage(ds.Repo, ds.Package), conditions.List(names, 3))
	if len(owners) > 0 {
		list := make([]string, 0, len(owners))
		for o := range owners {
			list = append(list, o)
		}
		sort.Strings(list)
		msg += "; controlled by " + conditions.List(list, 3)
	}
	hint := "publish or delete it, or set spec.adoptionPolicy: adoptExisting to take over revisions nobody controls"
	if adoptionPolicy(e.pv) == configv1alpha1.AdoptionPolicyAdoptExisting {
		hint = "publish or delete it, or remove its controller owner reference so that this variant adopts it"
	}
	return msg + ". The variant makes no second draft beside it: " + hint
}

// otherOpenDrafts returns the Draft and Proposed revisions among revs that
// pv does not control.
func otherOpenDrafts(pv *configv1alpha1.PackageVariant, revs []*porchv1alpha1.PackageRevision) []*porchv1alpha1.PackageRevision {
	var out []*porchv1alpha1.PackageRevision
	for _, pr := range revs {
		if helper.IsPlaceholder(pr) || controllerUID(pr) == pv.UID {
			continue
		}
		switch pr.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed, "":
			out = append(out, pr)
		}
	}
	return out
}

// draftAnnotations are the annotations of a draft the variant creates: the
// variant's own, and Porch's push-on-render-failure (see createDraft).
func draftAnnotations(pv *configv1alpha1.PackageVariant) map[string]string {
	out := copyMap(pv.Spec.Annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[porchv1alpha1.PushOnRenderFailureAnnotation] = "true"
	return out
}

func cloneTask(upstream *porchv1alpha1.PackageRevision) porchv1alpha1.Task {
	return porchv1alpha1.Task{
		Type: porchv1alpha1.TaskTypeClone,
		Clone: &porchv1alpha1.PackageCloneTaskSpec{
			Upstream: porchv1alpha1.UpstreamPackage{UpstreamRef: &porchv1alpha1.PackageRevisionRef{Name: upstream.Name}},
		},
	}
}

func editTask(source *porchv1alpha1.PackageRevision) porchv1alpha1.Task {
	return porchv1alpha1.Task{
		Type: porchv1alpha1.TaskTypeEdit,
		Edit: &porchv1alpha1.PackageEditTaskSpec{Source: &porchv1alpha1.PackageRevisionRef{Name: source.Name}},
	}
}

func upgradeTask(oldUpstream, newUpstream, local *porchv1alpha1.PackageRevision) porchv1alpha1.Task {
	return porchv1alpha1.Task{
		Type: porchv1alpha1.TaskTypeUpgrade,
		Upgrade: &porchv1alpha1.PackageUpgradeTaskSpec{
			OldUpstream:             porchv1alpha1.PackageRevisionRef{Name: oldUpstream.Name},
			NewUpstream:             porchv1alpha1.PackageRevisionRef{Name: newUpstream.Name},
			LocalPackageRevisionRef: porchv1alpha1.PackageRevisionRef{Name: local.Name},
			Strategy:                porchv1alpha1.ResourceMerge,
		},
	}
}

// mutationInput is what the variant asks of its downstream package.
func mutationInput(pv *configv1alpha1.PackageVariant) mutate.Input {
	return mutate.Input{
		VariantName:    pv.Name,
		PackageContext: pv.Spec.PackageContext,
		Pipeline:       pv.Spec.Pipeline,
		Injectors:      pv.Spec.Injectors,
	}
}

func (c *Controller) objectGetter(namespace string) mutate.ObjectGetter {
	return func(gvk schema.GroupVersionKind, name string) (map[string]interface{}, bool, error) {
		return c.injection.Get(gvk, namespace, name)
	}
}

func injectedObjects(cands []mutate.Candidate) []configv1alpha1.InjectedObject {
	var out []configv1alpha1.InjectedObject
	for _, cand := range cands {
		out = append(out, injectedObject(cand))
	}
	return out
}

func injectedObject(cand mutate.Candidate) configv1alpha1.InjectedObject {
	return configv1alpha1.InjectedObject{
		APIVersion: cand.GVK.GroupVersion().String(),
		Kind:       cand.GVK.Kind,
		Name:       cand.Name,
	}
}

// mutationError is a problem of the package or the variant that applying
// the mutations revealed (a missing package context, a bad injection
// point); retrying does not help, a change does.
type mutationError struct{ err error }

func (e *mutationError) Error() string { return e.err.Error() }
func (e *mutationError) Unwrap() error { return e.err }

// upToDate reports whether the variant's last write went to pr, rendered,
// and nothing it depends on has changed since: then nothing needs reading or
// writing.
func (c *Controller) upToDate(pv *configv1alpha1.PackageVariant, pr, upstream *porchv1alpha1.PackageRevision) bool {
	return c.inputsUnchanged(pv, pr, upstream) && !renderFailed(pv, pr.Name)
}

// inputsUnchanged reports whether the variant's last write went to pr and
// nothing it was made from (the upstream, the variant's spec, the injected
// objects) has changed since.
func (c *Controller) inputsUnchanged(pv *configv1alpha1.PackageVariant, pr, upstream *porchv1alpha1.PackageRevision) bool {
	a := pv.Status.Applied
	return a != nil && a.Downstream == pr.Name && a.Upstream == upstream.Name &&
		a.InputsDigest != "" && a.InputsDigest == inputsDigest(pv, upstream.Name, c.readNow(pv.Namespace, a.Injected))
}

// renderFailed reports whether the variant's last write to a revision
// failed to render (status.downstreamTargets says so): the write is made
// again, so that Porch renders again, even if the files need no change.
func renderFailed(pv *configv1alpha1.PackageVariant, name string) bool {
	for _, t := range pv.Status.DownstreamTargets {
		if t.Name == name {
			return t.RenderStatus.Err != ""
		}
	}
	return false
}

// applyTo reads a revision's files, applies the variant's mutations and,
// when write is true and something changed (or the last render of the
// revision failed), stores them: Porch renders the pipeline and returns the
// outcome, recorded in rendered. It records what it wrote in
// pv.Status.Applied. It returns whether the files needed a change. A
// pipeline that fails to render is a *renderError.
func (c *Controller) applyTo(ctx context.Context, pv *configv1alpha1.PackageVariant, pr, upstream *porchv1alpha1.PackageRevision, write bool, rendered map[string]porchv1alpha1.RenderStatus) (bool, error) {
	if write && renderFailed(pv, pr.Name) && c.inputsUnchanged(pv, pr, upstream) {
		// Only a retry of the failed render is left to do: on its
		// backoff, not at every event.
		if d := c.renderRetries.wait(pv.UID, pr.Name); d > 0 {
			return false, &renderPending{draft: pr.Name, after: d}
		}
	}
	prr, err := c.porch.getResources(ctx, pr)
	if err != nil {
		return false, err
	}
	if prr.Spec.Resources == nil {
		return false, &mutationError{fmt.Errorf("package revision %s has no resources", pr.Name)}
	}
	// Whether a person changed the files since the variant last wrote
	// them: once edited, a draft stays a person's, whatever the variant
	// writes into it later.
	edited := editedSince(pv.Status.Applied, pr.Name, prr.Spec.Resources, prr.ResourceVersion)
	res, err := mutate.Apply(prr.Spec.Resources, mutationInput(pv), c.objectGetter(pv.Namespace))
	if err != nil {
		return false, &mutationError{fmt.Errorf("cannot apply the variant to %s: %w", pr.Name, err)}
	}
	if !write {
		if res.Changed {
			return true, nil
		}
	} else if res.Changed || renderFailed(pv, pr.Name) {
		prr = prr.DeepCopy()
		prr.Spec.Resources = res.Files
		updated, err := c.porch.updateResources(ctx, pr, prr)
		if _, render := isRenderError(err); err != nil && !render && outcomeUnknown(err) {
			updated, err = c.readBack(ctx, pr, prr.ResourceVersion, err)
		}
		if rerr, ok := isRenderError(err); ok {
			var kept map[string]string
			if rerr.stored {
				// Porch kept the files: remember them as the controller's
				// own, so the draft is not taken for a person's edit later,
				// and read what each function said from its Kptfile.
				if prr, gerr := c.porch.getResources(ctx, pr); gerr == nil {
					kept = prr.Spec.Resources
					c.recordApplied(pv, pr, upstream, res.Candidates, kept, edited)
					rerr.functions, _ = failedSteps(kept)
				}
			}
			rendered[pr.Name] = failedRender(rerr, kept)
			return true, err
		}
		if err != nil {
			return true, fmt.Errorf("update resources of %s: %w", pr.Name, err)
		}
		prr = updated
		rendered[pr.Name] = updated.Status.RenderStatus
		c.renderRetries.forget(pv.UID)
		klog.FromContext(ctx).V(2).Info("Updated draft resources", "packageRevision", klog.KObj(pr))
	}
	c.recordApplied(pv, pr, upstream, res.Candidates, prr.Spec.Resources, edited)
	return res.Changed, nil
}

// recordApplied remembers in the variant's status what its downstream pr
// holds now (files) and what that was made from, so that the next sync
// knows without reading the package whether anything needs doing, and
// whether a person edited the draft since. The files of a draft a person
// edited are not recorded: an empty digest matches no files, so the draft
// is never taken for the controller's own again.
func (c *Controller) recordApplied(pv *configv1alpha1.PackageVariant, pr, upstream *porchv1alpha1.PackageRevision, cands []mutate.Candidate, files map[string]string, edited bool) {
	injected := injectedObjects(cands)
	digest := resourcesDigest(files)
	if edited {
		digest = ""
	}
	pv.Status.Applied = &configv1alpha1.AppliedState{
		Downstream:      pr.Name,
		Upstream:        upstream.Name,
		InputsDigest:    inputsDigest(pv, upstream.Name, readByInjection(cands)),
		ResourcesDigest: digest,
		Injected:        injected,
	}
}

// createdMark starts the status.applied.resourcesDigest of a draft the
// variant created and has not written into yet; the resourceVersion Porch
// gave the new draft follows it.
const createdMark = "created@"

// recordCreated remembers in the variant's status the draft it just
// created, as Porch made it: until the variant writes into it, any other
// resourceVersion is a person's change. The variant writes into a new
// draft in the same sync, but when that fails the next try may come after
// a person's edit, which must not be taken for the clone.
func recordCreated(pv *configv1alpha1.PackageVariant, created *porchv1alpha1.PackageRevision) {
	pv.Status.Applied = &configv1alpha1.AppliedState{Downstream: created.Name, ResourcesDigest: createdMark + created.ResourceVersion}
}

// editedSince reports whether draft name, whose files are files at
// resourceVersion rv, is not as the variant recorded it (a, its
// status.applied): a person changed it. A draft the variant has no record
// of (adopted, or its record was lost with a status write and a restart)
// counts as edited: taking a person's edit for the variant's own would
// let a later upgrade delete it.
func editedSince(a *configv1alpha1.AppliedState, name string, files map[string]string, rv string) bool {
	if a == nil || a.Downstream != name {
		return true
	}
	if created, ok := strings.CutPrefix(a.ResourcesDigest, createdMark); ok {
		return created != rv
	}
	return a.ResourcesDigest != resourcesDigest(files)
}

// readBack learns the outcome of a resources update whose answer was lost
// (writeErr): the files are read again, and a new resourceVersion means the
// write was made. Otherwise, or when the read fails too, writeErr stands.
func (c *Controller) readBack(ctx context.Context, pr *porchv1alpha1.PackageRevision, before string, writeErr error) (*porchv1alpha1.PackageRevisionResources, error) {
	live, err := c.porch.getResources(ctx, pr)
	if err != nil || live.ResourceVersion == before {
		return nil, writeErr
	}
	klog.FromContext(ctx).V(2).Info("A resources update whose answer was lost was made", "packageRevision", klog.KObj(pr), "err", writeErr)
	return live, nil
}
