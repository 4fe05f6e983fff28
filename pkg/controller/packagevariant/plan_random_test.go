package packagevariant

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// TestRandomPlansKeepTheRules plans random downstream packages, in every
// mix of lifecycles, owners and upstream locks, with random readings, and
// holds each plan to the rules that keep people's work safe: the variant
// acts only on its own revisions, writes only into drafts, makes at most
// one draft and none beside another owner's open one, replaces only a
// stale draft, edits only a published revision, never upgrades what
// spec.upgradePolicy: Manual or a rollout holds.
func TestRandomPlansKeepTheRules(t *testing.T) {
	lifecycles := []porchv1alpha1.PackageRevisionLifecycle{draftLC, proposedLC, publishedLC, porchv1alpha1.PackageRevisionLifecycleDeletionProposed}
	other := variant("ns", "other", "uid-2", [2]string{"b", "a"}, [2]string{"deploy", "app"})
	for seed := range uint64(5000) {
		r := rand.New(rand.NewPCG(seed, 1))
		pv := planVariant.DeepCopy()
		if r.IntN(3) == 0 {
			pv.Spec.UpgradePolicy = configv1alpha1.UpgradePolicyManual
		}
		// Up to five revisions of the downstream package, the variant's,
		// another variant's or nobody's, each locked to upstream v1..v4:
		// planOf publishes v1..v3, so v4 stands for a revision gone.
		var ds []*porchv1alpha1.PackageRevision
		for i := range r.IntN(6) {
			owner := []*configv1alpha1.PackageVariant{pv, pv, pv, other, nil}[r.IntN(5)]
			pr := withLock(revision("ns", "deploy", "app", fmt.Sprintf("ws%d", i), owner), fmt.Sprintf("app/v%d", 1+r.IntN(4)))
			pr.Spec.Lifecycle = lifecycles[r.IntN(len(lifecycles))]
			if pr.Spec.Lifecycle == publishedLC || pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDeletionProposed {
				pr.Spec.Revision = 1 + i
			}
			ds = append(ds, pr)
		}
		st, p := planOf(pv, ds)
		if r.IntN(2) == 0 {
			st.rolloutSet = "s"
			p = planDownstream(st)
		}
		// What observe would read: nothing of a stale step, a render
		// pending only in a draft.
		reads := map[string]*reading{}
		for _, s := range p.steps {
			if !s.stale {
				reads[s.rev.Name] = randomReading(r, p.kind == planDrafts)
			}
		}
		p.decide(st, reads)
		if problem := breaksARule(st, p); problem != "" {
			t.Fatalf("seed %d: %s\nrevisions: %s\nactions: %s", seed, problem, describeRevs(ds), describeActions(p.actions))
		}
	}
}

func randomReading(r *rand.Rand, draft bool) *reading {
	rd := &reading{prr: &porchv1alpha1.PackageRevisionResources{}}
	switch r.IntN(5) {
	case 0:
		rd = &reading{upToDate: true}
	case 1:
		if draft {
			rd = &reading{pending: &renderPending{draft: "d"}}
		}
	case 2:
		rd = &reading{blocked: &mutationError{fmt.Errorf("no package context")}}
	case 3:
		rd.res.Changed = true
	}
	return rd
}

// breaksARule says which rule plan p breaks for st ("" when none).
func breaksARule(st *state, p plan) string {
	held := (manualUpgrades(st.pv) || st.rolloutSet != "") && followsLatest(st.pv)
	othersOpen := len(otherOpenDrafts(st.pv, st.dsRevs)) > 0
	own := slices.ContainsFunc(st.dsRevs, func(pr *porchv1alpha1.PackageRevision) bool { return controllerUID(pr) == st.pv.UID })
	makes := 0
	for _, a := range p.actions {
		if a.rev != nil && controllerUID(a.rev) != st.pv.UID {
			return fmt.Sprintf("%s acts on %s, which is not the variant's", a.kind, a.rev.Name)
		}
		lc := porchv1alpha1.PackageRevisionLifecycle("")
		if a.rev != nil {
			lc = a.rev.Spec.Lifecycle
		}
		switch a.kind {
		case actClone, actEdit, actUpgrade:
			makes++
			if othersOpen {
				return fmt.Sprintf("%s beside another owner's open revision", a.kind)
			}
		}
		switch {
		case (a.kind == actWrite || a.kind == actReplace || a.kind == actRenderWait) && lc != draftLC:
			return fmt.Sprintf("%s on %s, a %s revision", a.kind, a.rev.Name, lc)
		case a.kind == actReplace && !needsUpgrade(a.rev, st.upstream):
			return fmt.Sprintf("replace of %s, which is on the selected upstream", a.rev.Name)
		case (a.kind == actEdit || a.kind == actUpgrade) && lc != publishedLC:
			return fmt.Sprintf("%s of %s, a %s revision", a.kind, a.rev.Name, lc)
		case a.kind == actClone && own:
			return "clone although the variant has revisions of the package"
		case held && (a.kind == actUpgrade || a.kind == actReplace):
			return fmt.Sprintf("%s of %s although the upgrade is held", a.kind, a.rev.Name)
		}
	}
	if makes > 1 {
		return fmt.Sprintf("%d drafts made in one pass", makes)
	}
	if len(p.actions) == 0 {
		return "no action: a plan always says what it did or why it waits"
	}
	return ""
}

func describeRevs(prs []*porchv1alpha1.PackageRevision) string {
	var out []string
	for _, pr := range prs {
		owner := controllerUID(pr)
		out = append(out, fmt.Sprintf("%s(%s,%s,%s)", pr.Name, pr.Spec.Lifecycle, owner, pr.Status.UpstreamLock.Git.Ref))
	}
	return strings.Join(out, " ")
}

func describeActions(as []action) string {
	var out []string
	for _, a := range as {
		name := ""
		if a.rev != nil {
			name = " " + a.rev.Name
		}
		out = append(out, a.kind.String()+name)
	}
	return strings.Join(out, ", ")
}
