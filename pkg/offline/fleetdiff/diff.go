// Package fleetdiff says what a change (sets, variants, repositories,
// in-cluster objects, applied or deleted) would make the controllers do to
// a live fleet: it runs them offline on the fleet before and after the
// change and compares the two, object by object and package file by file,
// with injected values masked unless asked for. variantctl diff prints it.
package fleetdiff

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// State is the fleet as a Sim holds it at one moment: what a diff
// compares.
type State struct {
	Sets      map[string]*configv1alpha2.PackageVariantSet // by namespace/name
	Variants  map[string]*configv1alpha1.PackageVariant
	Revisions map[string]*porchv1alpha1.PackageRevision
}

// CaptureState reads the fleet from the Sim (through its helpers: not
// counted as requests, never faulted).
func CaptureState(ctx context.Context, sim *porchsim.Sim) (*State, error) {
	client := sim.Clientset()
	st := &State{
		Sets:      map[string]*configv1alpha2.PackageVariantSet{},
		Variants:  map[string]*configv1alpha1.PackageVariant{},
		Revisions: map[string]*porchv1alpha1.PackageRevision{},
	}
	for _, k := range []input.ServedKind{input.PackageVariantSetKind, input.PackageVariantKind, input.PackageRevisionKind} {
		objs, err := k.List(ctx, client, "")
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", k.Plural, err)
		}
		for _, obj := range objs {
			switch o := obj.(type) {
			case *configv1alpha2.PackageVariantSet:
				st.Sets[o.Namespace+"/"+o.Name] = o
			case *configv1alpha1.PackageVariant:
				st.Variants[o.Namespace+"/"+o.Name] = o
			case *porchv1alpha1.PackageRevision:
				st.Revisions[o.Namespace+"/"+o.Name] = o
			}
		}
	}
	return st, nil
}

// Actions in a Diff.
const (
	DiffAdded    = "added"
	DiffChanged  = "changed"
	DiffRemoved  = "removed"
	DiffDeleting = "deleting" // deletion started, finalizers still held

	RevisionCreated             = "created"
	RevisionReplaced            = "replaced" // deleted, a new draft of its package made in its place
	RevisionDeleted             = "deleted"
	RevisionProposedForDeletion = "proposed-for-deletion"
	RevisionChanged             = "changed"
)

// Diff is what a change does to a fleet: the sets and variants that
// appear, change or go, and what happens to their package revisions.
type Diff struct {
	Sets     []ObjectDiff  `json:"sets,omitempty"`
	Variants []VariantDiff `json:"variants,omitempty"`
	// OtherRevisions are changed revisions no variant owns (before or
	// after).
	OtherRevisions []RevisionDiff `json:"otherRevisions,omitempty"`
	// Previews say, for each package revision the diff published
	// (Options.Upgrades), what it does to the variants that follow it.
	Previews []Preview `json:"previews,omitempty"`
	Summary  Summary   `json:"summary"`
	// NotSettled says what the controllers still had in hand when the run
	// stopped; empty when they settled.
	NotSettled string `json:"notSettled,omitempty"`
}

// Empty reports whether the change does nothing.
func (d *Diff) Empty() bool {
	return len(d.Sets) == 0 && len(d.Variants) == 0 && len(d.OtherRevisions) == 0
}

// ObjectDiff is a PackageVariantSet or PackageVariant that was added,
// changed or removed.
type ObjectDiff struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Action    string `json:"action"`
	// Changed names what changed: spec, labels, annotations, finalizers.
	Changed []string `json:"changed,omitempty"`
	// SpecDiff is a unified diff of the spec as YAML.
	SpecDiff   string            `json:"specDiff,omitempty"`
	Conditions []ConditionChange `json:"conditions,omitempty"`
	// Rollout is where a set's rollout stands after the change: which
	// waves take the change now and which wait.
	Rollout *configv1alpha2.RolloutStatus `json:"rollout,omitempty"`
}

