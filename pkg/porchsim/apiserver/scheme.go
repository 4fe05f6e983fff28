package apiserver

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// internalGroupVersion is the hub version k8s.io/apiserver converts every
// request body to before it reaches a REST storage.
var internalGroupVersion = schema.GroupVersion{Group: porchv1alpha1.GroupName, Version: runtime.APIVersionInternal}

var (
	// Scheme knows the porch.kpt.dev types the server serves, in
	// v1alpha1 and in the internal version, and the meta/v1 option types.
	Scheme = runtime.NewScheme()
	// Codecs encode and decode the types of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// parameterCodec decodes query parameters into option types.
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	utilruntime.Must(addToScheme(Scheme))
}

// addToScheme registers the Porch types the server serves.
//
// The server has no internal types of its own: the same Go types are
// registered for v1alpha1 and for the internal version. Converting between
// two kinds of one Go type is a copy that sets the kind, so a request body
// reaches the storage as the very PackageRevision the Sim understands, and
// the storage's answer is encoded back as v1alpha1.
func addToScheme(s *runtime.Scheme) error {
	if err := porchv1alpha1.AddToScheme(s); err != nil {
		return err
	}
	s.AddKnownTypes(internalGroupVersion,
		&porchv1alpha1.PackageRevision{},
		&porchv1alpha1.PackageRevisionList{},
		&porchv1alpha1.PackageRevisionResources{},
		&porchv1alpha1.PackageRevisionResourcesList{},
	)
	if err := s.SetVersionPriority(porchv1alpha1.SchemeGroupVersion); err != nil {
		return err
	}
	// Field selectors are converted per kind before a list or watch
	// reaches the storage; the default conversion knows only
	// metadata.name and metadata.namespace. The Sim decides which fields
	// Porch supports (and answers 400 for the others), so every label
	// passes through unchanged.
	for _, kind := range []string{"PackageRevision", "PackageRevisionResources"} {
		if err := s.AddFieldLabelConversionFunc(porchv1alpha1.SchemeGroupVersion.WithKind(kind), passFieldLabel); err != nil {
			return err
		}
	}
	// k8s.io/apiserver decodes create, update, delete, patch and get
	// options as the unversioned "v1" kinds (APIGroupInfo's
	// OptionsExternalVersion), so they and their url.Values conversions
	// must be known there.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
	return nil
}

func passFieldLabel(label, value string) (string, string, error) {
	return label, value, nil
}
