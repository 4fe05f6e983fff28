// Package prindex is the one index both controllers use on the shared
// PackageRevision informer: revisions by package. Registered once, however
// many controllers ask for it, so the fleet's revisions carry one index key
// each, not one per controller.
package prindex

import (
	"fmt"
	"sort"

	"k8s.io/client-go/tools/cache"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// ByPackage keys a revision by helper.PackageKeyOf its package.
const ByPackage = "byPackage"

func byPackage(obj any) ([]string, error) {
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok {
		return nil, nil
	}
	return []string{helper.PackageKeyOf(pr)}, nil
}

// Register adds ByPackage to a PackageRevision informer unless it has it.
// Call it before the informer starts (client-go refuses new indexers
// afterwards), from one goroutine.
func Register(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[ByPackage]; ok {
		return nil
	}
	if err := informer.AddIndexers(cache.Indexers{ByPackage: byPackage}); err != nil {
		return fmt.Errorf("add the PackageRevision index %s: %w", ByPackage, err)
	}
	return nil
}

// Revisions lists the cached revisions of one package, sorted by name.
func Revisions(indexer cache.Indexer, namespace, repo, pkg string) []*porchv1alpha1.PackageRevision {
	objs, err := indexer.ByIndex(ByPackage, helper.PackageKey(namespace, repo, pkg))
	if err != nil {
		return nil
	}
	out := make([]*porchv1alpha1.PackageRevision, 0, len(objs))
	for _, o := range objs {
		if pr, ok := o.(*porchv1alpha1.PackageRevision); ok {
			out = append(out, pr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