// VariantDiff is a variant and what happens to its package revisions. A
// variant that stays the same but whose revisions change (an upstream
// moved) is listed with Action "".
type VariantDiff struct {
	ObjectDiff `json:",inline"`
	// Set is the PackageVariantSet that owns the variant, if any.
	Set string `json:"set,omitempty"`
	// Ready is the variant's Ready condition after the change (nil for a
	// removed variant), changed or not.
	Ready     *Condition     `json:"ready,omitempty"`
	Revisions []RevisionDiff `json:"revisions,omitempty"`
}

// ConditionChange is a condition whose status, reason or message changed.
type ConditionChange struct {
	Type   string     `json:"type"`
	Before *Condition `json:"before,omitempty"`
	After  *Condition `json:"after,omitempty"`
}

// Condition is what a person reads of a condition.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// RevisionDiff is a PackageRevision created, replaced, deleted, proposed
// for deletion or changed.
type RevisionDiff struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Repository string `json:"repository"`
	Package    string `json:"package"`
	Workspace  string `json:"workspace"`
	Action     string `json:"action"`
	// Task is how a created revision was made: clone, edit or upgrade.
	Task string `json:"task,omitempty"`
	// Lifecycle after (before, for a deleted revision); LifecycleBefore
	// for a changed one.
	Lifecycle       string `json:"lifecycle"`
	LifecycleBefore string `json:"lifecycleBefore,omitempty"`
	// Revision number of a published revision.
	Revision int `json:"revision,omitempty"`
	// Replaces is the draft a created revision took the place of.
	Replaces string `json:"replaces,omitempty"`
	// ComparedWith is what Diff compares the files with: the replaced
	// draft, the package's latest Published revision, or (a new clone)
	// its upstream revision.
	ComparedWith string `json:"comparedWith,omitempty"`
	// Changed names what changed of a changed revision: lifecycle, files,
	// owner, labels, annotations.
	Changed []string `json:"changed,omitempty"`
	Diff    string   `json:"diff,omitempty"`
	// Files are the revision's files after the change, as it holds them
	// (injected values unmasked), for a created revision or one whose
	// files changed: what WriteDrafts writes. Not in the JSON.
	Files map[string]string `json:"-"`
	// Blocking are the readiness gates of the revision after the change
	// whose conditions are not True (a required injection point with no
	// object to inject, say): Porch will not publish it until they are.
	Blocking []GateCondition `json:"blocking,omitempty"`
}

// GateCondition is a package revision's condition that gates publishing.
type GateCondition struct {
	Type      string `json:"type"`
	Condition `json:",inline"`
}

// Summary counts what a Diff holds.
type Summary struct {
	SetsAdded           int `json:"setsAdded"`
	SetsChanged         int `json:"setsChanged"`
	SetsRemoved         int `json:"setsRemoved"`
	VariantsAdded       int `json:"variantsAdded"`
	VariantsChanged     int `json:"variantsChanged"`
	VariantsRemoved     int `json:"variantsRemoved"`
	RevisionsCreated    int `json:"revisionsCreated"`
	Clones              int `json:"clones"`
	Edits               int `json:"edits"`
	Upgrades            int `json:"upgrades"`
	RevisionsReplaced   int `json:"revisionsReplaced"`
	RevisionsDeleted    int `json:"revisionsDeleted"`
	ProposedForDeletion int `json:"proposedForDeletion"`
	RevisionsChanged    int `json:"revisionsChanged"`
}

// FileReader reads a revision's files before and after the run. Before is
// asked only for revisions the before state holds, After only for those
// the after state holds.
type FileReader interface {
	Before(namespace, name string) (map[string]string, error)
	After(namespace, name string) (map[string]string, error)
}

