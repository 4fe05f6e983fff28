package mutate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// In-package annotations of config injection (Porch wire contract).
const (
	// ConfigInjectionAnnotation marks an injection point; its value is
	// "required" or "optional".
	ConfigInjectionAnnotation = "kpt.dev/config-injection"
	// InjectedResourceAnnotation records the name of the in-cluster object
	// injected into the resource, so a person can see where its content came
	// from. (The design document calls it kpt.dev/injected-resource-name; the
	// deployed reference writes this one.)
	InjectedResourceAnnotation = "kpt.dev/injected-resource"
)

// Condition reasons of the injection conditions, as the reference writes
// them, so that tooling written against it keeps working.
const (
	// ReasonConfigInjected means an in-cluster object was injected.
	ReasonConfigInjected = "ConfigInjected"
	// ReasonNoResourceSelected means nothing was injected; the message says why.
	ReasonNoResourceSelected = "NoResourceSelected"
)

const (
	injectionRequired = "required"
	injectionOptional = "optional"
)

// maxListed bounds the names listed in a condition message.
const maxListed = 3

// point is an injection point with the node it came from.
type point struct {
	InjectionPoint
	obj object
}

// ConditionType is the Kptfile condition type of the injection point of the
// given kind and in-package name. Kind and name identify a point because the
// package author controls both.
func ConditionType(kind, name string) string {
	return strings.Join([]string{"config", "injection", kind, name}, ".")
}

// FindInjectionPoints lists the injection points of a package, sorted by
// ConditionType. The controller uses it to know which kinds to watch. An
// invalid annotation value, or two points with the same condition type, is
// an error: the package author must fix the package, and guessing would
// inject into the wrong resource.
func FindInjectionPoints(files map[string]string) ([]InjectionPoint, error) {
	p, err := parsePackage(files)
	if err != nil {
		return nil, err
	}
	points, err := findInjectionPoints(p)
	if err != nil {
		return nil, err
	}
	var out []InjectionPoint
	for _, pt := range points {
		out = append(out, pt.InjectionPoint)
	}
	return out, nil
}

func findInjectionPoints(p *pkgFiles) ([]point, error) {
	var points []point
	var problems []string
	for _, o := range p.allObjects() {
		ann := o.annotation(ConfigInjectionAnnotation)
		if ann == nil {
			continue
		}
		value, isScalar := scalarValue(ann)
		if !isScalar || (value != injectionRequired && value != injectionOptional) {
			shown := fmt.Sprintf("%q", value)
			if !isScalar {
				shown = kindName(ann)
			}
			problems = append(problems, fmt.Sprintf("%s has invalid %q annotation value %s (want %q or %q)",
				o.describe(), ConfigInjectionAnnotation, shown, injectionRequired, injectionOptional))
			continue
		}
		gv, err := schema.ParseGroupVersion(o.apiVersion())
		switch {
		case o.apiVersion() == "" || o.kind() == "" || o.name() == "":
			problems = append(problems, fmt.Sprintf("%s is annotated %q but lacks apiVersion, kind or metadata.name",
				o.describe(), ConfigInjectionAnnotation))
			continue
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s is annotated %q but has an invalid apiVersion: %v",
				o.describe(), ConfigInjectionAnnotation, err))
			continue
		}
		points = append(points, point{
			InjectionPoint: InjectionPoint{
				File:          o.file,
				GVK:           gv.WithKind(o.kind()),
				Name:          o.name(),
				Required:      value == injectionRequired,
				ConditionType: ConditionType(o.kind(), o.name()),
			},
			obj: o,
		})
	}
	// Stable: points come in path and document order, so the first of two
	// ambiguous points is the same every time.
	sort.SliceStable(points, func(i, j int) bool { return points[i].ConditionType < points[j].ConditionType })
	for i := 0; i < len(points); {
		j := i + 1
		for j < len(points) && points[j].ConditionType == points[i].ConditionType {
			j++
		}
		if j-i > 1 {
			var where []string
			for _, pt := range points[i:j] {
				where = append(where, fmt.Sprintf("%s (%s)", pt.File, pt.GVK.GroupVersion().String()))
			}
			problems = append(problems, fmt.Sprintf("ambiguous injection condition type %q: %s; give the resources distinct kinds or names",
				points[i].ConditionType, strings.Join(where, ", ")))
		}
		i = j
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid injection points: %s", strings.Join(problems, "; "))
	}
	return points, nil
}

