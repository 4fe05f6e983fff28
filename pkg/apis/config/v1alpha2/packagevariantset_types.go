package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
