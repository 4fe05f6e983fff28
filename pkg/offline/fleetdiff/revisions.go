package fleetdiff

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	confighelper "github.com/porch-variants/variant-controller/pkg/apis/config/helper"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// revisionChange is a RevisionDiff and the uid of the variant that owns
// the revision (after, else before).
type revisionChange struct {
	RevisionDiff
	owner types.UID
}

// ownerOf is the variant a revision belongs to: the one that controls it
// (confighelper.ControllingVariant), else one that still names it.
func ownerOf(pr *porchv1alpha1.PackageRevision) types.UID {
	if ref := confighelper.ControllingVariant(pr); ref != nil {
		return ref.UID
	}
	for _, ref := range pr.OwnerReferences {
		if confighelper.IsVariantRef(ref) {
			return ref.UID
		}
	}
	return ""
}

func newRevisionDiff(pr *porchv1alpha1.PackageRevision, action string) RevisionDiff {
	return RevisionDiff{
		Namespace: pr.Namespace, Name: pr.Name,
		Repository: pr.Spec.RepositoryName, Package: pr.Spec.PackageName, Workspace: string(pr.Spec.WorkspaceName),
		Action: action, Lifecycle: string(pr.Spec.Lifecycle), Revision: int(pr.Spec.Revision),
	}
}

// describe names a revision for ComparedWith: "<name> (<lifecycle>[ <revision>])".
func describe(pr *porchv1alpha1.PackageRevision) string {
	if helper.IsPublished(pr) {
		return fmt.Sprintf("%s (%s %d)", pr.Name, pr.Spec.Lifecycle, pr.Spec.Revision)
	}
	return fmt.Sprintf("%s (%s)", pr.Name, pr.Spec.Lifecycle)
}

// revisionComparison compares the revisions of two states.
type revisionComparison struct {
	before, after *State
	files         FileReader
	showInjected  bool
	// deletedDrafts are the drafts deleted, by package, to pair with a
	// draft made in their place.
	deletedDrafts map[string][]*porchv1alpha1.PackageRevision
	// replaced are the drafts ("namespace/name") a new draft replaced.
	replaced map[string]bool
}

func compareRevisions(before, after *State, files FileReader, showInjected bool) ([]revisionChange, error) {
	c := &revisionComparison{before: before, after: after, files: files, showInjected: showInjected,
		deletedDrafts: map[string][]*porchv1alpha1.PackageRevision{}, replaced: map[string]bool{}}
	for k, b := range before.Revisions {
		if _, ok := after.Revisions[k]; !ok && !helper.IsPublished(b) && !helper.IsPlaceholder(b) {
			c.deletedDrafts[helper.PackageKeyOf(b)] = append(c.deletedDrafts[helper.PackageKeyOf(b)], b)
		}
	}
	var out []revisionChange
	for _, k := range unionKeys(before.Revisions, after.Revisions) {
		b, a := before.Revisions[k], after.Revisions[k]
		var rc *revisionChange
		var err error
		switch {
		case b == nil:
			if helper.IsPlaceholder(a) {
				continue // Porch's own bookkeeping of a first publish
			}
			rc, err = c.created(a)
		case a == nil:
			if helper.IsPlaceholder(b) {
				continue
			}
			rc = &revisionChange{newRevisionDiff(b, RevisionDeleted), ownerOf(b)}
		default:
			rc, err = c.changed(b, a)
		}
		if err != nil {
			return nil, err
		}
		if rc != nil {
			out = append(out, *rc)
		}
	}
	// Deleted drafts that a new draft replaced are shown on the new one.
	kept := out[:0]
	for _, r := range out {
		if r.Action == RevisionDeleted && c.replaced[r.Namespace+"/"+r.Name] {
			continue
		}
		if r.Replaces != "" {
			r.Action = RevisionReplaced
		}
		kept = append(kept, r)
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if kept[i].Repository+"/"+kept[i].Package != kept[j].Repository+"/"+kept[j].Package {
			return kept[i].Repository+"/"+kept[i].Package < kept[j].Repository+"/"+kept[j].Package
		}
		return kept[i].Name < kept[j].Name
	})
	return kept, nil
}

// created is a revision the run made, its files compared with what it
// replaces or starts from (baseOf).
func (c *revisionComparison) created(a *porchv1alpha1.PackageRevision) (*revisionChange, error) {
	rd := newRevisionDiff(a, RevisionCreated)
	if len(a.Spec.Tasks) > 0 {
		rd.Task = string(a.Spec.Tasks[0].Type)
	}
	base, baseFiles, err := baseOf(a, c.before, c.deletedDrafts[helper.PackageKeyOf(a)], c.files)
	if err != nil {
		return nil, err
	}
	if base != nil {
		rd.ComparedWith = describe(base)
		key := base.Namespace + "/" + base.Name
		if c.before.Revisions[key] != nil && c.after.Revisions[key] == nil && !helper.IsPublished(base) {
			rd.Replaces = base.Name
			c.replaced[key] = true
		}
	}
	afterFiles, err := c.files.After(a.Namespace, a.Name)
	if err != nil {
		return nil, err
	}
	rd.Diff = filesDiff(baseLabel(base, a), a.Spec.RepositoryName+"/"+a.Spec.PackageName, baseFiles, afterFiles, c.showInjected)
	rd.Files = afterFiles
	rd.Blocking = blocking(a)
	return &revisionChange{rd, ownerOf(a)}, nil
}

