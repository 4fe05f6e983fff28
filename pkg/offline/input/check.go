package input

import (
	"fmt"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// nameRule is how the API server validates the name of one kind, and
// whether the object may come without one.
type nameRule struct {
	valid    apimachineryvalidation.ValidateNameFunc
	optional bool
}

var (
	// customResourceName is the rule for every custom resource.
	customResourceName = nameRule{valid: apimachineryvalidation.NameIsDNSSubdomain}
	// packageRevisionName: Porch derives a missing name from the
	// repository, package and workspace.
	packageRevisionName = nameRule{valid: apimachineryvalidation.NameIsDNSSubdomain, optional: true}
	// anyKindName is what the API server requires of every kind; most
	// kinds (ConfigMaps, custom resources) also require a DNS subdomain.
	anyKindName = nameRule{valid: path.ValidatePathSegmentName}
)

// checkMetadata validates an object's metadata as the API server does on
// create (name, generateName, namespace, labels, annotations) and refuses
// an object given twice. A namespace may be left out: the run defaults it.
func (in *Input) checkMetadata(src Source, group, kind string, obj metav1.Object, rule nameRule) Errors {
	meta := field.NewPath("metadata")
	var errs field.ErrorList
	switch name, generate := obj.GetName(), obj.GetGenerateName(); {
	case name != "":
		for _, msg := range rule.valid(name, false) {
			errs = append(errs, field.Invalid(meta.Child("name"), name, msg))
		}
	case generate != "":
		for _, msg := range rule.valid(generate, true) {
			errs = append(errs, field.Invalid(meta.Child("generateName"), generate, msg))
		}
	case !rule.optional:
		errs = append(errs, field.Required(meta.Child("name"), "name or generateName is required"))
	}
	if ns := obj.GetNamespace(); ns != "" {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), ns, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(obj.GetLabels(), meta.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(obj.GetAnnotations(), meta.Child("annotations"))...)
	if len(errs) == 0 && obj.GetName() != "" {
		key := objectKey{group: group, kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()}
		if prev, ok := in.seen[key]; ok {
			dup := field.Duplicate(meta.Child("name"), obj.GetName())
			dup.Detail = fmt.Sprintf("a %s of that name is also given in %s", kind, prev)
			errs = append(errs, dup)
		} else {
			in.seen[key] = src
		}
	}
	if len(errs) == 0 {
		return nil
	}
	object := kind + " " + displayName(obj.GetNamespace(), obj.GetName())
	out := make(Errors, len(errs))
	for i, e := range errs {
		out[i] = &Error{Source: src, Object: object, Msg: e.Error()}
	}
	return out
}

// displayName is namespace/name, or name, as kubectl shows it; an object
// without a name shows that it has none.
func displayName(ns, name string) string {
	if name == "" {
		name = "(no name)"
	}
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// nameOf reads namespace/name (or name) from an object's JSON.
func nameOf(js []byte) string {
	var m struct {
		metav1.ObjectMeta `json:"metadata"`
	}
	_ = yaml.Unmarshal(js, &m)
	if m.Namespace != "" {
		return m.Namespace + "/" + m.Name
	}
	return m.Name
}

// cleanDecodeError drops the decoder's layers of prefixes.
func cleanDecodeError(err error) string {
	msg := err.Error()
	for _, prefix := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	return msg
}
