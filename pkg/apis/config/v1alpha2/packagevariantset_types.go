package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// SetLabel is put on every PackageVariant a set generates; its value is the
// set's UID.
const SetLabel = "config.porch.kpt.dev/packagevariantset"

// WaveLabel is put on every PackageVariant of a set with spec.rollout; its
// value is the name of the variant's wave (kubectl get packagevariants -l
// config.porch.kpt.dev/rollout-wave=canary). A set without a rollout
// removes it.
const WaveLabel = "config.porch.kpt.dev/rollout-wave"

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packagevariantsets,scope=Namespaced,categories=porch
// +kubebuilder:printcolumn:name="Upstream Repo",type=string,JSONPath=`.spec.upstream.repo`,priority=1
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.spec.upstream.package`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.spec.upstream.revision`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredVariants`
// +kubebuilder:printcolumn:name="Variants Ready",type=integer,JSONPath=`.status.readyVariants`
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.rollout.currentWave`
// +kubebuilder:printcolumn:name="Rolled Out",type=string,JSONPath=`.status.rollout.progress`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PackageVariantSet fans one upstream package out to many downstream
// packages: it generates one PackageVariant per target (a listed
// repository and package name, a selected Repository, or a selected
// object), each rendered from the target's template.
type PackageVariantSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the upstream and the targets.
	// +optional
	Spec PackageVariantSetSpec `json:"spec,omitempty"`
	// Status reports whether every generated PackageVariant exists and is up
	// to date.
	// +optional
	Status PackageVariantSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PackageVariantSetList is a list of PackageVariantSets.
type PackageVariantSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariantSet `json:"items"`
}

// PackageVariantSetSpec is the desired state of a PackageVariantSet.
type PackageVariantSetSpec struct {
	// Upstream is the package every generated variant copies.
	// +optional
	Upstream *configv1alpha1.Upstream `json:"upstream,omitempty"`
	// Targets say where the copies go; each generates one PackageVariant
	// per repository and package name it yields.
	// +optional
	Targets []Target `json:"targets,omitempty"`
	// Rollout makes a change reach the variants in waves, each started
	// only once the one before it is published. Without it every variant
	// gets a change at once.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`
}

// ApproveWaveAnnotation approves a Manual wave of a set's rollout: its value
// is "<wave>@<rollout id>" (the id is status.rollout.id). Approving a wave
// approves the waves before it in the same rollout; an approval naming
// another rollout approves nothing.
const ApproveWaveAnnotation = "config.porch.kpt.dev/approve-wave"

// SkipVariantsAnnotation passes variants over in a set's rollout: its
// value is "<variant>[,<variant>...]@<rollout id>". A skipped variant is
// neither opened nor waited for, and its failure counts against nothing;
// it keeps what it carries. A skip naming another rollout skips nothing.
const SkipVariantsAnnotation = "config.porch.kpt.dev/skip-variants"

// ResumeWaveAnnotation resumes a wave of a set's rollout that halted
// (more failed variants than spec.rollout.maxFailures): its value is
// "<wave>@<rollout id>". The wave's failures then halt nothing for the
// rest of that rollout: it goes on and finishes when every other variant
// of it has.
const ResumeWaveAnnotation = "config.porch.kpt.dev/resume-wave"