// changed is a revision both states hold: nil when nothing a person reads
// of it changed.
func (c *revisionComparison) changed(b, a *porchv1alpha1.PackageRevision) (*revisionChange, error) {
	if b.ResourceVersion == a.ResourceVersion {
		return nil, nil
	}
	rd := newRevisionDiff(a, RevisionChanged)
	if b.Spec.Lifecycle != a.Spec.Lifecycle {
		rd.Changed = append(rd.Changed, "lifecycle")
		rd.LifecycleBefore = string(b.Spec.Lifecycle)
		if a.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDeletionProposed {
			rd.Action = RevisionProposedForDeletion
		}
	}
	if ownerOf(a) != ownerOf(b) {
		rd.Changed = append(rd.Changed, "owner")
	}
	if !equality.Semantic.DeepEqual(a.Labels, b.Labels) {
		rd.Changed = append(rd.Changed, "labels")
	}
	if !equality.Semantic.DeepEqual(a.Annotations, b.Annotations) {
		rd.Changed = append(rd.Changed, "annotations")
	}
	// A published revision's files cannot change; a draft's may (the
	// controller edits its own draft in place).
	if !helper.IsPublished(b) && !helper.IsPlaceholder(a) {
		bf, err := c.files.Before(b.Namespace, b.Name)
		if err != nil {
			return nil, err
		}
		af, err := c.files.After(a.Namespace, a.Name)
		if err != nil {
			return nil, err
		}
		name := a.Spec.RepositoryName + "/" + a.Spec.PackageName
		if diff := filesDiff(name, name, bf, af, c.showInjected); diff != "" {
			rd.Changed = append(rd.Changed, "files")
			rd.ComparedWith = describe(b)
			rd.Diff, rd.Files = diff, af
		}
	}
	if len(rd.Changed) == 0 || helper.IsPlaceholder(a) {
		return nil, nil
	}
	rd.Blocking = blocking(a)
	owner := ownerOf(a)
	if owner == "" {
		owner = ownerOf(b)
	}
	return &revisionChange{rd, owner}, nil
}

// baseOf is what a new revision's files are compared with: the draft it
// replaced, else its package's latest Published revision (what the
// package holds now), else the upstream revision it was cloned from.
func baseOf(pr *porchv1alpha1.PackageRevision, before *State, deletedDrafts []*porchv1alpha1.PackageRevision, files FileReader) (*porchv1alpha1.PackageRevision, map[string]string, error) {
	var base *porchv1alpha1.PackageRevision
	if len(deletedDrafts) > 0 {
		sort.Slice(deletedDrafts, func(i, j int) bool { return deletedDrafts[i].Name < deletedDrafts[j].Name })
		base = deletedDrafts[0]
	}
	if base == nil {
		var latest *porchv1alpha1.PackageRevision
		for _, b := range before.Revisions {
			if helper.PackageKeyOf(b) == helper.PackageKeyOf(pr) && helper.IsPublished(b) && !helper.IsPlaceholder(b) &&
				(latest == nil || b.Spec.Revision > latest.Spec.Revision) {
				latest = b
			}
		}
		base = latest
	}
	if base == nil && len(pr.Spec.Tasks) > 0 {
		if c := pr.Spec.Tasks[0].Clone; c != nil && c.Upstream.UpstreamRef != nil {
			base = before.Revisions[pr.Namespace+"/"+c.Upstream.UpstreamRef.Name]
		}
	}
	if base == nil {
		return nil, nil, nil
	}
	f, err := files.Before(base.Namespace, base.Name)
	if err != nil {
		return nil, nil, err
	}
	return base, f, nil
}

// blocking lists the readiness gates of a revision whose conditions are
// not True.
func blocking(pr *porchv1alpha1.PackageRevision) []GateCondition {
	var out []GateCondition
	for _, g := range pr.Spec.ReadinessGates {
		c := GateCondition{Type: g.ConditionType, Condition: Condition{Status: "Unknown", Reason: "NotReported"}}
		found := false
		for _, cond := range pr.Status.Conditions {
			if cond.Type == g.ConditionType {
				c.Condition = Condition{Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message}
				found = true
			}
		}
		if !found || c.Status != "True" {
			out = append(out, c)
		}
	}
	return out
}

func baseLabel(base, pr *porchv1alpha1.PackageRevision) string {
	if base == nil {
		return "/dev/null"
	}
	return base.Spec.RepositoryName + "/" + base.Spec.PackageName
}