// selects reports whether an injector applies to an injection point: every
// group, version and kind the injector sets must be the point's.
func selects(inj configv1alpha1.InjectionSelector, gvk schema.GroupVersionKind) bool {
	return (inj.Group == nil || *inj.Group == gvk.Group) &&
		(inj.Version == nil || *inj.Version == gvk.Version) &&
		(inj.Kind == nil || *inj.Kind == gvk.Kind)
}

// injectAll injects into every point and records the outcome in the
// Kptfile's conditions and readiness gates.
func injectAll(p *pkgFiles, points []point, injectors []configv1alpha1.InjectionSelector, get ObjectGetter) ([]Injected, []Candidate, error) {
	if len(points) == 0 {
		return nil, nil, nil
	}
	kf, found, err := p.kptfile()
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, fmt.Errorf("%s not found at the package root; it is needed to record the conditions of the injection points (%s)",
			kptfileName, listFirst(pointTypes(points)))
	}
	var outcomes []Injected
	var candidates []Candidate
	var conds []condition
	for _, pt := range points {
		out, asked, err := inject(pt, injectors, get)
		if err != nil {
			return nil, nil, err
		}
		candidates = append(candidates, asked...)
		outcomes = append(outcomes, out)
		c := condition{typ: pt.ConditionType, status: "False", reason: ReasonNoResourceSelected, message: out.Message}
		if out.Source != "" {
			c.status, c.reason = "True", ReasonConfigInjected
		}
		conds = append(conds, c)
	}
	if err := setConditions(kf, conds); err != nil {
		return nil, nil, err
	}
	var gates []string
	for _, pt := range points {
		if pt.Required {
			gates = append(gates, pt.ConditionType)
		}
	}
	if err := addReadinessGates(kf, gates); err != nil {
		return nil, nil, err
	}
	return outcomes, sortCandidates(candidates), nil
}

// inject tries the injectors in order for one point. The first in-cluster
// object found wins. A lookup error stops the search: trying the next
// injector could inject a different object than a working lookup would, and
// the result would flap with the error.
func inject(pt point, injectors []configv1alpha1.InjectionSelector, get ObjectGetter) (Injected, []Candidate, error) {
	out := Injected{Point: pt.InjectionPoint}
	if len(injectors) == 0 {
		out.Message = "no injectors defined"
		return out, nil, nil
	}
	var asked []Candidate
	var tried []string
	for _, inj := range injectors {
		if !selects(inj, pt.GVK) || inj.Name == "" {
			continue
		}
		obj, found, err := lookup(get, pt.GVK, inj.Name)
		asked = append(asked, candidate(pt.GVK, inj.Name, obj, found, err))
		if err != nil {
			out.Message = fmt.Sprintf("could not look up %s %q: %v", pt.GVK.Kind, inj.Name, err)
			return out, asked, nil
		}
		if !found {
			tried = append(tried, fmt.Sprintf("%q", inj.Name))
			continue
		}
		msg, err := injectObject(pt, inj.Name, obj)
		if err != nil {
			return out, asked, err
		}
		if msg != "" {
			out.Message = msg
			return out, asked, nil
		}
		out.Source = inj.Name
		out.Message = fmt.Sprintf("injected resource %q from cluster", inj.Name)
		return out, asked, nil
	}
	if len(tried) == 0 {
		out.Message = fmt.Sprintf("no resource matched any injection selector for this injection point: no injector selects %s %s",
			pt.GVK.GroupVersion().String(), pt.GVK.Kind)
		return out, asked, nil
	}
	out.Message = fmt.Sprintf("no resource matched any injection selector for this injection point: no %s %s named %s in the variant's namespace",
		pt.GVK.GroupVersion().String(), pt.GVK.Kind, listFirst(tried))
	return out, asked, nil
}

