package helper

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NeverRead says why objects of kind gk are never read by the controllers,
// neither injected into a package nor selected by a set ("" when they may
// be): a package is stored in git, which its readers often may read though
// they may not read the object. Secrets hold credentials: they stay out,
// whatever RBAC grants.
func NeverRead(gk schema.GroupKind) string {
	if gk.Group == "" && gk.Kind == "Secret" {
		return fmt.Sprintf("%s objects are never injected or selected: a package is stored in git, where its readers would see the credentials; use a ConfigMap (or another kind) for what may be copied into packages", gk.Kind)
	}
	return ""
}
