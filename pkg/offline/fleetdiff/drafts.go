package fleetdiff

import (
	"path/filepath"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
)

// WriteDrafts writes the files of each draft the change makes or edits,
// and of each draft a variant held back by a rollout gets when its wave
// opens (Preview.Later), to dir/<namespace>/<repository>/<package>/<workspace>/
// (each such directory replaced), as the drafts hold them: injected values
// unmasked. It returns the directories written, in the order of the diff.
func (d *Diff) WriteDrafts(dir string) ([]string, error) {
	var all []RevisionDiff
	for _, v := range d.Variants {
		all = append(all, v.Revisions...)
	}
	all = append(all, d.OtherRevisions...)
	for _, p := range d.Previews {
		for _, v := range p.Later {
			all = append(all, v.Revisions...)
		}
	}
	var written []string
	seen := map[string]bool{}
	for _, r := range all {
		if r.Files == nil || r.Lifecycle != string(porchv1alpha1.PackageRevisionLifecycleDraft) || seen[r.Namespace+"/"+r.Name] {
			continue
		}
		seen[r.Namespace+"/"+r.Name] = true
		target := offline.DraftDir(filepath.Join(dir, r.Namespace), r.Repository, r.Package, r.Workspace)
		if err := offline.WritePackage(target, r.Files); err != nil {
			return written, err
		}
		written = append(written, target)
	}
	return written, nil
}
