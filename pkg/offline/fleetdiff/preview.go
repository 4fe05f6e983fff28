package fleetdiff

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// Upgrade is a new revision of a package that a diff publishes into the
// live fleet before the controllers run: the preview of publishing it.
type Upgrade struct {
	Repo, Package string
	// Revision is the revision number to publish; 0: the one after the
	// package's latest.
	Revision int
	Files    map[string]string
	// Dir is where the files were read, for messages.
	Dir string
}

// Preview is what publishing a new revision of a package does to the
// variants that have it as their upstream, one list per outcome.
type Preview struct {
	Namespace string `json:"namespace"`
	// Package is REPOSITORY/PACKAGE.
	Package  string `json:"package"`
	Revision int    `json:"revision"`
	// Now are the variants the controllers make a draft from the new
	// revision for: an upgrade, or a clone replacing a draft of a package
	// that has nothing published.
	Now []PreviewVariant `json:"now,omitempty"`
	// Later are the variants a rollout of their set holds back for now.
	Later []PreviewVariant `json:"later,omitempty"`
	// NotAffected are the variants pinned to another revision, or that
	// got no upgrade draft for another reason (Reason).
	NotAffected []PreviewVariant `json:"notAffected,omitempty"`
	// RenderFailures are the variants whose upgrade does not render.
	RenderFailures []PreviewVariant `json:"renderFailures,omitempty"`
	// WithCollisions counts the variants of Now and Later with collisions.
	WithCollisions int `json:"withCollisions"`
}

// PreviewVariant is one variant in a Preview.
type PreviewVariant struct {
	// Name is namespace/name of the PackageVariant.
	Name string `json:"name"`
	// Set is the PackageVariantSet that owns it, if any.
	Set string `json:"set,omitempty"`
	// Draft is the draft made now from the new revision (Now), and Task
	// how: upgrade, or clone (in place of an unpublished draft).
	Draft string `json:"draft,omitempty"`
	Task  string `json:"task,omitempty"`
	// Wave is the rollout wave the variant is in (Later).
	Wave string `json:"wave,omitempty"`
	// Pinned is the upstream revision the variant stays on (NotAffected,
	// Later).
	Pinned int `json:"pinned,omitempty"`
	// Reason says why (NotAffected without a pin) or what the render said
	// (RenderFailures): the variant's Ready message.
	Reason string `json:"reason,omitempty"`
	// FailedFunctions name, for a render failure (RenderFailures, or Later
	// when its wave's draft will not render), each function that failed
	// and what it said: read from the offline render, where Porch's answer
	// to a failed create names none.
	FailedFunctions []string `json:"failedFunctions,omitempty"`
	// Collisions are what the variant writes that the new revision also
	// changed or removed (Now and Later).
	Collisions []Collision `json:"collisions,omitempty"`
	// Revisions are, for a variant held back (Later), the draft it gets
	// when its wave opens, with its files' diff: computed by a run with
	// the rollouts' waves all open.
	Revisions []RevisionDiff `json:"revisions,omitempty"`
}

// publish adds each upgrade to the Sim as a Published revision, as a
// person publishing it would: the next revision of a package the fleet
// holds, labelled latest.
func publish(sim *porchsim.Sim, st *State, ns string, ups []Upgrade) ([]*porchv1alpha1.PackageRevision, error) {
	var out []*porchv1alpha1.PackageRevision
	for _, up := range ups {
		name := up.Repo + "/" + up.Package
		latest, found := 0, false
		for _, pr := range st.Revisions {
			if pr.Namespace != ns || pr.Spec.RepositoryName != up.Repo || pr.Spec.PackageName != up.Package {
				continue
			}
			found = true
			latest = max(latest, pr.Spec.Revision)
		}
		if !found {
			return nil, fmt.Errorf("--package %s: the fleet has no revision of package %s in namespace %s, so no variant follows it; check the repository and package name (or --namespace)", name, name, ns)
		}
		rev := up.Revision
		if rev == 0 {
			rev = latest + 1
		}
		if rev != latest+1 {
			return nil, fmt.Errorf("--package %s@%d: the latest revision of %s is %d; the preview publishes the next one, %d (give @%d or leave the revision out)", name, rev, name, latest, latest+1, latest+1)
		}
		pr, err := sim.AddPublished(ns, up.Repo, up.Package, rev, up.Files)
		if err != nil {
			return nil, fmt.Errorf("--package %s@%d=%s: %w", name, rev, up.Dir, err)
		}
		out = append(out, pr)
	}
	return out, nil
}

