package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The types of spec.rollout and status.rollout: rolling a set's change out
// in waves.

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