// Compare returns what changed from before to after.
func Compare(before, after *State, files FileReader, showInjected bool) (*Diff, error) {
	d := &Diff{}
	d.Sets = compareSets(before, after)

	// Revisions first: a variant whose revisions changed is listed even
	// when the variant itself did not change.
	revs, err := compareRevisions(before, after, files, showInjected)
	if err != nil {
		return nil, err
	}
	owners := map[types.UID]string{} // variant uid -> namespace/name
	for k, pv := range before.Variants {
		owners[pv.UID] = k
	}
	for k, pv := range after.Variants {
		owners[pv.UID] = k
	}
	byVariant := map[string][]RevisionDiff{}
	for _, r := range revs {
		key := r.owner
		if v, ok := owners[key]; ok {
			byVariant[v] = append(byVariant[v], r.RevisionDiff)
		} else {
			d.OtherRevisions = append(d.OtherRevisions, r.RevisionDiff)
		}
	}

	keys := unionKeys(before.Variants, after.Variants)
	for _, k := range keys {
		b, a := before.Variants[k], after.Variants[k]
		var od ObjectDiff
		var set string
		switch {
		case b == nil:
			od = ObjectDiff{Action: DiffAdded, SpecDiff: specDiff(nil, a.Spec)}
			od.Conditions = conditionChanges(nil, a.Status.Conditions)
			set = setOf(a, after)
		case a == nil:
			od = ObjectDiff{Action: DiffRemoved}
			set = setOf(b, before)
		default:
			od = objectChange(b.ObjectMeta, a.ObjectMeta, b.Spec, a.Spec)
			od.Conditions = conditionChanges(b.Status.Conditions, a.Status.Conditions)
			if od.Action == "" && len(od.Conditions) > 0 {
				od.Action = DiffChanged
			}
			set = setOf(a, after)
		}
		if od.Action == "" && len(byVariant[k]) == 0 {
			continue
		}
		ns, name, _ := strings.Cut(k, "/")
		od.Kind, od.Namespace, od.Name = "PackageVariant", ns, name
		vd := VariantDiff{ObjectDiff: od, Set: set, Revisions: byVariant[k]}
		if a != nil {
			for _, c := range a.Status.Conditions {
				if c.Type == "Ready" {
					vd.Ready = &Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
				}
			}
		}
		d.Variants = append(d.Variants, vd)
	}
	d.Summary = summarize(d)
	return d, nil
}

// compareSets lists the sets added, changed or removed.
func compareSets(before, after *State) []ObjectDiff {
	var out []ObjectDiff
	for _, k := range unionKeys(before.Sets, after.Sets) {
		b, a := before.Sets[k], after.Sets[k]
		var od ObjectDiff
		switch {
		case b == nil:
			od = ObjectDiff{Action: DiffAdded, SpecDiff: specDiff(nil, a.Spec)}
			od.Conditions = conditionChanges(nil, a.Status.Conditions)
		case a == nil:
			od = ObjectDiff{Action: DiffRemoved}
		default:
			od = objectChange(b.ObjectMeta, a.ObjectMeta, b.Spec, a.Spec)
			od.Conditions = conditionChanges(b.Status.Conditions, a.Status.Conditions)
			if od.Action == "" && len(od.Conditions) > 0 {
				od.Action = DiffChanged
			}
		}
		if od.Action == "" {
			continue
		}
		if a != nil {
			od.Rollout = a.Status.Rollout
		}
		ns, name, _ := strings.Cut(k, "/")
		od.Kind, od.Namespace, od.Name = "PackageVariantSet", ns, name
		out = append(out, od)
	}
	return out
}

