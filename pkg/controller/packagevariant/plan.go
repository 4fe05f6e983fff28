package packagevariant

import (
	"fmt"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// plan is what a sync does with the variant's downstream package. It is
// made in two pure steps around one read: planDownstream decides from the
// caches alone (the state the claim step left) the situation and the
// revisions to work through; observe reads, for those, what the decisions
// need (is a revision up to date, what applying the variant to its files
// gives); decide turns both into the actions, in order, each with the
// decision that made it. act executes them and records their results.
type plan struct {
	kind planKind
	// steps are the variant's revisions the plan works through, in order,
	// each with the upstream revision it is to be based on.
	steps []step
	// actions are what act does, in order (decide).
	actions []action
	// done is where the downstream is once every action is done without
	// one ending the pass.
	done progress
}

// planKind is the situation of the downstream package, and what it calls
// for.
type planKind int

const (
	// planClone: the package has no revision: clone the upstream into a
	// new draft and apply the variant to it.
	planClone planKind = iota
	// planDrafts: apply the variant to each of its drafts that is not up
	// to date; the first stale one (based on an old upstream) ends the
	// pass and is replaced when nobody edited it.
	planDrafts
	// planProposed: a revision waits for approval; the variant's changes
	// and upgrades wait for it.
	planProposed
	// planUpgrade: the latest revision is Published and based on an old
	// upstream: make an upgrade draft.
	planUpgrade
	// planPublished: the latest revision is Published on the selected
	// upstream: an edit draft when the variant would change it, nothing
	// otherwise.
	planPublished
	// planDeletionProposed: someone proposed deleting the downstream;
	// nothing is done until they decide.
	planDeletionProposed
	// planForeign: the package holds only revisions the variant does not
	// manage; nothing is done.
	planForeign
)

// step is one revision the act phase works on.
type step struct {
	rev *porchv1alpha1.PackageRevision
	// base is the upstream revision rev is to be based on: the selected
	// one, or the one spec.upgradePolicy: Manual holds it on.
	base *porchv1alpha1.PackageRevision
	// hold is the UpgradeAvailable message ("" when no upgrade is held).
	hold string
	// stale: rev is based on another upstream revision than the selected
	// one, and no upgrade is held on it: it is upgraded (or waits). With
	// hold set too, the upgrade is held but the revision it would be held
	// on is not published any more.
	stale bool
}

// planDownstream decides, from the variant's revisions of the downstream
// package, whether to clone, keep drafts current, upgrade or edit a
// published revision, wait for an approval, or stand back. It reads and
// writes nothing.
func planDownstream(st *state) plan {
	switch {
	case len(st.drafts) > 0:
		p := plan{kind: planDrafts}
		for _, d := range st.drafts {
			s := planStep(st, d)
			p.steps = append(p.steps, s)
			if s.stale {
				break
			}
		}
		return p
	case len(st.proposed) > 0:
		return plan{kind: planProposed, steps: []step{planStep(st, st.proposed[0])}}
	case st.published != nil:
		s := planStep(st, st.published)
		if s.stale {
			return plan{kind: planUpgrade, steps: []step{s}}
		}
		return plan{kind: planPublished, steps: []step{s}}
	case st.deletionProposed != nil:
		return plan{kind: planDeletionProposed}
	case len(st.foreign) > 0:
		return plan{kind: planForeign}
	}
	return plan{kind: planClone}
}

// planStep is the step for one of the variant's revisions.
func planStep(st *state, pr *porchv1alpha1.PackageRevision) step {
	s := step{rev: pr, base: st.upstream}
	held, msg := heldUpgrade(st, pr)
	s.hold = msg
	if held != nil {
		s.base = held
	} else {
		s.stale = needsUpgrade(pr, st.upstream)
	}
	return s
}

// needsUpgrade reports whether a downstream revision is based on another
// upstream revision than the one selected. A revision whose lock does not
// say (adopted, made by init) is taken as up to date, as the reference does.
func needsUpgrade(pr, upstream *porchv1alpha1.PackageRevision) bool {
	if helper.LockedToDraft(pr) {
		return true
	}
	rev, ok := helper.LockedUpstreamRevision(pr)
	return ok && rev != upstream.Spec.Revision
}

// heldUpgrade holds the upgrade of a variant that follows the latest
// upstream revision when it must not upgrade by itself: spec.upgradePolicy
// is Manual, or its set rolls changes out in waves (hold.go). It returns
// the upstream revision the downstream stays on and the UpgradeAvailable
// message; nil and "" when there is nothing to hold (an explicit revision
// or workspace is itself the decision).
func heldUpgrade(st *state, current *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, string) {
	pv := st.pv
	if !(manualUpgrades(pv) || st.rolloutSet != "") || !followsLatest(pv) || current == nil || !needsUpgrade(current, st.upstream) {
		return nil, ""
	}
	rev, ok := helper.LockedUpstreamRevision(current)
	if !ok {
		return nil, ""
	}
	available := fmt.Sprintf("upstream %s revision %d (%s) is available; %s is based on revision %d.",
		describePackage(pv.Spec.Upstream.Repo, pv.Spec.Upstream.Package), st.upstream.Spec.Revision, st.upstream.Name, current.Name, rev)
	msg := fmt.Sprintf("%s spec.upgradePolicy is Manual: set spec.upstream.revision to %d (or the policy to Automatic) to get an upgrade draft",
		available, st.upstream.Spec.Revision)
	if !manualUpgrades(pv) {
		msg = fmt.Sprintf("%s %s", available, rolloutHoldMessage(st.rolloutSet))
	}
	return helper.PublishedRevision(st.upRevs, rev), msg
}

// manualUpgrades reports whether the variant follows the latest upstream
// revision without upgrading to it by itself.
func manualUpgrades(pv *configv1alpha1.PackageVariant) bool {
	return pv.Spec.UpgradePolicy == configv1alpha1.UpgradePolicyManual
}

// actionKind is what one action of a plan does.
type actionKind int

const (
	// actClone: clone the upstream into a new draft and apply the variant
	// to it.
	actClone actionKind = iota
	// actNone: the revision is up to date; nothing is read or written.
	actNone
	// actWrite: store the variant's changes (or the same files again, for
	// a failed render) in a draft, and record them.
	actWrite
	// actRecord: the revision holds all the variant asks: record it, write
	// nothing.
	actRecord
	// actRenderWait: the draft's last render failed and nothing changed;
	// the retry waits for its backoff.
	actRenderWait
	// actEdit: the variant would change a published revision: make an
	// edit draft of it and apply the variant to that.
	actEdit
	// actUpgrade: a published revision is based on an old upstream: make
	// an upgrade draft and apply the variant to it.
	actUpgrade
	// actReplace: a draft is based on an old upstream: delete it when
	// nobody edited it (checked live) and make its successor; keep it
	// otherwise.
	actReplace
	// actWait: a person's decision comes first (an approval, a deletion
	// proposal, another owner's package, an upstream revision gone): the
	// variant reports it and writes nothing.
	actWait
	// actBlocked: the variant cannot be applied to the revision; a change
	// of the variant or the package is needed.
	actBlocked
)

// action is one thing a plan does, with the decision that made it.
type action struct {
	kind actionKind
	// rev is the revision acted on (none for a clone); base the upstream
	// revision it is to be based on; hold the UpgradeAvailable message
	// ("" none), noted as act reaches the action.
	rev, base *porchv1alpha1.PackageRevision
	hold      string
	// read is what observe read of rev (actWrite, actRecord,
	// actRenderWait).
	read *reading
	// err is what blocks the action (actBlocked): a *mutationError, or an
	// *otherDraftOpen that names whose draft is in the way.
	err error
	// from is the upstream revision an upgrade merges from (actUpgrade).
	from *porchv1alpha1.PackageRevision
	// wait is what the variant reports (actWait).
	wait progress
	// why is the decision, in words: logged as act takes the action.
	why string
}

// ends reports whether the action ends the pass: what comes after it
// waits for the next sync.
func (a action) ends() bool {
	switch a.kind {
	case actNone, actWrite, actRecord:
		return false
	}
	return true
}

// decide turns the plan's steps, and what observe read of them (reads, by
// revision name), into its actions, up to the first that ends the pass:
// the actions are what act takes. It reads and writes nothing.
func (p *plan) decide(st *state, reads map[string]*reading) {
	p.actions, p.done = nil, progress{kind: progressReady}
	switch p.kind {
	case planClone:
		p.add(unlessOthersOpen(st, action{kind: actClone, base: st.upstream, why: "the package has no revision yet: clone " + st.upstream.Name}))
	case planDeletionProposed:
		p.add(waitFor(progress{kind: progressDeletionProposed, revision: st.deletionProposed},
			"a person proposed deleting the package: restoring it or making a new draft would overrule them"))
	case planForeign:
		p.add(waitFor(progress{kind: progressForeign, others: st.foreign}, "the package holds only revisions of other owners"))
	case planUpgrade:
		p.add(unlessOthersOpen(st, upgradeOf(st, p.steps[0])))
	case planPublished:
		p.add(unlessOthersOpen(st, publishedAction(p.steps[0], reads[p.steps[0].rev.Name])))
	case planProposed:
		s := p.steps[0]
		p.done = progress{kind: progressReadyProposed, revision: s.rev}
		p.add(proposedAction(st, s, reads[s.rev.Name]))
	case planDrafts:
		for _, s := range p.steps {
			a := draftAction(st.pv, s, reads[s.rev.Name])
			p.add(a)
			if a.ends() { // what follows waits for the next sync
				break
			}
		}
	}
}

func (p *plan) add(a action) { p.actions = append(p.actions, a) }

// unlessOthersOpen is a, unless a makes a draft (clone, edit, upgrade)
// and the package has an open revision of another owner: a package has one
// open draft at a time, so the variant is blocked by that owner.
func unlessOthersOpen(st *state, a action) action {
	switch a.kind {
	case actClone, actEdit, actUpgrade:
	default:
		return a
	}
	open := otherOpenDrafts(st.pv, st.dsRevs)
	if len(open) == 0 {
		return a
	}
	err := &otherDraftOpen{pv: st.pv, revisions: open}
	return action{kind: actBlocked, rev: a.rev, base: a.base, hold: a.hold, err: err, why: err.Error()}
}

// waitFor waits for a person's decision, reporting pr.
func waitFor(pr progress, why string) action {
	return action{kind: actWait, wait: pr, why: why}
}

// on is an action of kind on step s's revision.
func on(s step, kind actionKind, why string) action {
	return action{kind: kind, rev: s.rev, base: s.base, hold: s.hold, why: why}
}

// recordRead records what observe read of s's revision, which holds all
// the variant asks.
func recordRead(s step, rd *reading) action {
	a := on(s, actRecord, "holds all the variant asks")
	a.read = rd
	return a
}

// waitOn is waitFor for step s, noting its UpgradeAvailable message.
func waitOn(s step, pr progress, why string) action {
	a := waitFor(pr, why)
	a.hold = s.hold
	return a
}

// readAction is the action for a revision observe read, when the reading
// alone decides it (nil: it does not).
func readAction(s step, rd *reading) *action {
	a := on(s, actNone, "")
	a.read = rd
	switch {
	case rd.upToDate:
		a.kind, a.why = actNone, "up to date: nothing the variant depends on changed since its last write"
	case rd.pending != nil:
		a.kind, a.why = actRenderWait, "its last render failed and nothing changed since: the retry waits for its backoff"
	case rd.blocked != nil:
		a.kind, a.err, a.why = actBlocked, rd.blocked, rd.blocked.Error()
	default:
		return nil
	}
	return &a
}

// draftAction is what the variant does with one of its drafts: replace it
// when it is stale, otherwise keep it current. A stale draft whose upgrade
// is held (s.hold: the upstream revision it is held on is not published
// any more) is kept: a replacement would move the variant by itself.
func draftAction(pv *configv1alpha1.PackageVariant, s step, rd *reading) action {
	if s.stale && s.hold != "" {
		return waitOn(s, progress{kind: progressHeldOnGone, revision: s.rev, upstream: s.base},
			"based on an upstream revision that is not published any more, and its upgrades are held: a person (or its wave) decides")
	}
	if s.stale {
		return on(s, actReplace, "based on an old upstream: replaced by a draft from "+s.base.Name+" when nobody edited it")
	}
	if a := readAction(s, rd); a != nil {
		return *a
	}
	a := recordRead(s, rd)
	if writes(pv, s.rev, rd) {
		a.kind, a.why = actWrite, "the variant's changes are not all in it, or its last render failed"
	}
	return a
}

// publishedAction is what the variant does with a published revision on
// the selected upstream: an edit draft when the variant would change it.
func publishedAction(s step, rd *reading) action {
	if a := readAction(s, rd); a != nil {
		return *a
	}
	if rd.res.Changed {
		return on(s, actEdit, "the variant would change it")
	}
	return recordRead(s, rd)
}

// proposedAction: Porch refuses changes to a Proposed revision, so the
// variant reports that it waits for the approval instead of failing (the
// reference errors for ever) or making another draft.
func proposedAction(st *state, s step, rd *reading) action {
	if s.stale {
		return waitOn(s, progress{kind: progressApprovalBeforeUpgrade, revision: s.rev, upstream: st.upstream},
			"it waits for approval: the upgrade follows its publication")
	}
	if a := readAction(s, rd); a != nil {
		return *a
	}
	if rd.res.Changed {
		return waitOn(s, progress{kind: progressApprovalBeforeChanges, revision: s.rev},
			"it waits for approval: the variant's changes follow its publication")
	}
	return recordRead(s, rd)
}

// upgradeOf is the upgrade of published revision s.rev to the selected
// upstream: Porch merges from the upstream revision it is based on, so
// one that is not published any more leaves nothing to merge from.
func upgradeOf(st *state, s step) action {
	var from *porchv1alpha1.PackageRevision
	if rev, ok := helper.LockedUpstreamRevision(s.rev); ok {
		from = helper.PublishedRevision(st.upRevs, rev)
	}
	if from == nil {
		return waitOn(s, progress{kind: progressCannotUpgrade, revision: s.rev, upstream: st.upstream},
			"the upstream revision it is based on is not published any more: Porch has nothing to merge from")
	}
	a := on(s, actUpgrade, fmt.Sprintf("based on upstream revision %d: upgrade to %d", from.Spec.Revision, st.upstream.Spec.Revision))
	a.base, a.from = st.upstream, from
	return a
}

var actionNames = [...]string{actClone: "clone", actNone: "none", actWrite: "write", actRecord: "record",
	actRenderWait: "renderWait", actEdit: "edit", actUpgrade: "upgrade", actReplace: "replace", actWait: "wait", actBlocked: "blocked"}

func (k actionKind) String() string {
	if int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("action(%d)", int(k))
}