// previews sorts the variants that follow each published revision's
// package by what the run did to them, and finds the collisions of those
// that take the new revision (now or later). Each revision of a blueprint
// is read once, whatever the number of variants.
func previews(published []*porchv1alpha1.PackageRevision, before, after *State, d *Diff, files FileReader, failed []porchsim.FailedRender) ([]Preview, error) {
	diffs := map[string]VariantDiff{}
	for _, v := range d.Variants {
		diffs[v.Namespace+"/"+v.Name] = v
	}
	keys := slices.Sorted(maps.Keys(after.Variants))
	owned := revisionsByOwner(before)
	failedOf := failedByPackage(failed)
	var out []Preview
	for _, up := range published {
		p := Preview{Namespace: up.Namespace, Package: up.Spec.RepositoryName + "/" + up.Spec.PackageName, Revision: up.Spec.Revision}
		blueprint := &blueprintRevisions{before: before, files: files, ns: up.Namespace, repo: up.Spec.RepositoryName, pkg: up.Spec.PackageName, facts: map[int]*blueprintFacts{}}
		for _, k := range keys {
			pv := after.Variants[k]
			u := pv.Spec.Upstream
			if pv.Namespace != up.Namespace || u == nil || u.Repo != up.Spec.RepositoryName || u.Package != up.Spec.PackageName {
				continue
			}
			c := classify(k, pv, up, after, diffs[k], failedOf)
			if c.outcome == outcomeNow || c.outcome == outcomeLater {
				var err error
				if c.Collisions, err = variantCollisions(pv, before.Variants[k], up, owned[pv.UID], blueprint); err != nil {
					return nil, err
				}
				if len(c.Collisions) > 0 {
					p.WithCollisions++
				}
			}
			p.add(c)
		}
		out = append(out, p)
	}
	return out, nil
}

// variantCollisions compares what the variant writes with the change from
// the revision it was on (its pin before the run, else the revision before
// up) to up; downstream are its downstream revisions before the run.
func variantCollisions(pv, was *configv1alpha1.PackageVariant, up *porchv1alpha1.PackageRevision, downstream []*porchv1alpha1.PackageRevision, blueprint *blueprintRevisions) ([]Collision, error) {
	from := up.Spec.Revision - 1
	if was != nil && was.Spec.Upstream != nil && was.Spec.Upstream.Revision != 0 {
		from = was.Spec.Upstream.Revision
	}
	old, err := blueprint.of(from)
	if err != nil || old == nil {
		return nil, err
	}
	next, err := blueprint.of(up.Spec.Revision)
	if err != nil || next == nil {
		return nil, err
	}
	return collisions(pv, downstream, *old, *next), nil
}

// revisionsByOwner indexes the revisions of st by the uid of each owner,
// in name order: a variant's downstream revisions, of any lifecycle (a
// variant whose draft was never published fills its injection points
// there). Built once per run, not once per variant.
func revisionsByOwner(st *State) map[types.UID][]*porchv1alpha1.PackageRevision {
	out := map[types.UID][]*porchv1alpha1.PackageRevision{}
	for _, k := range slices.Sorted(maps.Keys(st.Revisions)) {
		pr := st.Revisions[k]
		for _, ref := range pr.OwnerReferences {
			out[ref.UID] = append(out[ref.UID], pr)
		}
	}
	return out
}

// heldBack reports whether a preview holds a variant back for a later wave.
func heldBack(d *Diff) bool {
	for _, p := range d.Previews {
		if len(p.Later) > 0 {
			return true
		}
	}
	return false
}

// fillLater gives each variant held back in d the draft the run open, with
// every wave open, made for it (or the render failure it met there).
func fillLater(d, open *Diff) {
	revisions := map[string][]RevisionDiff{}
	for _, v := range open.Variants {
		revisions[v.Namespace+"/"+v.Name] = v.Revisions
	}
	for i := range d.Previews {
		if i >= len(open.Previews) {
			break
		}
		now, failed := map[string]PreviewVariant{}, map[string]PreviewVariant{}
		for _, v := range open.Previews[i].Now {
			now[v.Name] = v
		}
		for _, v := range open.Previews[i].RenderFailures {
			failed[v.Name] = v
		}
		for j := range d.Previews[i].Later {
			v := &d.Previews[i].Later[j]
			if o, ok := now[v.Name]; ok {
				v.Draft, v.Task = o.Draft, o.Task
				for _, r := range revisions[v.Name] {
					if r.Name == o.Draft {
						v.Revisions = append(v.Revisions, r)
					}
				}
			}
			if f, ok := failed[v.Name]; ok {
				v.Reason = "when its wave opens, its draft fails to render: " + f.Reason
				v.FailedFunctions = f.FailedFunctions
			}
		}
	}
}

