package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// Finalizer is kept on every PackageVariant until its downstream package
// revisions have been deleted or orphaned as its deletion policy says.
const Finalizer = "config.porch.kpt.dev/packagevariants"

// DraftWorkspacePrefix starts the workspace name of every draft a
// PackageVariant makes: packagevariant-1, -2, ..., as the reference
// controller numbers them. Porch names a draft
// <repo>.<package path with "/" as ".">.<workspace>, so the prefix limits
// the downstream names a variant can use.
const DraftWorkspacePrefix = "packagevariant-"

// ReplacingAnnotation marks a draft the controller has proposed on its way
// to deleting it: the draft was based on an old upstream and nobody had
// edited it, and a new draft from the upstream the value names replaces it.
// Proposing first makes Porch refuse a person's edit from then on (Porch
// ignores delete preconditions but not an update's resourceVersion). A
// Proposed revision carrying it is deleted by the controller's next sync,
// or set back to Draft if its files changed after all.
const ReplacingAnnotation = "config.porch.kpt.dev/replacing"

// DraftIDAnnotation carries a value the controller makes up for each draft
// it creates. Porch gives a draft deleted and made again under the same
// workspace the same name and the same UID; this value, recorded in
// status.applied.downstreamID, tells the variant's record of the first
// from the second.
const DraftIDAnnotation = "config.porch.kpt.dev/draft-id"

// PausedAnnotation, set to "true" on a PackageVariant or a
// PackageVariantSet by a person, makes its controller write nothing for it
// (no package revision, no variant) until it is removed; the object reports
// the condition Paused meanwhile.
const PausedAnnotation = "config.porch.kpt.dev/paused"

