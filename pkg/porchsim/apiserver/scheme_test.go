package apiserver

import (
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// TestSchemeConvertsBetweenVersionsByCopy proves the one-type, two-versions
// registration: a v1alpha1 body decodes to the internal version the
// storages get, and what they return encodes as v1alpha1.
func TestSchemeConvertsBetweenVersionsByCopy(t *testing.T) {
	body := `{"apiVersion":"porch.kpt.dev/v1alpha1","kind":"PackageRevision","metadata":{"name":"x","namespace":"ns"},` +
		`"spec":{"repository":"deploy","packageName":"app","workspaceName":"v1","lifecycle":"Draft"}}`
	decoder := Codecs.DecoderToVersion(Codecs.UniversalDeserializer(), internalGroupVersion)
	obj, gvk, err := decoder.Decode([]byte(body), nil, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	pr, ok := obj.(*porchv1alpha1.PackageRevision)
	if !ok || gvk.Version != "v1alpha1" || pr.Spec.RepositoryName != "deploy" || pr.Spec.WorkspaceName != "v1" {
		t.Fatalf("decoded %T %v %+v, want the PackageRevision", obj, gvk, pr)
	}
	// An object in the internal version carries no apiVersion and kind.
	if got := pr.GetObjectKind().GroupVersionKind(); !got.Empty() {
		t.Errorf("decoded object says it is %v, want no type information (internal version)", got)
	}

	var out strings.Builder
	encoder := Codecs.EncoderForVersion(jsonSerializer(t), porchv1alpha1.SchemeGroupVersion)
	if err := encoder.Encode(pr, &out); err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !strings.Contains(out.String(), `"apiVersion":"porch.kpt.dev/v1alpha1"`) || !strings.Contains(out.String(), `"repository":"deploy"`) {
		t.Errorf("encoded %s, want a porch.kpt.dev/v1alpha1 PackageRevision", out.String())
	}
}

func TestSchemeDecodesRequestOptions(t *testing.T) {
	query := url.Values{"dryRun": {"All"}, "fieldManager": {"kubectl"}}
	var opts metav1.CreateOptions
	if err := parameterCodec.DecodeParameters(query, schema.GroupVersion{Version: "v1"}, &opts); err != nil {
		t.Fatalf("decode create options: %v", err)
	}
	if len(opts.DryRun) != 1 || opts.DryRun[0] != "All" || opts.FieldManager != "kubectl" {
		t.Errorf("create options %+v, want dryRun All and fieldManager kubectl", opts)
	}
}

func TestSchemePassesEveryFieldLabelToTheSim(t *testing.T) {
	for _, kind := range []string{"PackageRevision", "PackageRevisionResources"} {
		for _, label := range []string{"spec.lifecycle", "spec.repository", "status.anything"} {
			gvk := porchv1alpha1.SchemeGroupVersion.WithKind(kind)
			l, v, err := Scheme.ConvertFieldLabel(gvk, label, "x")
			if err != nil || l != label || v != "x" {
				t.Errorf("%s field %s converted to %q=%q, %v; want it unchanged", kind, label, l, v, err)
			}
		}
	}
}

func jsonSerializer(t *testing.T) runtime.Serializer {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatalf("no JSON serializer")
	}
	return info.Serializer
}
