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
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
)

// errDraftPending means a draft was just created (or already existed) and
// the informer cache must show it before the variant does anything more.
var errDraftPending = errors.New("draft created; waiting for it to appear in the cache")

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
			Annotations:     withDraftID(draftAnnotations(pv)),
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    ds.Package,
			RepositoryName: ds.Repo,
			WorkspaceName:  porchv1alpha1.WorkspaceName(ws),
			Lifecycle:      porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:          []porchv1alpha1.Task{task},
		},
	}
	made := helper.DescribeTask(task)
	if d := c.renderRetries.wait(pv.UID, createRetryKey(pr.Name, made)); d > 0 {
		// Its render failed, and it would be made from the same revisions.
		return nil, &renderPending{draft: pr.Name, after: d}
	}
	created, err := c.porch.create(ctx, pr)
	if rerr, ok := isRenderError(err); ok {
		// Porch stored nothing (measured): no draft to wait for.
		rerr.creating = made
		rerr.candidates = c.pipelineFunctions(ctx, pv, task)
		return nil, fmt.Errorf("create draft %s (%s): %w", pr.Name, task.Type, err)
	}
	if apierrors.IsAlreadyExists(err) {
		// A retry after a lost response, or a cache that lags: the draft is
		// there. Wait until the cache shows it rather than make another.
		c.expectDraft(pv.UID, pr.Name)
		return nil, errDraftPending
	}
	if err != nil {
		err = fmt.Errorf("create draft %s (%s): %w", pr.Name, task.Type, err)
		if outcomeUnknown(err) {
			// The draft may exist (the answer was lost): Porch is asked
			// before anything else is created, or a second draft (with
			// the next free workspace number) could follow.
			c.expectUnconfirmed(pv.UID, pr.Name)
			return nil, &createUnknown{name: pr.Name, err: err}
		}
		return nil, err
	}
	c.expectDraft(pv.UID, created.Name)
	klog.FromContext(ctx).Info("Created draft", "packageRevision", klog.KObj(created), "task", task.Type)
	if !routineForASet(pv, task) {
		c.recorder.Eventf(pv, corev1.EventTypeNormal, "Created", "Created draft %s: %s", created.Name, why)
	}
	return created, nil
}

// withDraftID adds a new draft's id (configv1alpha1.DraftIDAnnotation) to
// its annotations: a value made up for this create, so that a record of an
// earlier draft of the same name is not taken for one of this draft.
func withDraftID(annotations map[string]string) map[string]string {
	annotations[configv1alpha1.DraftIDAnnotation] = string(uuid.NewUUID())
	return annotations
}

// createUnknown is a create of draft name whose answer was lost: the
// draft may exist, made from the create, whatever the variant's record
// says of an earlier draft of that name.
type createUnknown struct {
	name string
	err  error
}

func (e *createUnknown) Error() string { return e.err.Error() }
func (e *createUnknown) Unwrap() error { return e.err }

// routineForASet reports whether a draft made with task is the clone that
// starts the downstream of a variant a PackageVariantSet controls: no
// event is recorded for it. The set's own event ("Created N
// PackageVariant(s)") and the variant's status say it, and a fleet of
// thousands would otherwise write an Event per variant for a routine step
// (a fifth of what a new variant costs the API server). Upgrades, edits,
// replacements and hand-written variants' drafts keep their event.
func routineForASet(pv *configv1alpha1.PackageVariant, task porchv1alpha1.Task) bool {
	ref := metav1.GetControllerOfNoCopy(pv)
	return task.Type == porchv1alpha1.TaskTypeClone && ref != nil && ref.Kind == "PackageVariantSet"
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

// pipelineFunctions lists the functions of the pipeline Porch ran when it
// made a draft by task: those of the revisions the draft is made from (the
// upstream of a clone, the source of an edit, both sides of an upgrade),
// each read from its Kptfile, and those the variant prepends. A revision
// whose files cannot be read is named as such: the list is a pointer for a
// person, not a verdict.
func (c *Controller) pipelineFunctions(ctx context.Context, pv *configv1alpha1.PackageVariant, task porchv1alpha1.Task) []string {
	var sources []string
	switch {
	case task.Clone != nil && task.Clone.Upstream.UpstreamRef != nil:
		sources = []string{task.Clone.Upstream.UpstreamRef.Name}
	case task.Edit != nil && task.Edit.Source != nil:
		sources = []string{task.Edit.Source.Name}
	case task.Upgrade != nil:
		sources = []string{task.Upgrade.NewUpstream.Name, task.Upgrade.LocalPackageRevisionRef.Name}
	}
	var out []string
	for _, name := range sources {
		prr, err := c.porch.getResources(ctx, &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: pv.Namespace, Name: name}})
		if err != nil {
			out = append(out, name+": (its files could not be read)")
			continue
		}
		if fns := pipelineOf(prr.Spec.Resources[kptfilev1.KptFileName]); len(fns) > 0 {
			out = append(out, name+": "+strings.Join(fns, ", "))
		}
	}
	if fns := functionNames(pv.Spec.Pipeline); len(fns) > 0 {
		out = append(out, "prepended by the variant: "+strings.Join(fns, ", "))
	}
	return out
}

// pipelineOf names the functions of a Kptfile's pipeline ("" Kptfile or
// one that does not parse: none).
func pipelineOf(kptfile string) []string {
	var kf kptfilev1.KptFile
	if err := yaml.Unmarshal([]byte(kptfile), &kf); err != nil {
		return nil
	}
	return functionNames(kf.Pipeline)
}

// functionNames names a pipeline's mutators and validators, in order:
// "name (image)", or the image (or exec) alone.
func functionNames(p *kptfilev1.Pipeline) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, f := range append(append([]kptfilev1.Function{}, p.Mutators...), p.Validators...) {
		what := f.Image
		if what == "" {
			what = f.Exec
		}
		if f.Name != "" {
			what = f.Name + " (" + what + ")"
		}
		out = append(out, what)
	}
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
