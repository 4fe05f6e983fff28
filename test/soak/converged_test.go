package soak

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
)

// checkConverged checks the world once the controllers have settled.
func (w *world) checkConverged() {
	ctx := context.Background()
	m := w.mon
	pvs := w.sim.PackageVariants(ns)
	prs := w.sim.PackageRevisions(ns)
	sets, err := w.person.ConfigV1alpha2().PackageVariantSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		m.violate(nil, "list the sets: %v", err)
		return
	}
	repos, err := w.person.ConfigV1alpha1().Repositories(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		m.violate(nil, "list the repositories: %v", err)
		return
	}

	byOwner := map[types.UID][]*porchv1alpha1.PackageRevision{}
	byPackage := map[string][]*porchv1alpha1.PackageRevision{}
	for i := range prs {
		pr := &prs[i]
		if pr.Spec.RepositoryName == "blueprints" {
			continue
		}
		if helper.IsPlaceholder(pr) {
			w.placeholders[pr.Spec.RepositoryName+"/"+pr.Spec.PackageName] = true
			continue
		}
		uid, _ := controllerOf(pr)
		byOwner[uid] = append(byOwner[uid], pr)
		pkg := pr.Spec.RepositoryName + "/" + pr.Spec.PackageName
		byPackage[pkg] = append(byPackage[pkg], pr)
	}
	downstreams := map[string][]string{}
	for _, pv := range pvs {
		if pv.Spec.Downstream != nil {
			pkg := pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package
			downstreams[pkg] = append(downstreams[pkg], pv.Name)
		}
	}

	// Variants: nothing stuck, every condition true to the world.
	for i := range pvs {
		pv := &pvs[i]
		obj := "PackageVariant " + pv.Name
		if pv.DeletionTimestamp != nil {
			m.violate([]string{obj}, "PackageVariant %s is stuck deleting (finalizers %v)", pv.Name, pv.Finalizers)
			continue
		}
		ready := readyOf(pv.Status.Conditions)
		if ready == nil {
			m.violate([]string{obj}, "PackageVariant %s has no Ready condition", pv.Name)
			continue
		}
		if ready.ObservedGeneration != pv.Generation {
			m.violate([]string{obj}, "PackageVariant %s: Ready is of generation %d, the variant is at %d", pv.Name, ready.ObservedGeneration, pv.Generation)
		}
		w.checkVariant(pv, ready, byOwner[pv.UID], byPackage, downstreams)
	}

	// Sets: nothing stuck, counts equal to the truth.
	for i := range sets.Items {
		set := &sets.Items[i]
		obj := "PackageVariantSet " + set.Name
		if set.DeletionTimestamp != nil {
			m.violate([]string{obj}, "PackageVariantSet %s is stuck deleting", set.Name)
			continue
		}
		// The fleet set takes the env=prod sites, the rollout set those
		// labelled rollout=waves.
		desired := 0
		prod := map[string]bool{}
		for _, r := range repos.Items {
			selected := r.Labels["env"] == "prod"
			if set.Name == rolloutSetName {
				selected = r.Labels["rollout"] == rolloutSetName
			}
			if selected {
				desired++
				prod[r.Name] = true
			}
		}
		existing, readyN := 0, 0
		for j := range pvs {
			pv := &pvs[j]
			if uid, _ := controllerOf(pv); uid != set.UID {
				continue
			}
			existing++
			if r := readyOf(pv.Status.Conditions); r != nil && r.Status == metav1.ConditionTrue {
				readyN++
			}
			if !prod[pv.Spec.Downstream.Repo] {
				m.violate([]string{obj, "PackageVariant " + pv.Name}, "PackageVariant %s of the set targets %s, which the set does not select", pv.Name, pv.Spec.Downstream.Repo)
			}
			if set.Name == rolloutSetName && (pv.Spec.Upstream == nil || pv.Spec.Upstream.Revision != w.upstream) {
				m.violate([]string{obj, "PackageVariant " + pv.Name}, "PackageVariant %s of the rollout set is on upstream %+v once the rollout finished, not revision %d", pv.Name, pv.Spec.Upstream, w.upstream)
			}
		}
		st := set.Status
		if int(st.DesiredVariants) != desired || int(st.ExistingVariants) != existing || int(st.ReadyVariants) != readyN {
			m.violate([]string{obj}, "PackageVariantSet %s counts desired/existing/ready %d/%d/%d, the world has %d/%d/%d",
				set.Name, st.DesiredVariants, st.ExistingVariants, st.ReadyVariants, desired, existing, readyN)
		}
		if set.Name == rolloutSetName {
			c := meta.FindStatusCondition(set.Status.Conditions, rollout.ConditionRolledOut)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != set.Generation || set.Status.Rollout == nil || set.Status.Rollout.UpstreamRevision != w.upstream {
				m.violate([]string{obj}, "PackageVariantSet %s has not rolled out upstream revision %d: RolledOut %+v, status.rollout %+v", set.Name, w.upstream, c, set.Status.Rollout)
			}
		}
		if r := readyOf(set.Status.Conditions); r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != set.Generation {
			m.violate([]string{obj}, "PackageVariantSet %s is not Ready for its generation %d: %+v", set.Name, set.Generation, r)
		}
	}

	// People's edits are where they were made.
	m.mu.Lock()
	edits := map[string]map[string]string{}
	for pr, files := range m.edits {
		edits[pr] = files
	}
	m.mu.Unlock()
	for pr, files := range edits {
		got, err := w.sim.Resources(ns, pr)
		if err != nil {
			continue // deleted: the monitor judged that when it happened
		}
		for file := range files {
			// The package's pipeline renders a person's files too (a
			// prepended set-namespace sets their namespace): the edit is
			// kept when its file still says who made it.
			if !strings.Contains(got[file], editMark) {
				m.violate([]string{"PackageRevision " + pr}, "%s lost a person's edit: %s is %q", pr, file, got[file])
			}
		}
	}

	// No replacement is left half-way: a stale draft the controller
	// proposed on its way to deleting it is gone, or back to a Draft
	// without the mark.
	for i := range prs {
		pr := &prs[i]
		if _, marked := pr.Annotations[configv1alpha1.ReplacingAnnotation]; marked && (pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed) {
			m.violate([]string{"PackageRevision " + pr.Name}, "%s is %s with the replacement mark after faults stopped", pr.Name, pr.Spec.Lifecycle)
		}
	}

	// Injection reads the variant's namespace only.
	for i := range prs {
		pr := &prs[i]
		files, err := w.sim.Resources(ns, pr.Name)
		if err != nil {
			continue
		}
		for name, content := range files {
			if strings.Contains(content, decoyColor) {
				m.violate([]string{"PackageRevision " + pr.Name}, "%s: %s holds the decoy ConfigMap of namespace %s", pr.Name, name, decoyNS)
			}
		}
	}
}