// Condition types and reasons a PackageVariant reports that other
// controllers read: a PackageVariantSet's rollout waits on Published and
// counts the reasons below as failures (something a person must fix).
const (
	// ConditionPublished is True when the downstream's latest Published
	// revision carries the variant's current upstream revision and changes
	// and no draft or proposal of the variant is open.
	ConditionPublished = "Published"
	// ConditionPaused is True while PausedAnnotation holds the object.
	ConditionPaused = "Paused"

	// ReasonWaitingForApproval: a draft or proposal of the variant waits
	// for a person (or a bot) to publish it.
	ReasonWaitingForApproval = "WaitingForApproval"
	// ReasonReadinessGatesNotMet: a draft or proposal of the variant has a
	// readiness gate whose condition is not True (a required injection
	// found no object), so it cannot be published by the rules; a
	// PackageVariantSet's rollout counts it as failed once it stays so past
	// spec.rollout.progressDeadlineSeconds.
	ReasonReadinessGatesNotMet = "ReadinessGatesNotMet"
	// ReasonNotPublished: the variant's change has no revision yet, or its
	// latest Published revision does not carry it.
	ReasonNotPublished = "NotPublished"
	// ReasonPublished: Published=True.
	ReasonPublished = "Published"
	// ReasonPaused: the object is paused by PausedAnnotation.
	ReasonPaused = "Paused"

	// ReasonRenderFailed: the downstream's pipeline did not render.
	ReasonRenderFailed = "RenderFailed"
	// ReasonRefused: Porch refused a write the variant needs.
	ReasonRefused = "Refused"
	// ReasonConflict: another variant controls the same downstream package.
	ReasonConflict = "Conflict"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packagevariants,scope=Namespaced,categories=porch
// +kubebuilder:printcolumn:name="Upstream Repo",type=string,JSONPath=`.spec.upstream.repo`,priority=1
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.spec.upstream.package`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.spec.upstream.revision`,priority=1
// +kubebuilder:printcolumn:name="Downstream Repo",type=string,JSONPath=`.spec.downstream.repo`
// +kubebuilder:printcolumn:name="Downstream",type=string,JSONPath=`.spec.downstream.package`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Published",type=string,JSONPath=`.status.conditions[?(@.type=="Published")].reason`
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.metadata.labels.config\.porch\.kpt\.dev/rollout-wave`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PackageVariant keeps one downstream package a customised copy of one
// upstream package. The controller creates Draft PackageRevisions of the
// downstream package (clone, edit or upgrade), applies the variant's
// mutations, and leaves proposing and approving them to people or other
// automation.
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which package to copy where, and how to customise it.
	// +optional
	Spec PackageVariantSpec `json:"spec,omitempty"`
	// Status reports whether the downstream is up to date.
	// +optional
	Status PackageVariantStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PackageVariantList is a list of PackageVariants.
type PackageVariantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageVariant `json:"items"`
}

// AdoptionPolicy says whether a variant takes over an existing downstream
// package revision it did not create.
type AdoptionPolicy string

// DeletionPolicy says what happens to the downstream package revisions when
// the variant is deleted.
type DeletionPolicy string

// UpgradePolicy says whether the controller makes upgrade drafts by itself.
type UpgradePolicy string

// Policy values.
const (
	// AdoptionPolicyAdoptExisting takes ownership of an existing downstream
	// package revision not controlled by anything else.
	AdoptionPolicyAdoptExisting AdoptionPolicy = "adoptExisting"
	// AdoptionPolicyAdoptNone (the default) ignores downstream package
	// revisions the variant did not create.
	AdoptionPolicyAdoptNone AdoptionPolicy = "adoptNone"

	// DeletionPolicyDelete (the default) deletes Draft and Proposed
	// downstream revisions and proposes deletion of Published ones.
	DeletionPolicyDelete DeletionPolicy = "delete"
	// DeletionPolicyOrphan only removes the variant's owner reference.
	DeletionPolicyOrphan DeletionPolicy = "orphan"

	// UpgradePolicyAutomatic (the default) makes an upgrade draft as soon as
	// the selected upstream revision changes.
	UpgradePolicyAutomatic UpgradePolicy = "Automatic"
	// UpgradePolicyManual never makes an upgrade draft by itself; it reports
	// the available upgrade in the UpgradeAvailable condition.
	UpgradePolicyManual UpgradePolicy = "Manual"
)

// PackageVariantSpec is the desired state of a PackageVariant.
type PackageVariantSpec struct {
	// Upstream is the package to copy. It must be Published.
	// +optional
	Upstream *Upstream `json:"upstream,omitempty"`
	// Downstream is the repository and package name of the copy.
	// +optional
	Downstream *Downstream `json:"downstream,omitempty"`

	// AdoptionPolicy is adoptNone (default) or adoptExisting.
	// +optional
	AdoptionPolicy AdoptionPolicy `json:"adoptionPolicy,omitempty"`
	// DeletionPolicy is delete (default) or orphan.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// UpgradePolicy is Automatic (default) or Manual. With Manual the
	// controller never makes an upgrade draft by itself and sets the
	// UpgradeAvailable condition instead.
	// +optional
	UpgradePolicy UpgradePolicy `json:"upgradePolicy,omitempty"`

	// Labels are set on a downstream PackageRevision when the controller
	// creates or adopts it, never afterwards.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are set on a downstream PackageRevision when the
	// controller creates or adopts it, never afterwards.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// PackageContext adds keys to, or removes keys from, the data of the
	// package's kptfile.kpt.dev ConfigMap (package-context.yaml).
	// +optional
	PackageContext *PackageContext `json:"packageContext,omitempty"`
	// Pipeline lists KRM functions prepended to the downstream Kptfile's
	// pipeline, named PackageVariant.<variant>.<function name>.<position>.
	// +optional
	Pipeline *kptfilev1.Pipeline `json:"pipeline,omitempty"`
	// Injectors select in-cluster objects, in the variant's namespace, whose
	// data (ConfigMaps) or spec (other kinds) is copied into the package's
	// injection points. They are tried in order; the first match wins.
	// +optional
	Injectors []InjectionSelector `json:"injectors,omitempty"`

	// ServiceAccountName names a ServiceAccount in the variant's namespace
	// whose permissions bound what the variant reads: an object is
	// injected only if this account may get it. Empty: the account the
	// controller's --default-service-account names, if any; without that
	// flag the controller reads with its own permissions.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// Upstream selects the upstream package revision. With neither revision nor
// workspaceName the latest Published revision is used and followed as new
// revisions are published.
type Upstream struct {
	// Repo is the name of the upstream Repository, in the variant's namespace.
	// +optional
	Repo string `json:"repo,omitempty"`
	// Package is the upstream package name.
	// +optional
	Package string `json:"package,omitempty"`
	// Revision selects Published revision N of the package.
	// +optional
	Revision int `json:"revision,omitempty"`
	// WorkspaceName selects the revision with this workspace name; when
	// revision is also set, both must name the same revision.
	// +optional
	WorkspaceName string `json:"workspaceName,omitempty"`
}

// Downstream names the repository and package the variant writes.
type Downstream struct {
	// Repo is the name of the downstream Repository, in the variant's namespace.
	// +optional
	Repo string `json:"repo,omitempty"`
	// Package is the downstream package name.
	// +optional
	Package string `json:"package,omitempty"`
}

// PackageContext lists keys to set in, and remove from, the data of the
// package's kptfile.kpt.dev ConfigMap. The keys name and package-path are
// reserved.
type PackageContext struct {
	// Data is set in the ConfigMap's data, overwriting existing values.
	// +optional
	Data map[string]string `json:"data,omitempty"`
	// RemoveKeys are removed from the ConfigMap's data.
	// +optional
	RemoveKeys []string `json:"removeKeys,omitempty"`
}

// InjectionSelector selects an in-cluster object to inject. Every field that
// is set must match the in-cluster object; the group, version and kind, when
// set, must also match the in-package injection point.
type InjectionSelector struct {
	// Group of the in-cluster object ("" for the core group).
	// +optional
	Group *string `json:"group,omitempty"`
	// Version of the in-cluster object.
	// +optional
	Version *string `json:"version,omitempty"`
	// Kind of the in-cluster object.
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Name of the in-cluster object, in the variant's namespace. Required.
	// +optional
	Name string `json:"name"`
}

// PackageVariantStatus is the observed state of a PackageVariant.
type PackageVariantStatus struct {
	// ObservedGeneration is the metadata.generation of the spec the
	// controller last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Stalled (True when a person must act, for example on an
	// invalid spec or a missing upstream), Ready (True when the downstream
	// is up to date), Published (True when that is published) and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// DownstreamTargets are the Draft and Proposed downstream revisions the
	// variant controls, or its latest Published one when there are none.
	// +optional
	DownstreamTargets []DownstreamTarget `json:"downstreamTargets,omitempty"`

	// Applied records what the controller last wrote into a downstream
	// package. It lets an up-to-date variant be recognised without reading
	// the package from Porch, and tells a draft the controller made and
	// nobody edited from one a person changed. Additive; not in the
	// reference controller.
	// +optional
	Applied *AppliedState `json:"applied,omitempty"`
}

// AppliedState is the controller's record of its last write to a
// downstream package.
type AppliedState struct {
	// Downstream is the name of the PackageRevision written.
	// +optional
	Downstream string `json:"downstream,omitempty"`
	// DownstreamID is the draft's config.porch.kpt.dev/draft-id annotation
	// when this was recorded: a draft of the same name with another value
	// is not the draft this record describes (a person deleted the draft
	// and the controller made it again).
	// +optional
	DownstreamID string `json:"downstreamID,omitempty"`
	// Upstream is the name of the upstream PackageRevision it was based on.
	// +optional
	Upstream string `json:"upstream,omitempty"`
	// InputsDigest is a SHA-256 over everything the mutations depend on: the
	// upstream, the variant's package context, pipeline and injectors, and
	// the content of the injected in-cluster objects.
	// +optional
	InputsDigest string `json:"inputsDigest,omitempty"`
	// ResourcesDigest is a SHA-256 over the package files as Porch stored
	// them after the controller's write. A draft whose files no longer match
	// was edited by someone else and is never replaced. Empty for a draft a
	// person edited, "unverified" for one whose files the controller cannot
	// tell from a person's (the variant says DraftUnverified), and
	// "created@<resourceVersion>" for a new draft not yet written into.
	// +optional
	ResourcesDigest string `json:"resourcesDigest,omitempty"`
	// Injected are the in-cluster objects the package's injection points
	// were matched against (whether found or not); the controller watches
	// them and reconciles the variant when one changes.
	// +optional
	Injected []InjectedObject `json:"injected,omitempty"`
}

// InjectedObject names an in-cluster object in the variant's namespace.
type InjectedObject struct {
	// APIVersion of the object, "group/version" or "v1".
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	Kind string `json:"kind"`
	// Name of the object.
	Name string `json:"name"`
}

// DownstreamTarget is a downstream PackageRevision and its render outcome.
type DownstreamTarget struct {
	// Name of the PackageRevision.
	// +optional
	Name string `json:"name,omitempty"`
	// RenderStatus is the outcome of the last render of the revision's
	// pipeline after the controller wrote it.
	// +optional
	RenderStatus porchv1alpha1.RenderStatus `json:"renderStatus,omitempty"`
}
