package porchsim

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// Resources served by the Sim.
const (
	resPackageRevisions         = "packagerevisions"
	resPackageRevisionResources = "packagerevisionresources"
	resPackageVariants          = "packagevariants"
	resPackageVariantSets       = "packagevariantsets"
	resRepositories             = "repositories"
)

var (
	packageRevisionKind = func() *store.Kind {
		k := store.ObjectKind(porchv1alpha1.SchemeGroupVersion, resPackageRevisions, "PackageRevision",
			func() runtime.Object { return &porchv1alpha1.PackageRevision{} },
			func() runtime.Object { return &porchv1alpha1.PackageRevisionList{} })
		k.Fields = func(o runtime.Object) fields.Set {
			pr := o.(*porchv1alpha1.PackageRevision)
			return packageRevisionFields(&pr.ObjectMeta, pr.Spec.RepositoryName, pr.Spec.PackageName,
				string(pr.Spec.WorkspaceName), pr.Spec.Revision, pr.Spec.Lifecycle)
		}
		k.FieldLabels = packageRevisionFieldLabels
		// Porch's lists carry no resourceVersion, and its resourceVersions
		// are commit SHAs.
		k.ListVersions = false
		k.OpaqueVersion = func(seq int64) string {
			return fakeCommit("porchsim-change", strconv.FormatInt(seq, 10))
		}
		// Porch leaves a PackageRevision's generation at 0.
		k.NoGeneration = true
		// A revision deleted and made again has the same UID: a UID
		// precondition protects nothing.
		k.UID = helper.PackageRevisionUID
		// Porch replays every object as ADDED on every watch.
		k.ReplaysWatches = true
		// The revisions of a package, for Porch's per-package rules.
		k.Group = func(o runtime.Object) any {
			pr := o.(*porchv1alpha1.PackageRevision)
			return packageKey{pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName}
		}
		return k
	}()
	packageVariantKind = store.ObjectKind(configv1alpha1.SchemeGroupVersion, resPackageVariants, "PackageVariant",
		func() runtime.Object { return &configv1alpha1.PackageVariant{} },
		func() runtime.Object { return &configv1alpha1.PackageVariantList{} })
	packageVariantSetKind = store.ObjectKind(configv1alpha2.SchemeGroupVersion, resPackageVariantSets, "PackageVariantSet",
		func() runtime.Object { return &configv1alpha2.PackageVariantSet{} },
		func() runtime.Object { return &configv1alpha2.PackageVariantSetList{} })
	repositoryKind = store.ObjectKind(configv1alpha1.SchemeGroupVersion, resRepositories, "Repository",
		func() runtime.Object { return &configv1alpha1.Repository{} },
		func() runtime.Object { return &configv1alpha1.RepositoryList{} })

	// kinds are the stored resources, in the order garbage collection
	// visits them (see store.New).
	kinds = []*store.Kind{packageVariantSetKind, packageVariantKind, packageRevisionKind, repositoryKind}
)

// packageRevisionFieldLabels are the field selectors Porch supports on
// PackageRevisions (and PackageRevisionResources).
var packageRevisionFieldLabels = []string{
	"metadata.name", "metadata.namespace", "spec.revision", "spec.packageName",
	"spec.repository", "spec.workspaceName", "spec.lifecycle",
}

func packageRevisionFields(m *metav1.ObjectMeta, repo, pkg, workspace string, revision int,
	lifecycle porchv1alpha1.PackageRevisionLifecycle) fields.Set {
	return fields.Set{
		"metadata.name":      m.Name,
		"metadata.namespace": m.Namespace,
		"spec.revision":      strconv.Itoa(revision),
		"spec.packageName":   pkg,
		"spec.repository":    repo,
		"spec.workspaceName": workspace,
		"spec.lifecycle":     string(lifecycle),
	}
}

// packageKey identifies a package: the revisions of one package share the
// namespace, the repository and the package name. It is the group
// (store.Kind.Group) of a PackageRevision.
type packageKey struct {
	namespace, repository, pkg string
}