// dropRollouts takes spec.rollout out of every set of the Sim.
func dropRollouts(ctx context.Context, sim *porchsim.Sim) error {
	sets := sim.Clientset().ConfigV1alpha2().PackageVariantSets("")
	list, err := sets.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		set := &list.Items[i]
		if set.Spec.Rollout == nil {
			continue
		}
		set.Spec.Rollout = nil
		if _, err := sim.Clientset().ConfigV1alpha2().PackageVariantSets(set.Namespace).Update(ctx, set, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("open every wave of PackageVariantSet %s/%s: %w", set.Namespace, set.Name, err)
		}
	}
	return nil
}

// outcome is where classify puts a variant.
type outcome int

const (
	outcomeNow outcome = iota
	outcomeLater
	outcomeNotAffected
	outcomeRenderFailure
)

type classified struct {
	outcome
	PreviewVariant
}

func (p *Preview) add(c classified) {
	switch c.outcome {
	case outcomeNow:
		p.Now = append(p.Now, c.PreviewVariant)
	case outcomeLater:
		p.Later = append(p.Later, c.PreviewVariant)
	case outcomeRenderFailure:
		p.RenderFailures = append(p.RenderFailures, c.PreviewVariant)
	default:
		p.NotAffected = append(p.NotAffected, c.PreviewVariant)
	}
}

// carriedRevision is the upstream revision the variant's downstream is
// based on: its latest Published revision's, else its open draft's (0:
// not known).
func carriedRevision(pv *configv1alpha1.PackageVariant, after *State) int {
	d := pv.Spec.Downstream
	if d == nil {
		return 0
	}
	var best *porchv1alpha1.PackageRevision
	for _, pr := range after.Revisions {
		if pr.Namespace != pv.Namespace || pr.Spec.RepositoryName != d.Repo || pr.Spec.PackageName != d.Package || helper.IsPlaceholder(pr) {
			continue
		}
		if _, ok := helper.LockedUpstreamRevision(pr); !ok {
			continue
		}
		if best == nil || (pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished && (best.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished || pr.Spec.Revision > best.Spec.Revision)) {
			best = pr
		}
	}
	if best == nil {
		return 0
	}
	rev, _ := helper.LockedUpstreamRevision(best)
	return rev
}