// objectChange compares two versions of an object: Action is
// DiffDeleting, DiffChanged or "" (nothing a person cares about changed:
// resourceVersion, managed fields and status are not compared here).
func objectChange(b, a metav1.ObjectMeta, bSpec, aSpec any) ObjectDiff {
	var od ObjectDiff
	if !equality.Semantic.DeepEqual(bSpec, aSpec) {
		od.Changed = append(od.Changed, "spec")
		od.SpecDiff = specDiff(bSpec, aSpec)
	}
	if !equality.Semantic.DeepEqual(b.Labels, a.Labels) && (len(b.Labels) > 0 || len(a.Labels) > 0) {
		od.Changed = append(od.Changed, "labels")
	}
	if !equality.Semantic.DeepEqual(b.Annotations, a.Annotations) && (len(b.Annotations) > 0 || len(a.Annotations) > 0) {
		od.Changed = append(od.Changed, "annotations")
	}
	if !equality.Semantic.DeepEqual(b.Finalizers, a.Finalizers) && (len(b.Finalizers) > 0 || len(a.Finalizers) > 0) {
		od.Changed = append(od.Changed, "finalizers")
	}
	switch {
	case a.DeletionTimestamp != nil && b.DeletionTimestamp == nil:
		od.Action = DiffDeleting
	case len(od.Changed) > 0:
		od.Action = DiffChanged
	}
	return od
}

// specDiff is a unified diff of a spec as YAML ("" when equal).
func specDiff(before, after any) string {
	toYAML := func(v any) string {
		if v == nil {
			return ""
		}
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Sprintf("(cannot print: %v)\n", err)
		}
		return string(b)
	}
	var a, b map[string]string
	if s := toYAML(before); s != "" {
		a = map[string]string{"spec": s}
	}
	if s := toYAML(after); s != "" {
		b = map[string]string{"spec": s}
	}
	return UnifiedDiff("before", "after", a, b)
}

// conditionChanges lists the conditions whose status, reason or message
// changed (when and for which generation they changed is noise here).
func conditionChanges(before, after []metav1.Condition) []ConditionChange {
	find := func(cs []metav1.Condition, t string) *Condition {
		for _, c := range cs {
			if c.Type == t {
				return &Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
			}
		}
		return nil
	}
	types := map[string]bool{}
	for _, c := range before {
		types[c.Type] = true
	}
	for _, c := range after {
		types[c.Type] = true
	}
	var out []ConditionChange
	for _, t := range sortedKeys(types) {
		b, a := find(before, t), find(after, t)
		if b != nil && a != nil && *b == *a {
			continue
		}
		out = append(out, ConditionChange{Type: t, Before: b, After: a})
	}
	return out
}

// setOf is the namespace/name of the set that controls a variant, if any.
func setOf(pv *configv1alpha1.PackageVariant, st *State) string {
	ref := metav1.GetControllerOf(pv)
	if ref == nil || ref.Kind != "PackageVariantSet" {
		return ""
	}
	for _, s := range st.Sets {
		if s.UID == ref.UID {
			return s.Name
		}
	}
	return ref.Name
}

func summarize(d *Diff) Summary {
	var s Summary
	count := func(action string, added, changed, removed *int) {
		switch action {
		case DiffAdded:
			*added++
		case DiffChanged, DiffDeleting:
			*changed++
		case DiffRemoved:
			*removed++
		}
	}
	for _, o := range d.Sets {
		count(o.Action, &s.SetsAdded, &s.SetsChanged, &s.SetsRemoved)
	}
	revs := append([]RevisionDiff(nil), d.OtherRevisions...)
	for _, v := range d.Variants {
		count(v.Action, &s.VariantsAdded, &s.VariantsChanged, &s.VariantsRemoved)
		revs = append(revs, v.Revisions...)
	}
	for _, r := range revs {
		switch r.Action {
		case RevisionCreated, RevisionReplaced:
			if r.Action == RevisionCreated {
				s.RevisionsCreated++
			} else {
				s.RevisionsReplaced++
			}
			switch porchv1alpha1.TaskType(r.Task) {
			case porchv1alpha1.TaskTypeClone:
				s.Clones++
			case porchv1alpha1.TaskTypeEdit:
				s.Edits++
			case porchv1alpha1.TaskTypeUpgrade:
				s.Upgrades++
			}
		case RevisionDeleted:
			s.RevisionsDeleted++
		case RevisionProposedForDeletion:
			s.ProposedForDeletion++
		case RevisionChanged:
			s.RevisionsChanged++
		}
	}
	return s
}

func unionKeys[T any](a, b map[string]T) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return sortedKeys(keys)
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}
