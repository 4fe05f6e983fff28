package packagevariant

import (
	"slices"
	"sort"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/prindex"
)

// state is what one sync knows about a variant's packages.
type state struct {
	pv       *configv1alpha1.PackageVariant
	upstream *porchv1alpha1.PackageRevision
	upRevs   []*porchv1alpha1.PackageRevision
	dsRevs   []*porchv1alpha1.PackageRevision

	// The variant's own revisions of the downstream package.
	drafts, proposed []*porchv1alpha1.PackageRevision
	published        *porchv1alpha1.PackageRevision // latest
	deletionProposed *porchv1alpha1.PackageRevision // latest
	// Revisions of the package the variant does not own (placeholder excluded).
	foreign []*porchv1alpha1.PackageRevision

	// gone are the revisions of dsRevs the claim step deleted.
	gone []string

	created  *porchv1alpha1.PackageRevision
	rendered map[string]porchv1alpha1.RenderStatus
	// applied is the record of what the controller's writes left in the
	// downstream: the stored status.applied, then each write of the sync
	// (recordCreated, recordApplied). calculateStatus stores it.
	applied *configv1alpha1.AppliedState
	// rolloutSet is the PackageVariantSet that owns the variant and rolls
	// its changes out in waves ("": none; see hold.go).
	rolloutSet string
}

// classify sorts the variant's downstream revisions, as the claim step left
// them, by what they are to the variant. It reads and writes nothing.
func (st *state) classify() {
	st.drafts, st.proposed, st.published, st.deletionProposed, st.foreign = nil, nil, nil, nil, nil
	for _, pr := range st.dsRevs {
		if helper.IsPlaceholder(pr) || slices.Contains(st.gone, pr.Name) {
			continue
		}
		if controllerUID(pr) != st.pv.UID {
			st.foreign = append(st.foreign, pr)
			continue
		}
		switch pr.Spec.Lifecycle {
		case porchv1alpha1.PackageRevisionLifecycleDraft, "":
			st.drafts = append(st.drafts, pr)
		case porchv1alpha1.PackageRevisionLifecycleProposed:
			st.proposed = append(st.proposed, pr)
		case porchv1alpha1.PackageRevisionLifecyclePublished:
			if st.published == nil || pr.Spec.Revision > st.published.Spec.Revision {
				st.published = pr
			}
		case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
			if st.deletionProposed == nil || pr.Spec.Revision > st.deletionProposed.Spec.Revision {
				st.deletionProposed = pr
			}
		}
	}
	sort.Slice(st.drafts, func(i, j int) bool { return st.drafts[i].Name < st.drafts[j].Name })
}

// wouldUpgrade reports whether one of the variant's own revisions is based
// on another upstream revision than the one selected.
func (st *state) wouldUpgrade() bool {
	return slices.ContainsFunc(st.targets(), func(pr *porchv1alpha1.PackageRevision) bool { return needsUpgrade(pr, st.upstream) })
}

func (st *state) targets() []*porchv1alpha1.PackageRevision {
	out := append([]*porchv1alpha1.PackageRevision{}, st.drafts...)
	out = append(out, st.proposed...)
	if st.created != nil {
		out = append(out, st.created)
	}
	if len(out) == 0 && st.published != nil {
		out = append(out, st.published)
	}
	return out
}

// packageRevisions lists the revisions of one package from the cache.
func (c *Controller) packageRevisions(namespace, repo, pkg string) []*porchv1alpha1.PackageRevision {
	return prindex.Revisions(c.prIndexer, namespace, repo, pkg)
}
