package helper

import (
	"encoding/json"
	"fmt"
	"strings"

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

// lastAppliedAnnotation is where kubectl apply keeps the whole object it
// applied (a Secret's data included).
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// SerialisesObject reports whether annotation k=v holds a whole object:
// kubectl's last-applied-configuration, or any value that is a JSON object
// with apiVersion and kind. Such an annotation is never read (CEL does not
// see it, the caches of injected kinds do not keep it): it would let the
// author of a set copy the rest of an object, the very data that is kept
// from expressions.
func SerialisesObject(k, v string) bool {
	if k == lastAppliedAnnotation {
		return true
	}
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") {
		return false
	}
	var fields struct {
		APIVersion *json.RawMessage `json:"apiVersion"`
		Kind       *json.RawMessage `json:"kind"`
	}
	return json.Unmarshal([]byte(v), &fields) == nil && fields.APIVersion != nil && fields.Kind != nil
}

// VisibleAnnotations is m without the annotations that serialise an
// object; m itself when it holds none (nil stays nil).
func VisibleAnnotations(m map[string]string) map[string]string {
	hidden := 0
	for k, v := range m {
		if SerialisesObject(k, v) {
			hidden++
		}
	}
	if hidden == 0 {
		return m
	}
	out := make(map[string]string, len(m)-hidden)
	for k, v := range m {
		if !SerialisesObject(k, v) {
			out[k] = v
		}
	}
	return out
}
