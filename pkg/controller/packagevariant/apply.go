package packagevariant

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

// recordRead records in st.applied what revision pr holds as rd read it,
// when the variant writes nothing into it: the files hold all it asks.
func (st *state) recordRead(pr, upstream *porchv1alpha1.PackageRevision, rd *reading) {
	st.recordApplied(pr, upstream, rd.res.Candidates, rd.prr.Spec.Resources, rd.author)
}

// writeRead stores in draft pr the variant applied to the files rd read,
// and records what the draft holds then in st.applied. Porch renders the
// pipeline and returns the outcome, recorded in st.rendered. A pipeline
// that fails to render is a *renderError.
func (c *Controller) writeRead(ctx context.Context, st *state, pr, upstream *porchv1alpha1.PackageRevision, rd *reading) error {
	if rd.unrecorded {
		// Recorded before the write: a write whose outcome stays unknown
		// leaves the draft unverified.
		st.recordUnverifiedFiles()
	}
	author, res := rd.author, rd.res
	prr := rd.prr.DeepCopy()
	prr.Spec.Resources = res.Files
	updated, err := c.porch.updateResources(ctx, pr, prr)
	if _, render := isRenderError(err); err != nil && !render && outcomeUnknown(err) {
		live, readErr := c.readBack(ctx, pr, prr.ResourceVersion, err)
		switch {
		case readErr != nil && author != editedFiles:
			// Whether the write was made stays unknown: the draft's
			// files can no longer be told from a person's.
			st.recordUnverified(pr.Name)
		case live != nil:
			updated, err = live, nil
			author = c.notOurs(ctx, pr, author, res.Files, updated.Spec.Resources)
		}
	}
	if rerr, ok := isRenderError(err); ok {
		var kept map[string]string
		if rerr.stored {
			// Porch kept the files: remember them as the controller's
			// own when they are what it wrote, so the draft is not taken
			// for a person's edit later, and read what each function
			// said from its Kptfile.
			if prr, gerr := c.porch.getResources(ctx, pr); gerr == nil {
				kept = prr.Spec.Resources
				author = c.notOurs(ctx, pr, author, res.Files, kept)
				st.recordApplied(pr, upstream, res.Candidates, kept, author)
				rerr.functions, _ = failedSteps(kept)
			}
		}
		st.rendered[pr.Name] = failedRender(rerr, kept)
		return err
	}
	if err != nil {
		return fmt.Errorf("update resources of %s: %w", pr.Name, err)
	}
	st.rendered[pr.Name] = updated.Status.RenderStatus
	c.renderRetries.forget(st.pv.UID)
	klog.FromContext(ctx).V(2).Info("Updated draft resources", "packageRevision", klog.KObj(pr))
	st.recordApplied(pr, upstream, res.Candidates, updated.Spec.Resources, author)
	return nil
}

// writes reports whether applying the variant to draft pr, as rd read it,
// stores files: they need a change, or the last render of the draft
// failed (the write is made again, so that Porch renders again).
func writes(pv *configv1alpha1.PackageVariant, pr *porchv1alpha1.PackageRevision, rd *reading) bool {
	return rd.res.Changed || renderFailed(pv, pr.Name)
}

// mutationError is a problem of the package or the variant that applying
// the mutations revealed (a missing package context, a bad injection
// point); retrying does not help, a change does.
type mutationError struct{ err error }

func (e *mutationError) Error() string { return e.err.Error() }
func (e *mutationError) Unwrap() error { return e.err }

// readBack learns the outcome of a resources update whose answer was lost
// (writeErr): the files are read again, and a new resourceVersion means the
// write was made: the files are returned. The same resourceVersion means it
// was not (nil, nil); a read that fails leaves it unknown (its error).
func (c *Controller) readBack(ctx context.Context, pr *porchv1alpha1.PackageRevision, before string, writeErr error) (*porchv1alpha1.PackageRevisionResources, error) {
	live, err := c.porch.getResources(ctx, pr)
	if err != nil {
		return nil, err
	}
	if live.ResourceVersion == before {
		return nil, nil
	}
	klog.FromContext(ctx).V(2).Info("A resources update whose answer was lost was made", "packageRevision", klog.KObj(pr), "err", writeErr)
	return live, nil
}

// notOurs is the authorship of files, read back from a draft after the
// controller wrote sent into it without hearing the answer (author before
// the write): a person's edit saved between the write and the read looks
// exactly like the write's outcome (a new resourceVersion), so the read
// may be recorded as the controller's own only when it holds exactly what
// was sent. Otherwise a person's edit cannot be told from what a function
// of the pipeline changed: the draft is unverified, kept, never replaced,
// and the variant says DraftUnverified.
func (c *Controller) notOurs(ctx context.Context, pr *porchv1alpha1.PackageRevision, author authorship, sent, files map[string]string) authorship {
	if helper.HoldsWhatWasWritten(sent, files) {
		return author
	}
	klog.FromContext(ctx).V(2).Info("A draft read back after a write whose answer was lost holds more than that write; it may hold a person's edit",
		"packageRevision", klog.KObj(pr))
	return unverifiedFiles
}

