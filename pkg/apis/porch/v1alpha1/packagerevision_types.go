package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// LatestPackageRevisionLabel marks the latest Published revision of a package.
const LatestPackageRevisionLabel = "kpt.dev/latest-revision"

// PushOnRenderFailureAnnotation, set to "true" on a PackageRevision, makes
// Porch store the files of a resources update even when the pipeline fails
// to render them (the update is still answered with an error, and the
// Kptfile records a Rendered=False condition).
const PushOnRenderFailureAnnotation = "porch.kpt.dev/push-on-render-failure"

// PlaceholderRevision is spec.revision of the placeholder PackageRevision that
// tracks a repository branch (workspace "main"); Porch refuses to clone or
// edit from it.
const PlaceholderRevision = -1

// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PackageRevision is one revision of a package in a Porch repository: a Draft,
// Proposed, Published or DeletionProposed copy of the package's files, plus
// the history of tasks that made it.
type PackageRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageRevisionSpec   `json:"spec,omitempty"`
	Status PackageRevisionStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PackageRevisionList is a list of PackageRevisions.
type PackageRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageRevision `json:"items"`
}

// PackageRevisionLifecycle is the lifecycle stage of a PackageRevision.
type PackageRevisionLifecycle string

// Lifecycle stages.
const (
	PackageRevisionLifecycleDraft            PackageRevisionLifecycle = "Draft"
	PackageRevisionLifecycleProposed         PackageRevisionLifecycle = "Proposed"
	PackageRevisionLifecyclePublished        PackageRevisionLifecycle = "Published"
	PackageRevisionLifecycleDeletionProposed PackageRevisionLifecycle = "DeletionProposed"
)

// WorkspaceName is the name of a PackageRevision's workspace, unique among the
// revisions of its package.
type WorkspaceName string

// PackageRevisionSpec is the desired state of a PackageRevision.
type PackageRevisionSpec struct {
	// PackageName is the package's path in its repository; it may contain
	// "/" for a nested package.
	// +optional
	PackageName string `json:"packageName,omitempty"`
	// RepositoryName is the name of the Repository object holding the package.
	// +optional
	RepositoryName string `json:"repository,omitempty"`
	// WorkspaceName identifies this revision among the package's revisions.
	// +optional
	WorkspaceName WorkspaceName `json:"workspaceName,omitempty"`
	// Revision is 0 for a Draft or Proposed revision, 1..N once Published,
	// and -1 for the placeholder revision that tracks a branch.
	// +optional
	Revision int `json:"revision,omitempty"`
	// Parent is deprecated and unused by the controllers.
	// +optional
	Parent *ParentReference `json:"parent,omitempty"`
	// Lifecycle is Draft, Proposed, Published or DeletionProposed.
	// +optional
	Lifecycle PackageRevisionLifecycle `json:"lifecycle,omitempty"`
	// Tasks is the history of the revision; a create carries exactly one task
	// which decides how the draft is made.
	// +optional
	Tasks []Task `json:"tasks,omitempty"`
	// ReadinessGates are conditions that must be True before publishing;
	// Porch mirrors them from the Kptfile's info.readinessGates.
	// +optional
	ReadinessGates []ReadinessGate `json:"readinessGates,omitempty"`
	// PackageMetadata holds package-level labels and annotations.
	// +optional
	PackageMetadata *PackageMetadata `json:"packageMetadata,omitempty"`
}

// ParentReference names a parent PackageRevision (deprecated).
type ParentReference struct {
	// Name of the parent PackageRevision.
	Name string `json:"name"`
}

