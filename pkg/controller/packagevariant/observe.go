package packagevariant

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

// reading is what observe learned of one revision the plan may write:
// whether anything needs doing, and if so what the revision's files are
// and what applying the variant to them gives. Exactly one of upToDate,
// pending, blocked and prr is set.
type reading struct {
	// upToDate: the variant's record says nothing it depends on changed
	// since its last write went to the revision, which rendered; its files
	// were not read.
	upToDate bool
	// pending: the last render of the draft failed and nothing changed
	// since; the retry waits for its backoff. The files were not read.
	pending *renderPending
	// blocked: applying the variant to the files failed; a change of the
	// variant or the package is needed.
	blocked *mutationError
	// prr are the files as read, author whose they are, res the variant
	// applied to them.
	prr    *porchv1alpha1.PackageRevisionResources
	author authorship
	res    mutate.Result
	// unrecorded: the files changed since the variant's record, and may
	// be the controller's own write recorded by a status that was lost
	// (unrecordedWrite): author is unverified, and the record says so
	// once the plan acts on the revision.
	unrecorded bool
}

// observe reads what the plan's steps need to be decided: for each
// revision that is not stale, whether it is up to date, and when it is not,
// its files with the variant applied to them. It writes nothing: a
// revision is read once, and its write (act) uses what was read.
func (c *Controller) observe(ctx context.Context, st *state, p plan) (map[string]*reading, error) {
	reads := map[string]*reading{}
	for _, s := range p.steps {
		if s.stale {
			continue
		}
		rd, err := c.observeStep(ctx, st, s, p.kind == planDrafts)
		if err != nil {
			return nil, err
		}
		reads[s.rev.Name] = rd
	}
	return reads, nil
}

// observeStep is the reading of one step's revision; draft: the variant
// writes into it (a failed render is retried, on its backoff). The
// revision is up to date when the variant's last write went to it,
// rendered, and nothing that write was made from has changed since.
func (c *Controller) observeStep(ctx context.Context, st *state, s step, draft bool) (*reading, error) {
	pv := st.pv
	unchanged := c.inputsUnchanged(ctx, st, s.rev, s.base)
	failed := renderFailed(pv, s.rev.Name)
	if unchanged && !failed {
		return &reading{upToDate: true}, nil
	}
	if draft && unchanged {
		// Only a retry of the failed render is left to do: on its
		// backoff, not at every event.
		if d := c.renderRetries.wait(pv.UID, s.rev.Name); d > 0 {
			return &reading{pending: &renderPending{draft: s.rev.Name, after: d}}, nil
		}
	}
	return c.read(ctx, st, s.rev)
}

// read reads revision pr's files and applies the variant's mutations to
// them, and says whose the files are (authorOf). A draft whose files
// changed since the record and that already holds all the variant asks
// (applying it changes nothing) may be the controller's own unrecorded
// write (unrecordedWrite).
func (c *Controller) read(ctx context.Context, st *state, pr *porchv1alpha1.PackageRevision) (*reading, error) {
	prr, err := c.porch.getResources(ctx, pr)
	if err != nil {
		return nil, err
	}
	if prr.Spec.Resources == nil {
		return &reading{blocked: &mutationError{fmt.Errorf("package revision %s has no resources", pr.Name)}}, nil
	}
	// Whether a person changed the files since the variant last wrote
	// them: once edited, a draft stays a person's, whatever the variant
	// writes into it later.
	rd := &reading{prr: prr, author: authorOf(st.applied, pr, prr.Spec.Resources, prr.ResourceVersion)}
	rd.res, err = mutate.Apply(prr.Spec.Resources, mutationInput(st.pv), c.objectGetter(ctx, st.pv))
	if err != nil {
		return &reading{blocked: &mutationError{fmt.Errorf("cannot apply the variant to %s: %w", pr.Name, err)}}, nil
	}
	if !rd.res.Changed && rd.author == editedFiles && c.unrecordedWrite(ctx, st, pr) {
		rd.author, rd.unrecorded = unverifiedFiles, true
	}
	if rd.author == editedFiles {
		logEdited(ctx, st, pr, prr.ResourceVersion)
	}
	return rd, nil
}

// logEdited logs the moment a draft recorded as the variant's own is taken
// for a person's (its files changed since the record, and nothing says the
// change is the controller's own): what the record said, for whoever has
// to tell why the variant says DraftEdited.
func logEdited(ctx context.Context, st *state, pr *porchv1alpha1.PackageRevision, resourceVersion string) {
	if a := st.applied; a.ResourcesDigest != "" {
		klog.FromContext(ctx).V(2).Info("A draft's files changed since the variant recorded them: taking them for a person's edit, kept and never replaced",
			"packageRevision", klog.KObj(pr), "resourceVersion", resourceVersion, "recorded", a.ResourcesDigest, "recordedDraftID", a.DownstreamID)
	}
}

// unrecordedWrite reports whether draft pr, whose files changed since the
// variant recorded them, may hold the controller's own write that a lost
// status never recorded: the record is of before a write the variant owed
// the draft (writeOwed). A person's edit cannot be told from that write, so
// the draft is unverified, not edited. A draft recorded as a person's
// (empty digest) stays so. It is asked only of a draft that already holds
// all the variant asks; a stale draft on its way to a replacement is not
// read for that (the variant's changes for the new upstream are not what
// it owed the old one).
func (c *Controller) unrecordedWrite(ctx context.Context, st *state, pr *porchv1alpha1.PackageRevision) bool {
	a := st.applied
	if a.ResourcesDigest == "" || !c.writeOwed(ctx, st.pv, a, pr.Name) {
		return false
	}
	klog.FromContext(ctx).V(2).Info("A draft changed since the variant's record, which is of before a write the variant owed it: it may hold the controller's own unrecorded write",
		"packageRevision", klog.KObj(pr))
	return true
}
