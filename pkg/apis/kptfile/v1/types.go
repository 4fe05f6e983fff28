package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KptFile is the kpt.dev/v1 Kptfile at the root of every kpt package.
type KptFile struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata of the package: its name is the package name.
	Metadata ObjectMeta `json:"metadata,omitempty"`
	// Upstream records where the package was cloned from.
	// +optional
	Upstream *Upstream `json:"upstream,omitempty"`
	// UpstreamLock pins the exact upstream commit the package was cloned from.
	// +optional
	UpstreamLock *UpstreamLock `json:"upstreamLock,omitempty"`
	// Info is descriptive metadata about the package.
	// +optional
	Info *PackageInfo `json:"info,omitempty"`
	// Pipeline is the list of KRM functions run when the package is rendered.
	// +optional
	Pipeline *Pipeline `json:"pipeline,omitempty"`
	// Inventory identifies the package's resources once applied to a cluster.
	// +optional
	Inventory *Inventory `json:"inventory,omitempty"`
	// Status carries the package's conditions (for example the config
	// injection conditions written by the PackageVariant controller).
	// +optional
	Status *Status `json:"status,omitempty"`
}

// ObjectMeta is the subset of object metadata a Kptfile carries.
type ObjectMeta struct {
	// Name of the package.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace, rarely set in a Kptfile.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Labels of the Kptfile object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the Kptfile object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// OriginType is the kind of source a package came from: "git" or "oci".
type OriginType string

// UpdateStrategyType is the merge strategy kpt uses to update a package from
// its upstream: resource-merge, fast-forward, force-delete-replace or copy-merge.
type UpdateStrategyType string

// Upstream records where a package was cloned from.
type Upstream struct {
	// Type of the upstream source: "git" or "oci".
	// +optional
	Type OriginType `json:"type,omitempty"`
	// Git locates the upstream package in a git repository.
	// +optional
	Git *Git `json:"git,omitempty"`
	// UpdateStrategy is how `kpt pkg update` merges upstream changes.
	// +optional
	UpdateStrategy UpdateStrategyType `json:"updateStrategy,omitempty"`
}

// Git locates a package in a git repository.
type Git struct {
	// Repo is the git repository URL.
	// +optional
	Repo string `json:"repo,omitempty"`
	// Directory is the package's path inside the repository.
	// +optional
	Directory string `json:"directory,omitempty"`
	// Ref is a branch, tag or commit.
	// +optional
	Ref string `json:"ref,omitempty"`
}

// UpstreamLock pins the exact upstream a package was cloned from.
type UpstreamLock struct {
	// Type of the upstream source: "git" or "oci".
	// +optional
	Type OriginType `json:"type,omitempty"`
	// Git pins the upstream commit.
	// +optional
	Git *GitLock `json:"git,omitempty"`
}

// GitLock pins a package to a commit of a git repository.
type GitLock struct {
	// Repo is the git repository URL.
	// +optional
	Repo string `json:"repo,omitempty"`
	// Directory is the package's path inside the repository.
	// +optional
	Directory string `json:"directory,omitempty"`
	// Ref is the branch or tag the commit was resolved from; Porch writes
	// "<package>/v<revision>" for a published upstream revision.
	// +optional
	Ref string `json:"ref,omitempty"`
	// Commit is the resolved commit SHA.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// PackageInfo is descriptive metadata about a package.
type PackageInfo struct {
	// Site is a URL for the package's home page.
	// +optional
	Site string `json:"site,omitempty"`
	// Emails of the package's maintainers.
	// +optional
	Emails []string `json:"emails,omitempty"`
	// License is the SPDX license identifier of the package.
	// +optional
	License string `json:"license,omitempty"`
	// LicenseFile is the path of the license file inside the package.
	// +optional
	LicenseFile string `json:"licenseFile,omitempty"`
	// Description is a short description of the package.
	// +optional
	Description string `json:"description,omitempty"`
	// Keywords for finding the package.
	// +optional
	Keywords []string `json:"keywords,omitempty"`
	// Man is the path of the package's manual page.
	// +optional
	Man string `json:"man,omitempty"`
	// ReadinessGates are conditions that must be True before the package can
	// be published to a deployment repository. Porch mirrors them into the
	// PackageRevision's spec.readinessGates.
	// +optional
	ReadinessGates []ReadinessGate `json:"readinessGates,omitempty"`
}

// ReadinessGate names a condition that gates publishing.
type ReadinessGate struct {
	// ConditionType is the type of the condition that must be True.
	ConditionType string `json:"conditionType"`
}

// Pipeline is the list of KRM functions run when a package is rendered:
// mutators first, in order, then validators.
type Pipeline struct {
	// Mutators are functions that may change resources, run in order.
	// +optional
	Mutators []Function `json:"mutators,omitempty"`
	// Validators are functions that check resources without changing them.
	// +optional
	Validators []Function `json:"validators,omitempty"`
}

// Function is one KRM function in a pipeline.
type Function struct {
	// Image is the container image of the function, for example
	// gcr.io/kpt-fn/set-namespace:v0.4.1.
	// +optional
	Image string `json:"image,omitempty"`
	// Exec is the path of an executable run as the function instead of an image.
	// +optional
	Exec string `json:"exec,omitempty"`
	// ConfigPath is the path, inside the package, of the function's config file.
	// +optional
	ConfigPath string `json:"configPath,omitempty"`
	// ConfigMap is the function's config as inline key/value pairs.
	// +optional
	ConfigMap map[string]string `json:"configMap,omitempty"`
	// Name identifies the function in the pipeline. Functions added by a
	// PackageVariant are named PackageVariant.<variant>.<name>.<position>.
	// +optional
	Name string `json:"name,omitempty"`
	// Selectors limit the function to the resources that match any of them.
	// +optional
	Selectors []Selector `json:"selectors,omitempty"`
	// Exclusions keep the function away from the resources that match any of them.
	// +optional
	Exclusions []Selector `json:"exclude,omitempty"`
}

// Selector matches package resources by their identity and metadata; every
// field that is set must match.
type Selector struct {
	// APIVersion of the resources to match.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the resources to match.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the resources to match.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the resources to match.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Labels the resources must all carry.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations the resources must all carry.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Inventory identifies a package's resources once applied to a cluster.
type Inventory struct {
	// Namespace of the inventory object.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name of the inventory object.
	// +optional
	Name string `json:"name,omitempty"`
	// InventoryID is the unique identifier of the inventory.
	// +optional
	InventoryID string `json:"inventoryID,omitempty"`
	// Labels of the inventory object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the inventory object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Status is the status section of a Kptfile.
type Status struct {
	// Conditions of the package.
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
	// RenderStatus is what the last render of the package's pipeline did,
	// function by function; Porch (kpt 1.0.0-beta.62 and later) writes it
	// with the Rendered condition.
	// +optional
	RenderStatus *RenderStatus `json:"renderStatus,omitempty"`
}

// RenderStatus is the outcome of rendering a package's pipeline.
type RenderStatus struct {
	// MutationSteps are the mutators that ran, in order.
	// +optional
	MutationSteps []PipelineStepResult `json:"mutationSteps,omitempty"`
	// ValidationSteps are the validators that ran, in order.
	// +optional
	ValidationSteps []PipelineStepResult `json:"validationSteps,omitempty"`
	// ErrorSummary names the failed steps, one per line, when the render
	// failed.
	// +optional
	ErrorSummary string `json:"errorSummary,omitempty"`
}

// PipelineStepResult is the outcome of one function of the pipeline.
type PipelineStepResult struct {
	// Name of the function in the pipeline, if it has one.
	// +optional
	Name string `json:"name,omitempty"`
	// Image of the function.
	// +optional
	Image string `json:"image,omitempty"`
	// ExecPath of the function, when it is an executable.
	// +optional
	ExecPath string `json:"exec,omitempty"`
	// ExecutionError is why the function could not run at all.
	// +optional
	ExecutionError string `json:"executionError,omitempty"`
	// Stderr is what the function wrote to its standard error.
	// +optional
	Stderr string `json:"stderr,omitempty"`
	// ExitCode of the function.
	ExitCode int `json:"exitCode"`
	// Results are the function's structured messages.
	// +optional
	Results []ResultItem `json:"results,omitempty"`
	// ErrorResults are the results of error severity.
	// +optional
	ErrorResults []ResultItem `json:"errorResults,omitempty"`
}

// ConditionStatus is "True", "False" or "Unknown".
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Condition is a condition of a package, in the Kptfile's status.
type Condition struct {
	// Type of the condition, for example config.injection.ConfigMap.region.
	Type string `json:"type"`
	// Status of the condition: True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// Reason is a one-word, CamelCase reason for the status.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResultList is the kpt.dev/v1 FunctionResultList: the outcome of rendering
// a package's pipeline.
type ResultList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata; Porch always sends it (often only
	// creationTimestamp: null).
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// ExitCode is 0 when every function succeeded.
	// +optional
	ExitCode int `json:"exitCode"`
	// Items holds one result per function run.
	// +optional
	Items []Result `json:"items,omitempty"`
}

// Result is the outcome of one function run.
type Result struct {
	// Image of the function that ran.
	// +optional
	Image string `json:"image,omitempty"`
	// ExecPath of the function that ran, when it is an executable.
	// +optional
	ExecPath string `json:"exec,omitempty"`
	// Stderr is what the function wrote to its standard error.
	// +optional
	Stderr string `json:"stderr,omitempty"`
	// ExitCode of the function.
	// +optional
	ExitCode int `json:"exitCode"`
	// Results are the structured messages the function reported.
	// +optional
	Results []ResultItem `json:"results,omitempty"`
}

// ResultItem is one structured message from a function.
type ResultItem struct {
	// Message is the human readable message.
	// +optional
	Message string `json:"message,omitempty"`
	// Severity is error, warning or info.
	// +optional
	Severity string `json:"severity,omitempty"`
	// ResourceRef identifies the resource the message is about.
	// +optional
	ResourceRef *ResourceIdentifier `json:"resourceRef,omitempty"`
	// Field identifies the field the message is about.
	// +optional
	Field *Field `json:"field,omitempty"`
	// File identifies the file the message is about.
	// +optional
	File *File `json:"file,omitempty"`
	// Tags are free-form key/value pairs for tooling.
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
}

// ResourceIdentifier identifies a resource in a package.
type ResourceIdentifier struct {
	// APIVersion of the resource.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the resource.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name of the resource.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace of the resource.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Field identifies a field of a resource and, optionally, its current and
// proposed values.
type Field struct {
	// Path of the field, for example spec.replicas.
	// +optional
	Path string `json:"path,omitempty"`
	// CurrentValue is the field's value now; any JSON value.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	CurrentValue *RawValue `json:"currentValue,omitempty"`
	// ProposedValue is the value the function suggests; any JSON value.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	ProposedValue *RawValue `json:"proposedValue,omitempty"`
}

// File identifies a position in a file of the package.
type File struct {
	// Path of the file inside the package.
	// +optional
	Path string `json:"path,omitempty"`
	// Index of the object in a multi-object file.
	// +optional
	Index int `json:"index,omitempty"`
}

// RawValue holds any JSON value (string, number, object ...) verbatim.
type RawValue struct {
	Raw []byte `json:"-"`
}

// MarshalJSON writes the stored JSON as it is, or null when empty.
func (v RawValue) MarshalJSON() ([]byte, error) {
	if len(v.Raw) == 0 {
		return []byte("null"), nil
	}
	return v.Raw, nil
}

// UnmarshalJSON keeps a copy of the JSON value (encoding/json has already
// checked that it is valid).
func (v *RawValue) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		v.Raw = nil
		return nil
	}
	v.Raw = append(v.Raw[:0], data...)
	return nil
}
