package packagevariant

import (
	"fmt"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// plan is what a sync does with the variant's downstream package, decided
// from the caches alone (the state observe left) before anything is
// written. Whether a revision is up to date, and whether the variant's
// mutations would change a published one, depend on the injected objects
// and the package's files: the act phase asks those as it works through
// the steps.
type plan struct {
	kind planKind
	// steps are the variant's revisions the act phase works through, in
	// order, each with the upstream revision it is to be based on.
	steps []step
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
	// one, and no upgrade is held: it is upgraded (or waits).
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
