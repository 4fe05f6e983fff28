package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// +genclient
// +genclient:noStatus
// +genclient:onlyVerbs=get,list,update
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PackageRevisionResources holds the files of the PackageRevision of the same
// name. Updating it on a Draft stores the files and makes Porch render the
// package pipeline; the outcome comes back in status.renderStatus.
type PackageRevisionResources struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PackageRevisionResourcesSpec   `json:"spec,omitempty"`
	Status PackageRevisionResourcesStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PackageRevisionResourcesList is a list of PackageRevisionResources.
type PackageRevisionResourcesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []PackageRevisionResources `json:"items"`
}

// PackageRevisionResourcesSpec holds a package's files.
type PackageRevisionResourcesSpec struct {
	// PackageName is the package's path in its repository.
	// +optional
	PackageName string `json:"packageName,omitempty"`
	// WorkspaceName of the revision.
	// +optional
	WorkspaceName WorkspaceName `json:"workspaceName,omitempty"`
	// Revision number of the revision (0 until published).
	// +optional
	Revision int `json:"revision,omitempty"`
	// RepositoryName is the name of the Repository holding the package.
	// +optional
	RepositoryName string `json:"repository,omitempty"`
	// Resources maps a file path inside the package to the file's content.
	// +optional
	Resources map[string]string `json:"resources,omitempty"`
}

// PackageRevisionResourcesStatus is what Porch reports after storing files.
type PackageRevisionResourcesStatus struct {
	// RenderStatus is the outcome of rendering the package pipeline.
	// +optional
	RenderStatus RenderStatus `json:"renderStatus,omitempty"`
}

// RenderStatus is the outcome of rendering a package's pipeline. A render
// failure is reported here; it is not an API error.
type RenderStatus struct {
	// Result lists what each function did.
	// +optional
	Result kptfilev1.ResultList `json:"result,omitempty"`
	// Err is the render error, empty when rendering succeeded.
	// +optional
	Err string `json:"error"`
}