// PackageMetadata holds package-level labels and annotations.
type PackageMetadata struct {
	// Labels of the package.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the package.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ReadinessGate names a condition that must be True before publishing.
type ReadinessGate struct {
	// ConditionType is the type of the gating condition.
	ConditionType string `json:"conditionType,omitempty"`
}

// TaskType is the kind of a task in a PackageRevision's history.
type TaskType string

// Task types.
const (
	TaskTypeInit    TaskType = "init"
	TaskTypeClone   TaskType = "clone"
	TaskTypeEdit    TaskType = "edit"
	TaskTypeUpgrade TaskType = "upgrade"
	TaskTypeRender  TaskType = "render"
	TaskTypePush    TaskType = "push"
	TaskTypeEval    TaskType = "eval"
	TaskTypeUpdate  TaskType = "update"
)

// Task is one step in a PackageRevision's history. Exactly the field that
// matches Type is set.
type Task struct {
	// Type of the task: init, clone, edit, upgrade, render or push.
	Type TaskType `json:"type"`
	// Init creates a new, empty package.
	// +optional
	Init *PackageInitTaskSpec `json:"init,omitempty"`
	// Clone copies an upstream package into a package new to the repository.
	// +optional
	Clone *PackageCloneTaskSpec `json:"clone,omitempty"`
	// Edit copies a published revision of the same package into a new draft.
	// +optional
	Edit *PackageEditTaskSpec `json:"edit,omitempty"`
	// Upgrade three-way merges a new upstream into a published local revision.
	// +optional
	Upgrade *PackageUpgradeTaskSpec `json:"upgrade,omitempty"`
	// Update is the older form of an upstream update.
	// +optional
	Update *PackageUpdateTaskSpec `json:"update,omitempty"`
	// Eval ran a function (older Porch versions).
	// +optional
	Eval *FunctionEvalTaskSpec `json:"eval,omitempty"`
}

// PackageInitTaskSpec creates a new package.
type PackageInitTaskSpec struct {
	// Subpackage is a directory path to a subpackage to initialize.
	// +optional
	Subpackage string `json:"subpackage,omitempty"`
	// Description of the new package.
	// +optional
	Description string `json:"description,omitempty"`
	// Keywords of the new package.
	// +optional
	Keywords []string `json:"keywords,omitempty"`
	// Site is the package's home page.
	// +optional
	Site string `json:"site,omitempty"`
}

// PackageMergeStrategy is how an upgrade or clone merges packages.
type PackageMergeStrategy string

// Merge strategies.
const (
	ResourceMerge      PackageMergeStrategy = "resource-merge"
	FastForward        PackageMergeStrategy = "fast-forward"
	ForceDeleteReplace PackageMergeStrategy = "force-delete-replace"
	CopyMerge          PackageMergeStrategy = "copy-merge"
)

// PackageCloneTaskSpec copies an upstream package.
type PackageCloneTaskSpec struct {
	// Upstream is the package to clone.
	// +optional
	Upstream UpstreamPackage `json:"upstreamRef,omitempty"`
	// Strategy for merging when the destination exists.
	// +optional
	Strategy PackageMergeStrategy `json:"strategy,omitempty"`
}

// RepositoryType is the storage type of a repository: git or oci.
type RepositoryType string

// UpstreamPackage locates an upstream package: a PackageRevision known to
// Porch (UpstreamRef), or a raw git or OCI location.
type UpstreamPackage struct {
	// Type of a raw upstream: git or oci.
	// +optional
	Type RepositoryType `json:"type,omitempty"`
	// Git locates a raw git upstream.
	// +optional
	Git *GitPackage `json:"git,omitempty"`
	// Oci locates a raw OCI upstream.
	// +optional
	Oci *OciPackage `json:"oci,omitempty"`
	// UpstreamRef names a PackageRevision known to Porch.
	// +optional
	UpstreamRef *PackageRevisionRef `json:"upstreamRef,omitempty"`
}

// GitPackage locates a package in a git repository.
type GitPackage struct {
	// Repo is the git repository URL.
	Repo string `json:"repo"`
	// Ref is a branch, tag or commit.
	Ref string `json:"ref"`
	// Directory is the package's path in the repository.
	Directory string `json:"directory"`
	// SecretRef names the Secret with credentials.
	// +optional
	SecretRef SecretRef `json:"secretRef,omitempty"`
}

// OciPackage locates a package in an OCI registry.
type OciPackage struct {
	// Image is the OCI image of the package.
	Image string `json:"image"`
}

// SecretRef names a Secret in the same namespace.
type SecretRef struct {
	// Name of the Secret.
	Name string `json:"name"`
}

// PackageRevisionRef names a PackageRevision in the same namespace.
type PackageRevisionRef struct {
	// Name of the PackageRevision.
	Name string `json:"name"`
}

// PackageEditTaskSpec makes a new draft from a published revision of the
// same package.
type PackageEditTaskSpec struct {
	// Source is the published revision to copy.
	// +optional
	Source *PackageRevisionRef `json:"sourceRef,omitempty"`
}

// PackageUpgradeTaskSpec three-way merges a new upstream into a local
// revision: all three must be Published.
type PackageUpgradeTaskSpec struct {
	// OldUpstream is the upstream revision the local revision was made from.
	OldUpstream PackageRevisionRef `json:"oldUpstreamRef,omitempty"`
	// NewUpstream is the upstream revision to upgrade to.
	NewUpstream PackageRevisionRef `json:"newUpstreamRef,omitempty"`
	// LocalPackageRevisionRef is the published downstream revision to upgrade.
	LocalPackageRevisionRef PackageRevisionRef `json:"localPackageRevisionRef,omitempty"`
	// Strategy of the merge; the controllers use resource-merge.
	// +optional
	Strategy PackageMergeStrategy `json:"strategy,omitempty"`
}

// PackageUpdateTaskSpec is the older form of an upstream update.
type PackageUpdateTaskSpec struct {
	// Upstream is the new upstream.
	// +optional
	Upstream UpstreamPackage `json:"upstreamRef,omitempty"`
}

// FunctionEvalTaskSpec ran one function (older Porch versions).
type FunctionEvalTaskSpec struct {
	// Image of the function.
	// +optional
	Image string `json:"image,omitempty"`
	// ConfigMap is the function's inline config.
	// +optional
	ConfigMap map[string]string `json:"configMap,omitempty"`
	// Match selects the resources the function ran on.
	// +optional
	Match Selector `json:"match,omitempty"`
	// EnableExecFunctions allowed exec functions.
	// +optional
	EnableExecFunctions bool `json:"enableExecFunctions,omitempty"`
	// ExecPath is the executable run as the function.
	// +optional
	ExecPath string `json:"execPath,omitempty"`
}

// Selector matches resources by identity.
type Selector struct {
	// APIVersion to match.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind to match.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name to match.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace to match.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// PackageRevisionStatus is the observed state of a PackageRevision.
type PackageRevisionStatus struct {
	// UpstreamLock pins the upstream this revision was cloned or upgraded
	// from. For a published upstream, git.ref ends in "v<revision>"; a ref
	// starting with "drafts/" means the upstream was an unpublished draft.
	// +optional
	UpstreamLock *UpstreamLock `json:"upstreamLock,omitempty"`
	// SelfLock pins this revision's own location in its repository.
	// +optional
	SelfLock *UpstreamLock `json:"selfLock,omitempty"`
	// PublishedBy is the identity that approved the revision.
	// +optional
	PublishedBy string `json:"publishedBy,omitempty"`
	// PublishedAt is when the revision was published.
	// +optional
	PublishedAt *metav1.Time `json:"publishTimestamp,omitempty"`
	// Deployment is true when the revision is in a deployment repository.
	// +optional
	Deployment bool `json:"deployment,omitempty"`
	// Conditions mirror the Kptfile's status.conditions.
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
}

// UpstreamLock pins an upstream.
type UpstreamLock struct {
	// Type of the upstream: git or oci.
	// +optional
	Type RepositoryType `json:"type,omitempty"`
	// Git pins a git upstream.
	// +optional
	Git *kptfilev1.GitLock `json:"git,omitempty"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is a condition of a PackageRevision.
type Condition struct {
	// Type of the condition.
	Type string `json:"type"`
	// Status: True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// Reason is a one-word, CamelCase reason.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
}
