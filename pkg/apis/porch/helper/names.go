package helper

import (
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// uidSpace is the UUID namespace Porch derives object UIDs in.
var uidSpace = uuid.MustParse("aac71d91-5c67-456f-8fd2-902ef6da820e")

// PackageRevisionUID is the UID Porch gives a PackageRevision (and its
// PackageRevisionResources): a name-based (SHA-1) UUID of its namespace and
// name. A revision deleted and created again under the same name has the
// same UID, so a UID never tells two incarnations apart.
func PackageRevisionUID(namespace, name string) types.UID {
	id := "packagerevision:porch.kpt.dev/v1alpha1/" + strings.ToLower(namespace) + "/" + strings.ToLower(name)
	return types.UID(uuid.NewSHA1(uidSpace, []byte(id)).String())
}

// PackageKey is "<namespace>/<repository>/<package>": one package of one
// repository, the key the controllers index revisions, variants and sets by
// and variantctl groups revisions by.
func PackageKey(namespace, repo, pkg string) string {
	return namespace + "/" + repo + "/" + pkg
}

// PackageKeyOf is the PackageKey of a revision's package.
func PackageKeyOf(pr *porchv1alpha1.PackageRevision) string {
	return PackageKey(pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName)
}
