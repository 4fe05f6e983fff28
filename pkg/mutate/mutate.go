package mutate

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// Input is everything a PackageVariant asks of a package's content. It is
// plain data so that the controller, the offline tool and tests feed Apply
// the same way.
type Input struct {
	// VariantName is the PackageVariant's metadata.name. It names the
	// pipeline functions the variant adds, which is how a later Apply finds
	// and replaces them.
	VariantName string
	// PackageContext is spec.packageContext; nil leaves the package context
	// alone.
	PackageContext *configv1alpha1.PackageContext
	// Pipeline is spec.pipeline; nil still removes the functions the variant
	// added before.
	Pipeline *kptfilev1.Pipeline
	// Injectors is spec.injectors, tried in order for every injection point.
	Injectors []configv1alpha1.InjectionSelector
}

// ObjectGetter returns the in-cluster object of the given group/version/kind
// and name in the variant's namespace, as the Object map of an
// unstructured.Unstructured; found=false when it does not exist. It is how
// Apply stays free of clients: the controller backs it with informers, tests
// with a map.
//
// err is for failures to look the object up (the kind is not served, the
// cache is not synced). Apply records such an error in the injection point's
// condition rather than failing, as the design document asks: an optional
// injection point without its kind must not block the draft.
type ObjectGetter func(gvk schema.GroupVersionKind, name string) (obj map[string]interface{}, found bool, err error)

// InjectionPoint is one in-package resource annotated
// kpt.dev/config-injection: a place where the package author lets a variant
// inject in-cluster configuration.
type InjectionPoint struct {
	// File is the package path of the file holding the resource.
	File string
	// GVK of the in-package resource; an in-cluster object must have the same
	// one to be injected, because it is the schema of what is copied.
	GVK schema.GroupVersionKind
	// Name is the in-package metadata.name; the in-cluster name usually
	// differs (injectors map one to the other).
	Name string
	// Required is true for the annotation value "required": its condition
	// becomes a readiness gate that blocks publishing until injected.
	Required bool
	// ConditionType is "config.injection.<Kind>.<name>", the Kptfile (and
	// PackageRevision) condition that reports this point.
	ConditionType string
}

// Injected records the outcome of one injection point, for the controller's
// events and logs and for tests.
type Injected struct {
	// Point is the injection point.
	Point InjectionPoint
	// Source is the name of the in-cluster object injected, "" when none
	// matched or the lookup failed.
	Source string
	// Message is the message of the point's Kptfile condition.
	Message string
}

// Candidate is an in-cluster object Apply looked up for injection. A change
// to any of them (including its creation) can change the outcome, so the
// controller watches them and reconciles the variant when one changes.
type Candidate struct {
	// GVK of the object (that of the injection point).
	GVK schema.GroupVersionKind
	// Name of the object in the variant's namespace.
	Name string
	// What the lookup returned: whether the object was found, the
	// Fingerprint of what injection reads from it, or the lookup's error.
	// Two lookups with equal outcomes inject the same content, so the
	// controller can tell from these alone whether applying the variant
	// again would change anything.
	Found       bool
	Fingerprint string
	Err         string
}

// Result is the outcome of Apply.
type Result struct {
	// Files are the package's files after the mutations: a new map, the
	// input is never modified. Untouched files are byte-identical.
	Files map[string]string
	// Changed says whether Files differ from the input; the controller
	// writes the package only when it is true.
	Changed bool
	// Points are the injection points of the package, sorted by
	// ConditionType.
	Points []InjectionPoint
	// Injected has one entry per point, in the order of Points.
	Injected []Injected
	// Candidates are every (GVK, name) Apply asked the getter for, sorted and
	// unique; the controller watches these objects.
	Candidates []Candidate
}

// Apply applies a variant's mutations to a package's files: package context,
// then pipeline functions, then config injection, the order the design
// document gives. It returns an error, and no files, when the package or the
// input makes a mutation impossible (no package context ConfigMap to edit, no
// Kptfile, an invalid injection point, malformed YAML): those must stop the
// draft and be reported on the variant. Lookup failures of in-cluster objects
// are not errors; they are recorded in the injection conditions.
func Apply(files map[string]string, in Input, get ObjectGetter) (Result, error) {
	if in.VariantName == "" {
		return Result{}, errors.New("variant name is required: it names the pipeline functions the variant adds")
	}
	if !utf8.ValidString(in.VariantName) {
		// YAML cannot hold it: the functions written would not be found again.
		return Result{}, fmt.Errorf("variant name %q is not valid UTF-8", in.VariantName)
	}
	p, err := parsePackage(files)
	if err != nil {
		return Result{}, err
	}
	if err := applyPackageContext(p, in.PackageContext); err != nil {
		return Result{}, err
	}
	if err := applyPipeline(p, in.VariantName, in.Pipeline); err != nil {
		return Result{}, err
	}
	points, err := findInjectionPoints(p)
	if err != nil {
		return Result{}, err
	}
	res := Result{}
	outcomes, candidates, err := injectAll(p, points, in.Injectors, get)
	if err != nil {
		return Result{}, err
	}
	res.Files, err = p.render()
	if err != nil {
		return Result{}, err
	}
	for _, pt := range points {
		res.Points = append(res.Points, pt.InjectionPoint)
	}
	res.Injected = outcomes
	res.Candidates = candidates
	res.Changed = !maps.Equal(files, res.Files)
	return res, nil
}

// sortCandidates sorts and deduplicates, so the controller's watch list is
// stable from one reconcile to the next.
func sortCandidates(cs []Candidate) []Candidate {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.GVK.Group != b.GVK.Group {
			return a.GVK.Group < b.GVK.Group
		}
		if a.GVK.Version != b.GVK.Version {
			return a.GVK.Version < b.GVK.Version
		}
		if a.GVK.Kind != b.GVK.Kind {
			return a.GVK.Kind < b.GVK.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Fingerprint+"\x00"+a.Err < b.Fingerprint+"\x00"+b.Err
	})
	out := cs[:0]
	for i, c := range cs {
		if i > 0 && c == cs[i-1] {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