// InjectedField is the field injection copies from an in-cluster object
// of kind gvk into the injection point: data for a core ConfigMap, spec for
// any other kind.
func InjectedField(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" && gvk.Kind == "ConfigMap" {
		return "data"
	}
	return "spec"
}

// InjectedContent is what injection copies from obj, an in-cluster object
// of kind gvk, and whether obj has it. A ConfigMap without data injects
// empty data: the package must not keep defaults the cluster does not
// have. Any other kind must have a spec.
func InjectedContent(gvk schema.GroupVersionKind, obj map[string]interface{}) (interface{}, bool) {
	field := InjectedField(gvk)
	value, ok := obj[field]
	if field == "data" && value == nil {
		return map[string]interface{}{}, true
	}
	return value, ok
}

// Fingerprint fingerprints what injection reads from obj, an in-cluster
// object of kind gvk (InjectedContent): equal fingerprints inject the same
// content. Fields injection does not read (metadata, status) do not count.
func Fingerprint(gvk schema.GroupVersionKind, obj map[string]interface{}) string {
	value, ok := InjectedContent(gvk, obj)
	if !ok {
		return "absent"
	}
	b, err := json.Marshal(value)
	if err != nil {
		// Unreachable for objects decoded from JSON; an unmatchable
		// fingerprint makes the controller read the package instead.
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// candidate records a lookup of an in-cluster object and what it returned.
func candidate(gvk schema.GroupVersionKind, name string, obj map[string]interface{}, found bool, err error) Candidate {
	c := Candidate{GVK: gvk, Name: name, Found: found && err == nil}
	switch {
	case err != nil:
		c.Err = err.Error()
	case found:
		c.Fingerprint = Fingerprint(gvk, obj)
	}
	return c
}

// lookup calls the getter; a getter that panics is a bug in the caller, but
// it must not take down the whole mutation with a half-edited package.
func lookup(get ObjectGetter, gvk schema.GroupVersionKind, name string) (obj map[string]interface{}, found bool, err error) {
	if get == nil {
		return nil, false, fmt.Errorf("no object getter configured")
	}
	defer func() {
		if r := recover(); r != nil {
			obj, found, err = nil, false, fmt.Errorf("object getter panicked: %v", r)
		}
	}()
	return get(gvk, name)
}

// injectObject copies data (ConfigMaps) or spec (other kinds) of an
// in-cluster object into the point and sets the injected-resource
// annotation. A non-empty message means the object could not be injected
// (the condition says why); err is for an in-package resource that cannot
// be edited.
func injectObject(pt point, name string, obj map[string]interface{}) (string, error) {
	fieldName := InjectedField(pt.GVK)
	value, ok := InjectedContent(pt.GVK, obj)
	if !ok {
		return fmt.Sprintf("field %q not found in resource %q", fieldName, name), nil
	}

	m := pt.obj.node
	changed := false
	if cur := field(m, fieldName); cur == nil || !semanticEqual(cur, value) {
		n, err := toNode(value)
		if err != nil {
			return fmt.Sprintf("cannot copy %s of resource %q: %v", fieldName, name, err), nil
		}
		setField(m, fieldName, n, nil)
		changed = true
	}
	md, err := ownMapping(m, "metadata", true, []string{"apiVersion", "kind", "metadata"})
	if err != nil {
		return "", fmt.Errorf("%s: %w", pt.obj.describe(), err)
	}
	ann, err := ownMapping(md, "annotations", true, nil)
	if err != nil {
		return "", fmt.Errorf("%s: metadata.%w", pt.obj.describe(), err)
	}
	if setString(ann, InjectedResourceAnnotation, name, nil) {
		changed = true
	}
	if changed {
		pt.obj.seg.dirty = true
	}
	return "", nil
}

func pointTypes(points []point) []string {
	var ts []string
	for _, p := range points {
		ts = append(ts, p.ConditionType)
	}
	return ts
}

// listFirst joins the first few items and counts the rest, so messages stay
// short and deterministic.
func listFirst(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}