// recordApplied remembers in the sync's record (st.applied, stored as the
// variant's status.applied) what its downstream pr holds now (files) and
// what that was made from, so that the next sync knows without reading
// the package whether anything needs doing, and whether a person edited
// the draft since. The files of a draft that is not the variant's own
// (author) are not recorded: an empty digest (edited) or unverifiedMark
// matches no files, so the draft is never taken for the controller's own
// again.
func (st *state) recordApplied(pr, upstream *porchv1alpha1.PackageRevision, cands []mutate.Candidate, files map[string]string, author authorship) {
	injected := injectedObjects(cands)
	digest := resourcesDigest(files)
	switch author {
	case editedFiles:
		digest = ""
	case unverifiedFiles:
		digest = unverifiedMark
	}
	st.applied = &configv1alpha1.AppliedState{
		Downstream:      pr.Name,
		DownstreamID:    pr.Annotations[configv1alpha1.DraftIDAnnotation],
		Upstream:        upstream.Name,
		InputsDigest:    inputsDigest(st.pv, upstream.Name, readByInjection(cands)),
		ResourcesDigest: digest,
		Injected:        injected,
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

// recordUnverified records that the variant cannot tell draft name's files
// from a person's (unverifiedFiles): the answer to a write into it, or to
// its create, was lost and nothing told whether the write was made.
func (st *state) recordUnverified(name string) {
	st.applied = &configv1alpha1.AppliedState{Downstream: name, ResourcesDigest: unverifiedMark}
}

// recordUnverifiedFiles marks the files of the draft the record describes
// as unverified, keeping what it says they were made from.
func (st *state) recordUnverifiedFiles() {
	a := st.applied.DeepCopy()
	a.ResourcesDigest = unverifiedMark
	st.applied = a
}

// createdMark starts the status.applied.resourcesDigest of a draft the
// variant created and has not written into yet; the resourceVersion Porch
// gave the new draft follows it.
const createdMark = "created@"

// recordCreated remembers in the sync's record (st.applied) the draft the
// variant just created, as Porch made it: until the variant writes into it, any other
// resourceVersion is a person's change. The variant writes into a new
// draft in the same sync, but when that fails the next try may come after
// a person's edit, which must not be taken for the clone.
func (st *state) recordCreated(created *porchv1alpha1.PackageRevision) {
	st.applied = &configv1alpha1.AppliedState{
		Downstream:      created.Name,
		DownstreamID:    created.Annotations[configv1alpha1.DraftIDAnnotation],
		ResourcesDigest: createdMark + created.ResourceVersion,
	}
}

// describes reports whether the record a is of draft pr: of its name, and
// of this draft of that name when both carry a draft id (Porch gives a
// draft deleted and made again the same name; a record made before draft
// ids has none and is taken by name).
func describes(a *configv1alpha1.AppliedState, pr *porchv1alpha1.PackageRevision) bool {
	if a == nil || a.Downstream != pr.Name {
		return false
	}
	return a.DownstreamID == "" || a.DownstreamID == pr.Annotations[configv1alpha1.DraftIDAnnotation]
}

// authorship is what the variant's record (status.applied) says of a
// draft's files.
type authorship int

const (
	// ownFiles: the files are as the variant last wrote them.
	ownFiles authorship = iota
	// editedFiles: the files changed since the variant recorded writing
	// them (or it recorded them as a person's): somebody else wrote them.
	editedFiles
	// unverifiedFiles: the variant cannot tell a person's edit from its
	// own write: it has no record of writing into the draft (it adopted
	// it, the answer to its create was lost, or the controller restarted
	// between a write and its record), or a write whose answer was lost
	// read back with more than it sent.
	unverifiedFiles
)

// unverifiedMark is the status.applied.resourcesDigest of a draft whose
// files the variant could not tell from a person's (unverifiedFiles); like
// an edited draft's empty digest it matches no files, and it keeps saying
// why.
const unverifiedMark = "unverified"

// authorOf says whether draft pr, whose files are files at
// resourceVersion rv, is as the variant recorded it (a, its
// status.applied). A draft edited or unverified is never taken for the
// variant's own: taking a person's edit for the variant's own would let a
// later upgrade delete it.
func authorOf(a *configv1alpha1.AppliedState, pr *porchv1alpha1.PackageRevision, files map[string]string, rv string) authorship {
	if recordedAuthor(a, pr) == unverifiedFiles {
		return unverifiedFiles
	}
	if created, ok := strings.CutPrefix(a.ResourcesDigest, createdMark); ok {
		if created != rv {
			return editedFiles
		}
		return ownFiles
	}
	if a.ResourcesDigest != resourcesDigest(files) {
		return editedFiles
	}
	return ownFiles
}

// recordedAuthor is what the record alone says of draft pr: unverified
// (no record of it, or one that says so), or edited (for a draft the
// variant recorded, only a read of its files tells its own from edited; a
// caller that found it not its own asks).
func recordedAuthor(a *configv1alpha1.AppliedState, pr *porchv1alpha1.PackageRevision) authorship {
	if !describes(a, pr) || a.ResourcesDigest == unverifiedMark {
		return unverifiedFiles
	}
	return editedFiles
}