// classify tells what the run did to one variant that follows up's
// package: an upgrade draft to up (now), a render that failed, a rollout
// holding it back (later), a pin to another revision, or nothing else
// (not affected, with its Ready condition as the reason).
func classify(key string, pv *configv1alpha1.PackageVariant, up *porchv1alpha1.PackageRevision, after *State, vd VariantDiff, failedOf map[string][]string) classified {
	pv0 := PreviewVariant{Name: key, Set: setOf(pv, after)}
	for _, r := range vd.Revisions {
		if r.Action != RevisionCreated && r.Action != RevisionReplaced {
			continue
		}
		if madeFrom(after.Revisions[r.Namespace+"/"+r.Name], up) {
			pv0.Draft, pv0.Task = r.Name, r.Task
			break
		}
	}
	// A draft made from up whose edit by the variant (package context,
	// injection, pipeline) then failed to render is a render failure too.
	ready := meta.FindStatusCondition(pv.Status.Conditions, conditions.Ready)
	if ready != nil && ready.Reason == configv1alpha1.ReasonRenderFailed {
		pv0.Reason = ready.Message
		if d := pv.Spec.Downstream; d != nil {
			pv0.FailedFunctions = failedOf[pv.Namespace+"/"+d.Repo+"/"+d.Package]
		}
		return classified{outcomeRenderFailure, pv0}
	}
	if pv0.Draft != "" {
		return classified{outcomeNow, pv0}
	}
	pinned := pv.Spec.Upstream.Revision
	if set := after.Sets[pv.Namespace+"/"+pv0.Set]; set != nil && set.Spec.Rollout != nil && set.Spec.Upstream.Revision == 0 && pinned != up.Spec.Revision {
		pv0.Pinned = pinned
		if pinned == 0 { // it follows the latest revision, held on what it carries
			pv0.Pinned = carriedRevision(pv, after)
		}
		// The set labels each variant with its wave ("": none takes it).
		pv0.Wave = pv.Labels[configv1alpha2.WaveLabel]
		return classified{outcomeLater, pv0}
	}
	if pinned != 0 && pinned != up.Spec.Revision {
		pv0.Pinned = pinned
		return classified{outcomeNotAffected, pv0}
	}
	switch {
	case ready == nil:
		pv0.Reason = "no upgrade draft was made, and the variant reports no Ready condition"
	default:
		pv0.Reason = fmt.Sprintf("no upgrade draft was made; Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
	}
	return classified{outcomeNotAffected, pv0}
}

// failedByPackage indexes what failed in each failed render of the Sim by
// the package written (namespace/repository/package): the functions that
// failed and what they said, else the renderer's message, each once.
func failedByPackage(failed []porchsim.FailedRender) map[string][]string {
	out := map[string][]string{}
	for _, f := range failed {
		k := f.Namespace + "/" + f.Repository + "/" + f.Package
		said := f.Functions()
		if len(said) == 0 {
			said = []string{f.Message}
		}
		for _, s := range said {
			if !slices.Contains(out[k], s) {
				out[k] = append(out[k], s)
			}
		}
	}
	return out
}

// madeFrom reports whether a revision was made from up: an upgrade to it,
// or a clone of it (a variant whose downstream has nothing published yet
// gets its unpublished draft replaced by a clone of the new revision).
func madeFrom(pr, up *porchv1alpha1.PackageRevision) bool {
	if pr == nil || len(pr.Spec.Tasks) == 0 {
		return false
	}
	switch t := pr.Spec.Tasks[0]; {
	case t.Upgrade != nil:
		return t.Upgrade.NewUpstream.Name == up.Name
	case t.Clone != nil && t.Clone.Upstream.UpstreamRef != nil:
		return t.Clone.Upstream.UpstreamRef.Name == up.Name
	}
	return false
}

// Line counts a preview's outcomes, in one line.
func (p Preview) Line() string {
	return fmt.Sprintf("%s revision %d: %d variants upgraded now, %d later, %d not affected, %d failing to render, %d with collisions",
		p.Package, p.Revision, len(p.Now), len(p.Later), len(p.NotAffected), len(p.RenderFailures), p.WithCollisions)
}

// writeText prints a preview for people (the held-back variants' drafts
// with their files' diffs when files is set).
func (p Preview) writeText(b *strings.Builder, files bool) {
	fmt.Fprintf(b, "Publishing %s revision %d (namespace %s):\n", p.Package, p.Revision, p.Namespace)
	section := func(title string, vs []PreviewVariant, detail func(PreviewVariant) string) {
		if len(vs) == 0 {
			return
		}
		fmt.Fprintf(b, "  %s (%d):\n", title, len(vs))
		for _, v := range vs {
			owner := ""
			if v.Set != "" {
				owner = " (set " + v.Set + ")"
			}
			fmt.Fprintf(b, "    %s%s: %s\n", v.Name, owner, detail(v))
			for _, c := range v.Collisions {
				fmt.Fprintf(b, "      collision (%s %s): %s\n", c.Kind, c.Name, c.Message)
			}
			for _, r := range v.Revisions {
				writeRevision(b, r, files)
			}
		}
	}
	section("upgraded now", p.Now, func(v PreviewVariant) string {
		if v.Task == "clone" {
			return "draft " + v.Draft + ", a clone of the new revision in place of its unpublished draft"
		}
		return "upgrade draft " + v.Draft
	})
	section("later, held back by a rollout", p.Later, func(v PreviewVariant) string {
		on := fmt.Sprintf("revision %d", v.Pinned)
		if v.Pinned == 0 {
			on = "the revision it carries"
		}
		line := fmt.Sprintf("wave %q, stays on %s until its wave opens it", v.Wave, on)
		if v.Wave == "" {
			line = fmt.Sprintf("in no wave, stays on %s until a wave takes it", on)
		}
		switch {
		case len(v.FailedFunctions) > 0:
			line += "; when its wave opens, its draft fails to render: " + strings.Join(v.FailedFunctions, "; ")
		case v.Reason != "":
			line += "; " + v.Reason
		case v.Draft != "":
			line += fmt.Sprintf("; then gets draft %s (%s):", v.Draft, v.Task)
		}
		return line
	})
	section("not affected", p.NotAffected, func(v PreviewVariant) string {
		if v.Reason != "" {
			return v.Reason
		}
		return fmt.Sprintf("pinned to revision %d", v.Pinned)
	})
	section("failing to render", p.RenderFailures, func(v PreviewVariant) string {
		if len(v.FailedFunctions) == 0 {
			return v.Reason
		}
		line := strings.Join(v.FailedFunctions, "; ")
		if v.Draft != "" {
			line += " (in draft " + v.Draft + ", made from the new revision, once the variant's changes were written)"
		}
		return line
	})
	fmt.Fprintln(b, "  "+p.Line())
}