// Rollout says how a change (a new template, or a new latest upstream
// revision) reaches the set's variants: wave by wave, at most so many
// variants of a wave at once, the next wave starting only when every
// variant of the one before has published the change.
//
// The API server refuses what the rules below can say (the controller's
// validation, and variantctl validate, say the same and more).
// +kubebuilder:validation:XValidation:rule="has(self.waves) && size(self.waves) > 0",message="a rollout needs at least one wave",fieldPath=".waves",reason=FieldValueRequired
type Rollout struct {
	// Waves, in order. A variant is in the first wave whose selectors match
	// it: selector over its labels (spec.labels of the PackageVariant the
	// set makes), repositorySelector over the labels of its downstream
	// Repository, both when both are given. A wave with neither takes
	// every variant no earlier wave took. A variant no wave takes is held
	// on what it carries and listed in status.rollout.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Waves []Wave `json:"waves,omitempty"`
	// SoakSeconds is how long to wait after a wave finishes before the next
	// starts. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	SoakSeconds *int32 `json:"soakSeconds,omitempty"`
	// MaxFailures is how many failed variants a wave tolerates (Stalled,
	// Ready=False because rendering failed, Porch refused a write or
	// another variant owns the package, or blocked past
	// progressDeadlineSeconds); with more, the rollout halts until they
	// recover or the limit is raised. Default 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxFailures *int32 `json:"maxFailures,omitempty"`
	// ProgressDeadlineSeconds reports a wave not finished this long after it
	// started (condition RolledOut reason ProgressDeadlineExceeded, and a
	// Warning event); the wave keeps going. A variant whose draft cannot be
	// published by the rules (Published=False, ReadinessGatesNotMet) this
	// long after its change or its wave started, whichever is later, has
	// failed.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
	// Paused starts nothing new: no wave, no variant's change, no variant
	// of a new target, and no deletion of a vanished target's variant.
	// What is open stays open.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Creates says when the variants of targets that have none yet (the
	// set's first deployment, and new targets) are created: Immediate
	// (default) at once, never held back; InWaves only when their wave
	// opens them, within its maxConcurrent, like any change.
	// +optional
	// +kubebuilder:validation:Enum=Immediate;InWaves
	Creates RolloutCreates `json:"creates,omitempty"`
	// Health makes a variant's change finished only once the in-cluster
	// object that says what its cluster runs reports its published
	// revision healthy; soakSeconds then counts from there.
	// +optional
	Health *RolloutHealth `json:"health,omitempty"`
}

