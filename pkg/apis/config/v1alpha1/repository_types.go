package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=repositories,scope=Namespaced,categories=porch
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Deployment",type=boolean,JSONPath=`.spec.deployment`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`

// Repository registers a git repository or OCI registry with Porch. Porch
// installs and owns this CRD; the controllers only read Repositories (their
// name, labels, annotations, spec.deployment and spec.git.branch).
type Repository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec RepositorySpec `json:"spec,omitempty"`
	// +optional
	Status RepositoryStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// RepositoryList is a list of Repositories.
type RepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Repository `json:"items"`
}

// RepositoryType is git or oci.
type RepositoryType string

// Repository types.
const (
	RepositoryTypeGit RepositoryType = "git"
	RepositoryTypeOCI RepositoryType = "oci"
)

// RepositoryContent is what a repository holds; Porch only supports Package.
type RepositoryContent string

// RepositorySpec is the desired state of a Repository.
type RepositorySpec struct {
	// Description of the repository.
	// +optional
	Description string `json:"description,omitempty"`
	// Deployment is true for a repository of packages ready to deploy; Porch
	// then adds a package context to every package cloned into it.
	// +optional
	Deployment bool `json:"deployment,omitempty"`
	// Type is git or oci.
	// +optional
	Type RepositoryType `json:"type,omitempty"`
	// Content is the kind of content stored (Package).
	// +optional
	Content RepositoryContent `json:"content,omitempty"`
	// Sync controls when Porch re-reads the repository.
	// +optional
	Sync *RepositorySync `json:"sync,omitempty"`
	// Git locates a git repository.
	// +optional
	Git *GitRepository `json:"git,omitempty"`
	// Oci locates an OCI registry.
	// +optional
	Oci *OciRepository `json:"oci,omitempty"`
}

// RepositorySync controls when Porch re-reads a repository.
type RepositorySync struct {
	// RunOnceAt asks for one sync at this time.
	// +optional
	RunOnceAt *metav1.Time `json:"runOnceAt,omitempty"`
	// Schedule is a cron expression for periodic syncs.
	// +optional
	Schedule string `json:"schedule,omitempty"`
}

// GitRepository locates a git repository.
type GitRepository struct {
	// Repo is the repository URL.
	// +optional
	Repo string `json:"repo"`
	// Branch holding the packages (default main).
	// +optional
	Branch string `json:"branch,omitempty"`
	// CreateBranch creates the branch when it is missing.
	// +optional
	CreateBranch bool `json:"createBranch,omitempty"`
	// Directory inside the repository holding the packages.
	// +optional
	Directory string `json:"directory,omitempty"`
	// SecretRef names the Secret with credentials.
	// +optional
	SecretRef SecretRef `json:"secretRef,omitempty"`
	// Author of the commits Porch makes.
	// +optional
	Author string `json:"author,omitempty"`
	// Email of the author of the commits Porch makes.
	// +optional
	Email string `json:"email,omitempty"`
}

// OciRepository locates an OCI registry.
type OciRepository struct {
	// Registry is the registry address.
	// +optional
	Registry string `json:"registry"`
	// SecretRef names the Secret with credentials.
	// +optional
	SecretRef SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a Secret in the same namespace.
type SecretRef struct {
	// Name of the Secret.
	// +optional
	Name string `json:"name"`
}

// RepositoryStatus is the observed state of a Repository.
type RepositoryStatus struct {
	// Conditions reported by Porch (Ready).
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
