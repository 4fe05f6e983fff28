package fleetdiff

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

// Kinds of collision.
const (
	CollisionPackageContext   = "packageContext"
	CollisionInjectionPoint   = "injectionPoint"
	CollisionPipelineFunction = "pipelineFunction"
)

// Collision is something a variant writes that the new revision also
// changed or removed: the variant's edit and the blueprint's change meet.
type Collision struct {
	Kind string `json:"kind"`
	// Name is the package context key, the injection point's condition
	// type, or the function's name.
	Name    string `json:"name"`
	Message string `json:"message"`
}

// blueprintFacts is what collisions compare of one revision of the
// blueprint.
type blueprintFacts struct {
	context    map[string]string
	hasContext bool
	points     map[string]bool // injection points by condition type
	functions  map[string]string
}

func factsOf(files map[string]string) (blueprintFacts, error) {
	f := blueprintFacts{points: map[string]bool{}, functions: map[string]string{}}
	var err error
	if f.context, f.hasContext, err = mutate.PackageContextData(files); err != nil {
		return f, fmt.Errorf("package context: %w", err)
	}
	points, err := mutate.FindInjectionPoints(files)
	if err != nil {
		return f, fmt.Errorf("injection points: %w", err)
	}
	for _, p := range points {
		f.points[p.ConditionType] = true
	}
	var kf kptfilev1.KptFile
	if err := yaml.Unmarshal([]byte(files["Kptfile"]), &kf); err != nil {
		return f, fmt.Errorf("Kptfile: %w", err)
	}
	if kf.Pipeline != nil {
		for _, fn := range slices.Concat(kf.Pipeline.Mutators, kf.Pipeline.Validators) {
			if fn.Name != "" {
				f.functions[fn.Name] = fn.Image
			}
		}
	}
	return f, nil
}

// collisions compares what the variant writes with what changed from the
// old revision of the blueprint to the new one: package context keys the
// blueprint now sets, changed or dropped and the variant sets or removes;
// injection points the variant fills (in any of its downstream revisions)
// that the new revision no longer has; functions the variant
// prepends whose name the new revision's pipeline now uses, and functions
// of the new revision named as the variant names its own (which its edit
// drops).
func collisions(pv *configv1alpha1.PackageVariant, downstream []*porchv1alpha1.PackageRevision, old, new blueprintFacts) []Collision {
	var out []Collision
	if pc := pv.Spec.PackageContext; pc != nil {
		keys := slices.Concat(slices.Collect(maps.Keys(pc.Data)), pc.RemoveKeys)
		sort.Strings(keys)
		for _, k := range slices.Compact(keys) {
			before, had := old.context[k]
			after, has := new.context[k]
			switch {
			case has && !had:
				out = append(out, Collision{CollisionPackageContext, k, fmt.Sprintf("the new revision sets package context key %q (%q) itself; the variant's spec.packageContext sets or removes it too, and wins", k, after)})
			case has && had && before != after:
				out = append(out, Collision{CollisionPackageContext, k, fmt.Sprintf("the new revision changes the default of package context key %q from %q to %q; the variant's spec.packageContext sets or removes it, so the new default never reaches it", k, before, after)})
			case had && !has:
				out = append(out, Collision{CollisionPackageContext, k, fmt.Sprintf("the new revision drops package context key %q (%q in the old one); the variant's spec.packageContext still sets or removes it", k, before)})
			}
		}
	}
	reported := map[string]bool{}
	for _, pr := range downstream {
		for _, c := range pr.Status.Conditions {
			if !strings.HasPrefix(c.Type, "config.injection.") || c.Status != porchv1alpha1.ConditionTrue || new.points[c.Type] || reported[c.Type] {
				continue
			}
			reported[c.Type] = true
			out = append(out, Collision{CollisionInjectionPoint, c.Type, fmt.Sprintf("the variant fills injection point %s (%s), which the new revision no longer has: what it injects there is dropped, and a readiness gate on it could never pass", strings.TrimPrefix(c.Type, "config.injection."), c.Message)})
		}
	}
	// The variant's edit drops, from the package, every function named as
	// one it prepends (PackageVariant.<variant>.<name>.<position>): a
	// blueprint function so named is lost, whether or not the variant
	// prepends any.
	for _, name := range slices.Sorted(maps.Keys(new.functions)) {
		if _, before := old.functions[name]; !before && mutate.IsVariantFunction(name, pv.Name) {
			out = append(out, Collision{CollisionPipelineFunction, name, fmt.Sprintf("the new revision's pipeline has a function named %q (%s), the name the variant gives a function it prepends (%s.%s.<name>.<position>): the variant's edit takes it for its own and drops it from the package", name, new.functions[name], mutate.FunctionNamePrefix, pv.Name)})
		}
	}
	if p := pv.Spec.Pipeline; p != nil {
		for _, fn := range slices.Concat(p.Mutators, p.Validators) {
			if fn.Name == "" {
				continue
			}
			if image, ok := new.functions[fn.Name]; ok {
				if _, before := old.functions[fn.Name]; !before {
					out = append(out, Collision{CollisionPipelineFunction, fn.Name, fmt.Sprintf("the new revision's pipeline now has a function named %q (%s), the name of a function the variant prepends (%s)", fn.Name, image, fn.Image)})
				}
			}
		}
	}
	return out
}

// blueprintRevisions reads each revision of a blueprint package once, for
// the collisions of every variant that follows it.
type blueprintRevisions struct {
	before *State
	files  FileReader
	ns     string
	repo   string
	pkg    string
	facts  map[int]*blueprintFacts
}

// of is what collisions compare of revision n of the package (nil when the
// fleet does not hold that revision).
func (b *blueprintRevisions) of(n int) (*blueprintFacts, error) {
	if f, ok := b.facts[n]; ok {
		return f, nil
	}
	var found *porchv1alpha1.PackageRevision
	for _, pr := range b.before.Revisions {
		if pr.Namespace == b.ns && pr.Spec.RepositoryName == b.repo && pr.Spec.PackageName == b.pkg && pr.Spec.Revision == n {
			found = pr
		}
	}
	if found == nil {
		b.facts[n] = nil
		return nil, nil
	}
	// Published revisions do not change: the Sim's copy is the source's
	// (read through the same cache), and the new revision is only there.
	files, err := b.files.After(found.Namespace, found.Name)
	if err != nil {
		return nil, err
	}
	f, err := factsOf(files)
	if err != nil {
		return nil, fmt.Errorf("PackageRevision %s/%s: %w", found.Namespace, found.Name, err)
	}
	b.facts[n] = &f
	return &f, nil
}
