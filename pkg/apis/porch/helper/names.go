package helper

import (
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
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