// checkVariant holds a settled variant's Ready condition against its
// revisions.
func (w *world) checkVariant(pv *configv1alpha1.PackageVariant, ready *metav1.Condition, owned []*porchv1alpha1.PackageRevision,
	byPackage map[string][]*porchv1alpha1.PackageRevision, downstreams map[string][]string) {
	m := w.mon
	obj := "PackageVariant " + pv.Name
	want := w.upstream
	if pv.Spec.Upstream.Revision > 0 {
		want = pv.Spec.Upstream.Revision
	}
	pkg := pv.Spec.Downstream.Repo + "/" + pv.Spec.Downstream.Package
	var drafts, proposed, published, deletionProposed []*porchv1alpha1.PackageRevision
	for _, pr := range owned {
		if pr.Spec.RepositoryName+"/"+pr.Spec.PackageName != pkg {
			m.violate([]string{obj, "PackageRevision " + pr.Name}, "PackageVariant %s still owns %s outside its downstream %s", pv.Name, pr.Name, pkg)
			continue
		}
		switch pr.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft:
			drafts = append(drafts, pr)
		case porchv1alpha1.PackageRevisionLifecycleProposed:
			proposed = append(proposed, pr)
		case porchv1alpha1.PackageRevisionLifecyclePublished:
			published = append(published, pr)
		case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
			deletionProposed = append(deletionProposed, pr)
		}
	}
	edited := func(pr *porchv1alpha1.PackageRevision) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.edits[pr.Name]) > 0
	}
	describe := fmt.Sprintf("Ready=%s reason %s: %q", ready.Status, ready.Reason, ready.Message)
	if ready.Status == metav1.ConditionTrue {
		if len(drafts)+len(proposed)+len(published) == 0 {
			m.violate([]string{obj}, "PackageVariant %s is %s but owns no Draft, Proposed or Published revision of %s", pv.Name, describe, pkg)
		}
		for _, d := range drafts {
			if rev, ok := helper.LockedUpstreamRevision(d); ok && rev != want && !edited(d) {
				m.violate([]string{obj, "PackageRevision " + d.Name}, "PackageVariant %s is %s but its unedited draft %s is based on upstream revision %d, not %d", pv.Name, describe, d.Name, rev, want)
			}
		}
		if len(drafts)+len(proposed) == 0 && len(published) > 0 {
			newest := published[0]
			for _, p := range published {
				if p.Spec.Revision > newest.Spec.Revision {
					newest = p
				}
			}
			if rev, ok := helper.LockedUpstreamRevision(newest); ok && rev != want {
				m.violate([]string{obj, "PackageRevision " + newest.Name}, "PackageVariant %s is %s but its newest revision %s is based on upstream revision %d, not %d, and there is no upgrade draft", pv.Name, describe, newest.Name, rev, want)
			}
		}
		return
	}
	switch ready.Reason {
	case "DraftEdited":
		for _, d := range drafts {
			if edited(d) {
				return
			}
		}
		objs := []string{obj}
		for _, d := range drafts {
			objs = append(objs, "PackageRevision "+d.Name)
		}
		m.violate(objs, "PackageVariant %s is %s, but no person edited its drafts", pv.Name, describe)
	case "DraftUnverified":
		if len(drafts) == 0 {
			m.violate([]string{obj}, "PackageVariant %s is %s, but it has no Draft revision", pv.Name, describe)
		}
		w.counts.unverified++
	case "WaitingForApproval":
		if len(proposed) == 0 {
			m.violate([]string{obj}, "PackageVariant %s is %s, but it has no Proposed revision", pv.Name, describe)
		}
	case "DeletionProposed":
		if len(deletionProposed) == 0 || len(drafts)+len(proposed)+len(published) > 0 {
			m.violate([]string{obj}, "PackageVariant %s is %s, but its revisions are %d Draft, %d Proposed, %d Published, %d DeletionProposed",
				pv.Name, describe, len(drafts), len(proposed), len(published), len(deletionProposed))
		}
	case "Refused":
		if len(byPackage[pkg]) > 0 || !w.placeholders[pkg] || !strings.Contains(ready.Message, "cannot create a new revision") {
			m.violate([]string{obj}, "PackageVariant %s is %s, but its package %s has %d revisions besides its placeholder (placeholder: %t)", pv.Name, describe, pkg, len(byPackage[pkg]), w.placeholders[pkg])
		}
	case "OtherDraftOpen":
		for _, pr := range byPackage[pkg] {
			open := pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed
			if uid, _ := controllerOf(pr); open && uid != pv.UID {
				return
			}
		}
		m.violate([]string{obj}, "PackageVariant %s is %s, but no other owner's Draft or Proposed revision of %s exists", pv.Name, describe, pkg)
	case "Conflict":
		if len(downstreams[pkg]) < 2 {
			m.violate([]string{obj}, "PackageVariant %s is %s, but no other variant targets %s", pv.Name, describe, pkg)
		}
	case "Error":
		if strings.Contains(ready.Message, "already exists") && strings.Contains(ready.Message, "not managed by this variant") {
			for _, pr := range byPackage[pkg] {
				if uid, _ := controllerOf(pr); uid != pv.UID {
					return
				}
			}
		}
		m.violate([]string{obj}, "PackageVariant %s is %s after faults stopped", pv.Name, describe)
	default:
		m.violate([]string{obj}, "PackageVariant %s is %s after faults stopped", pv.Name, describe)
	}
}