// RolloutHealth names, for each variant, the in-cluster object that says
// what its cluster runs (a Flux Kustomization, an Argo CD
// Application, Config Sync's RootSync ...) and how to judge it.
type RolloutHealth struct {
	// APIVersion and Kind of the objects. Required.
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// NameExpr is a CEL expression that names the variant's object, over
	// variant (name, namespace, labels, annotations, downstream.repo,
	// downstream.package), repository (its downstream Repository: name,
	// namespace, labels, annotations) and revision (its published
	// revision: name, revision, published, commit). Required.
	// +kubebuilder:validation:MinLength=1
	NameExpr string `json:"nameExpr"`
	// Namespace of the objects; default: the set's. (Argo CD Applications
	// usually live in argocd, RootSyncs in config-management-system.) A
	// controller that watches one namespace only (--namespace) sees that
	// one only.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Current, InProgress and Failed are CEL bools over object (the whole
	// object) and revision, as Flux's healthCheckExprs: tried inProgress,
	// failed, current; the first true decides; none: in progress. Without
	// any, kstatus judges the object (reconciled, whatever its revision).
	// Current is required when any is given.
	// +optional
	Current string `json:"current,omitempty"`
	// +optional
	InProgress string `json:"inProgress,omitempty"`
	// +optional
	Failed string `json:"failed,omitempty"`
	// ServiceAccountName bounds the reads of the objects: the controller
	// reads one only if this ServiceAccount of the set's namespace may get
	// it, in its namespace (empty: the controller's default account, if it
	// has one).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// RolloutCreates says when a rollout creates the variants of new targets.
type RolloutCreates string

const (
	// RolloutCreatesImmediate creates them at once.
	RolloutCreatesImmediate RolloutCreates = "Immediate"
	// RolloutCreatesInWaves creates them when their wave opens them.
	RolloutCreatesInWaves RolloutCreates = "InWaves"
)

// WaveApproval says whether a wave starts by itself.
type WaveApproval string

const (
	// WaveApprovalAutomatic starts the wave when the one before has
	// finished and soaked.
	WaveApprovalAutomatic WaveApproval = "Automatic"
	// WaveApprovalManual also waits for ApproveWaveAnnotation.
	WaveApprovalManual WaveApproval = "Manual"
)

// Wave is one group of a set's variants.
type Wave struct {
	// Name of the wave: a DNS label, unique in the list. Required.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Selector over the labels of the variants (spec.labels of each
	// PackageVariant the set makes).
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// RepositorySelector over the labels of each variant's downstream
	// Repository (spec.downstream.repo). Without it and Selector, the wave
	// takes every variant no earlier wave took.
	// +optional
	RepositorySelector *metav1.LabelSelector `json:"repositorySelector,omitempty"`
	// MaxConcurrent is how many variants of the wave may have an unfinished
	// change at once: a number, or a percentage of the wave's variants
	// ("25%", rounded up, at least 1). Default: all of them.
	// +optional
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^(100|[1-9][0-9]?)%$')",message="must be a number of variants (1 or more) or a percentage of the wave from 1% to 100%, such as \"25%\""
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`
	// Approval: Automatic (default) or Manual.
	// +optional
	// +kubebuilder:validation:Enum=Automatic;Manual
	Approval WaveApproval `json:"approval,omitempty"`
}

// Target is one way of choosing downstream repositories. Exactly one of
// repositories, repositorySelector and objectSelector must be set.
type Target struct {
	// Repositories lists downstream repositories by name, each with the
	// package names to create in it.
	// +optional
	Repositories []RepositoryTarget `json:"repositories,omitempty"`
	// RepositorySelector selects Repositories in the set's namespace by label.
	// +optional
	RepositorySelector *RepositorySelector `json:"repositorySelector,omitempty"`
	// ObjectSelector selects arbitrary objects in the set's namespace; each
	// selected object's name is the default downstream repository name.
	// +optional
	ObjectSelector *ObjectSelector `json:"objectSelector,omitempty"`
	// Template says how to make the PackageVariant for each target.
	// +optional
	Template *PackageVariantTemplate `json:"template,omitempty"`
}

// RepositoryTarget is a downstream repository named explicitly.
type RepositoryTarget struct {
	// Name of the Repository, in the set's namespace. Required.
	// +optional
	Name string `json:"name"`
	// PackageNames are the downstream package names to create in this
	// repository; the upstream package name when empty.
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// RepositorySelector is a label selector over Repositories, plus the package
// names to create in each selected repository.
type RepositorySelector struct {
	metav1.LabelSelector `json:",inline"`

	// PackageNames are the downstream package names to create in each
	// selected repository; the upstream package name when empty.
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// ObjectSelector selects objects of one kind in the set's namespace by label
// and, optionally, by name.
type ObjectSelector struct {
	metav1.LabelSelector `json:",inline"`

	// APIVersion of the objects to select, for example v1 or infra.example.com/v1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the objects to select.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name selects only the object with this name.
	// +optional
	Name *string `json:"name,omitempty"`
	// PackageNames are the downstream package names to create for each
	// selected object; the upstream package name when empty.
	// +optional
	PackageNames []string `json:"packageNames,omitempty"`
}

// PackageVariantTemplate says how to make a PackageVariant from a target.
// Fields ending in Expr are CEL expressions evaluated per target; where both
// a plain field and its Expr form are set the Expr result wins.
type PackageVariantTemplate struct {
	// Downstream overrides the default downstream repository and package name.
	// +optional
	Downstream *DownstreamTemplate `json:"downstream,omitempty"`
	// AdoptionPolicy of the generated variants.
	// +optional
	AdoptionPolicy *configv1alpha1.AdoptionPolicy `json:"adoptionPolicy,omitempty"`
	// DeletionPolicy of the generated variants.
	// +optional
	DeletionPolicy *configv1alpha1.DeletionPolicy `json:"deletionPolicy,omitempty"`
	// UpgradePolicy of the generated variants.
	// +optional
	UpgradePolicy *configv1alpha1.UpgradePolicy `json:"upgradePolicy,omitempty"`
	// Labels become spec.labels of the generated variants.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// LabelExprs compute entries of spec.labels with CEL; they win over
	// Labels for the same key.
	// +optional
	LabelExprs []MapExpr `json:"labelExprs,omitempty"`
	// Annotations become spec.annotations of the generated variants.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// AnnotationExprs compute entries of spec.annotations with CEL; they win
	// over Annotations for the same key.
	// +optional
	AnnotationExprs []MapExpr `json:"annotationExprs,omitempty"`
	// PackageContext becomes spec.packageContext of the generated variants.
	// +optional
	PackageContext *PackageContextTemplate `json:"packageContext,omitempty"`
	// Pipeline becomes spec.pipeline of the generated variants.
	// +optional
	Pipeline *PipelineTemplate `json:"pipeline,omitempty"`
	// Injectors become spec.injectors of the generated variants.
	// +optional
	Injectors []InjectionSelectorTemplate `json:"injectors,omitempty"`
	// ServiceAccountName becomes spec.serviceAccountName of the generated
	// variants, and bounds what the set reads for this target: an object
	// an objectSelector selects is used only if this account may get it.
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
}

// DownstreamTemplate computes the downstream of a generated variant. At most
// one of repo and repoExpr, and of package and packageExpr, may be set.
type DownstreamTemplate struct {
	// Repo is the downstream repository name.
	// +optional
	Repo *string `json:"repo,omitempty"`
	// Package is the downstream package name.
	// +optional
	Package *string `json:"package,omitempty"`
	// RepoExpr computes the downstream repository name with CEL; it is
	// evaluated before the repository variable exists.
	// +optional
	RepoExpr *string `json:"repoExpr,omitempty"`
	// PackageExpr computes the downstream package name with CEL.
	// +optional
	PackageExpr *string `json:"packageExpr,omitempty"`
}

// PackageContextTemplate computes spec.packageContext; Expr entries win over
// plain ones.
type PackageContextTemplate struct {
	// Data entries to set in the package context.
	// +optional
	Data map[string]string `json:"data,omitempty"`
	// RemoveKeys to remove from the package context.
	// +optional
	RemoveKeys []string `json:"removeKeys,omitempty"`
	// DataExprs compute data entries with CEL.
	// +optional
	DataExprs []MapExpr `json:"dataExprs,omitempty"`
	// RemoveKeyExprs compute keys to remove with CEL.
	// +optional
	RemoveKeyExprs []string `json:"removeKeyExprs,omitempty"`
}

// InjectionSelectorTemplate computes one injector. Exactly one of name and
// nameExpr must be set.
type InjectionSelectorTemplate struct {
	// Group of the in-cluster object.
	// +optional
	Group *string `json:"group,omitempty"`
	// Version of the in-cluster object.
	// +optional
	Version *string `json:"version,omitempty"`
	// Kind of the in-cluster object.
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Name of the in-cluster object.
	// +optional
	Name *string `json:"name,omitempty"`
	// NameExpr computes the name of the in-cluster object with CEL.
	// +optional
	NameExpr *string `json:"nameExpr,omitempty"`
}

// MapExpr computes one map entry. At most one of key and keyExpr, and of
// value and valueExpr, may be set.
type MapExpr struct {
	// Key of the entry.
	// +optional
	Key *string `json:"key,omitempty"`
	// Value of the entry.
	// +optional
	Value *string `json:"value,omitempty"`
	// KeyExpr computes the key with CEL.
	// +optional
	KeyExpr *string `json:"keyExpr,omitempty"`
	// ValueExpr computes the value with CEL.
	// +optional
	ValueExpr *string `json:"valueExpr,omitempty"`
}

// PipelineTemplate computes spec.pipeline of the generated variants.
type PipelineTemplate struct {
	// Validators become spec.pipeline.validators.
	// +optional
	Validators []FunctionTemplate `json:"validators,omitempty"`
	// Mutators become spec.pipeline.mutators.
	// +optional
	Mutators []FunctionTemplate `json:"mutators,omitempty"`
}

// FunctionTemplate computes one pipeline function.
type FunctionTemplate struct {
	kptfilev1.Function `json:",inline"`

	// ConfigMapExprs compute entries of the function's configMap with CEL;
	// they win over configMap entries with the same key.
	// +optional
	ConfigMapExprs []MapExpr `json:"configMapExprs,omitempty"`
}

// PackageVariantSetStatus is the observed state of a PackageVariantSet.
type PackageVariantSetStatus struct {
	// ObservedGeneration is the metadata.generation of the spec the
	// controller last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Stalled (True when a person must act, for example on an
	// invalid spec), Ready (True when every generated variant exists with
	// the spec the set renders for it), RolledOut (with spec.rollout: True
	// when every variant carries the set's current change and published it)
	// and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DesiredVariants is how many PackageVariants the targets render to.
	// +optional
	DesiredVariants int32 `json:"desiredVariants,omitempty"`
	// ExistingVariants is how many PackageVariants of this set exist.
	// +optional
	ExistingVariants int32 `json:"existingVariants,omitempty"`
	// ReadyVariants is how many of them report Ready=True.
	// +optional
	ReadyVariants int32 `json:"readyVariants,omitempty"`
	// Rollout reports the progress of spec.rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// WavePhase is where a wave of a rollout stands.
type WavePhase string

const (
	// WavePending: an earlier wave has not finished.
	WavePending WavePhase = "Pending"
	// WaveWaitingForApproval: a Manual wave may start once approved.
	WaveWaitingForApproval WavePhase = "WaitingForApproval"
	// WaveProgressing: the wave's variants are getting the change.
	WaveProgressing WavePhase = "Progressing"
	// WaveSoaking: the wave before has finished; this one waits for the
	// soak time.
	WaveSoaking WavePhase = "Soaking"
	// WaveFinished: every variant of the wave published the change (or
	// failed, within maxFailures).
	WaveFinished WavePhase = "Finished"
	// WaveHalted: more variants failed than maxFailures allows.
	WaveHalted WavePhase = "Halted"
)

// RolloutStatus is the progress of a set's rollout.
type RolloutStatus struct {
	// ID names what is being rolled out: a short hash of the upstream
	// revision and the targets' templates.
	// +optional
	ID string `json:"id,omitempty"`
	// UpstreamRevision is the upstream revision being rolled out.
	// +optional
	UpstreamRevision int `json:"upstreamRevision,omitempty"`
	// CurrentWave is the wave started last; empty when none has.
	// +optional
	CurrentWave string `json:"currentWave,omitempty"`
	// Progress is "<finished>/<variants>" over every wave.
	// +optional
	Progress string `json:"progress,omitempty"`
	// Waves, in the order of spec.rollout.waves.
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`
	// Unassigned is how many variants no wave takes: they are held on
	// what they carry until a wave does.
	// +optional
	Unassigned int32 `json:"unassigned,omitempty"`
	// UnassignedVariants names the first of them (at most 20), in name
	// order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	UnassignedVariants []string `json:"unassignedVariants,omitempty"`
}

// MaxVariantStatesListed is how many variants a wave's status lists at most.
const MaxVariantStatesListed = 100

// VariantRolloutState is where a variant stands in its wave.
// +kubebuilder:validation:Enum=Open;WaitingForApproval;Blocked;Finished;Failed;Skipped
type VariantRolloutState string

const (
	// VariantOpen: the variant carries the change and has not published it.
	VariantOpen VariantRolloutState = "Open"
	// VariantWaitingForApproval: its draft or proposal waits for a person.
	VariantWaitingForApproval VariantRolloutState = "WaitingForApproval"
	// VariantBlocked: it cannot finish by the rules yet (readiness gates
	// not met, or its cluster does not run it healthy yet).
	VariantBlocked VariantRolloutState = "Blocked"
	// VariantFinished: it published the change (and, with
	// spec.rollout.health, its cluster runs it healthy).
	VariantFinished VariantRolloutState = "Finished"
	// VariantFailed: it failed; see spec.rollout.maxFailures.
	VariantFailed VariantRolloutState = "Failed"
	// VariantSkipped: SkipVariantsAnnotation passes it over.
	VariantSkipped VariantRolloutState = "Skipped"
)

// VariantState is where one variant stands in its wave's rollout.
type VariantState struct {
	// Name of the PackageVariant.
	Name string `json:"name"`
	// State of the variant.
	State VariantRolloutState `json:"state"`
	// Detail is the draft that waits for approval, what blocks the
	// variant, or why it failed.
	// +optional
	Detail string `json:"detail,omitempty"`
}

// WaveStatus is the progress of one wave.
type WaveStatus struct {
	// Name of the wave.
	Name string `json:"name"`
	// Variants is how many variants are in the wave.
	Variants int32 `json:"variants"`
	// Updated is how many of them carry the rollout's change.
	Updated int32 `json:"updated"`
	// Finished is how many of them published it.
	Finished int32 `json:"finished"`
	// Failed is how many of them failed (see spec.rollout.maxFailures).
	Failed int32 `json:"failed"`
	// Skipped is how many of them the rollout passes over
	// (SkipVariantsAnnotation).
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// Resumed is true when ResumeWaveAnnotation resumed the wave: its
	// failures halt nothing.
	// +optional
	Resumed bool `json:"resumed,omitempty"`
	// Phase of the wave.
	Phase WavePhase `json:"phase"`
	// VariantStates lists, in name order, the variants of the wave a person
	// looks for: those that failed or are skipped, and until the wave has
	// finished, every variant that carries the change (one not listed does
	// not carry it yet; once the wave has finished, one not listed has
	// finished). At most MaxVariantStatesListed; VariantStatesNotListed
	// counts the rest.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	VariantStates []VariantState `json:"variantStates,omitempty"`
	// VariantStatesNotListed is how many variants VariantStates leaves out.
	// +optional
	VariantStatesNotListed int32 `json:"variantStatesNotListed,omitempty"`
	// StartedAt is when the wave started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// FinishedAt is when it finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}
