package apis_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// samplesDir holds the YAML samples shipped for platform engineers and used
// as e2e fixtures; each file is one object.
var samplesDir = filepath.Join("..", "..", "deploy", "samples")

// sampleKinds maps every kind that must have a sample to the group version
// it is served in and a constructor of its Go type.
var sampleKinds = map[string]struct {
	gv     schema.GroupVersion
	newObj func() runtime.Object
}{
	"PackageVariant":           {configv1alpha1.SchemeGroupVersion, func() runtime.Object { return &configv1alpha1.PackageVariant{} }},
	"Repository":               {configv1alpha1.SchemeGroupVersion, func() runtime.Object { return &configv1alpha1.Repository{} }},
	"PackageVariantSet":        {configv1alpha2.SchemeGroupVersion, func() runtime.Object { return &configv1alpha2.PackageVariantSet{} }},
	"PackageRevision":          {porchv1alpha1.SchemeGroupVersion, func() runtime.Object { return &porchv1alpha1.PackageRevision{} }},
	"PackageRevisionResources": {porchv1alpha1.SchemeGroupVersion, func() runtime.Object { return &porchv1alpha1.PackageRevisionResources{} }},
}

// TestSamplesRoundTrip proves that every sample decodes strictly into its Go
// type (no unknown, duplicate or wrongly cased field) and that encoding the
// typed object again gives back exactly the sample: no field is lost,
// changed or added by the types.
func TestSamplesRoundTrip(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml"} {
		matches, err := filepath.Glob(filepath.Join(samplesDir, pattern))
		if err != nil {
			t.Fatalf("glob samples: %v", err)
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		t.Fatalf("no samples found in %s", samplesDir)
	}

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		configv1alpha1.AddToScheme,
		configv1alpha2.AddToScheme,
		porchv1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatalf("build scheme: %v", err)
		}
	}

	seen := map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		// Peek at the kind outside the subtest so that a sample failing
		// below still counts as present.
		var tm struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &tm); err == nil {
			seen[tm.Kind] = true
		}

		t.Run(filepath.Base(file), func(t *testing.T) {
			jsonData := singleObjectJSON(t, data)
			original := toMap(t, jsonData)

			apiVersion, _ := original["apiVersion"].(string)
			kind, _ := original["kind"].(string)
			want, ok := sampleKinds[kind]
			if !ok {
				t.Fatalf("kind %q (apiVersion %q) is not one of the sampled kinds", kind, apiVersion)
			}
			if wantAPIVersion := want.gv.String(); apiVersion != wantAPIVersion {
				t.Errorf("apiVersion of kind %s: got %q, want %q", kind, apiVersion, wantAPIVersion)
			}

			obj := want.newObj()
			// The Go type must be registered under the sample's group,
			// version and kind, or clients would send it elsewhere.
			gvks, _, err := scheme.ObjectKinds(obj)
			if err != nil {
				t.Fatalf("look up %T in scheme: %v", obj, err)
			}
			if wantGVK := want.gv.WithKind(kind); len(gvks) != 1 || gvks[0] != wantGVK {
				t.Errorf("%T is registered as %v, want [%v]", obj, gvks, wantGVK)
			}

			decodeStrict(t, jsonData, obj)
			assertRoundTrip(t, original, obj)

			// A deep copy must carry every field too, or listers' copies
			// would silently lose data.
			assertRoundTrip(t, original, obj.DeepCopyObject())

			if prr, ok := obj.(*porchv1alpha1.PackageRevisionResources); ok {
				t.Run("Kptfile", func(t *testing.T) {
					checkKptfile(t, prr)
				})
			}
		})
	}

	var missing []string
	for kind := range sampleKinds {
		if !seen[kind] {
			missing = append(missing, kind)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no sample in %s for kinds %v", samplesDir, missing)
	}
}

// checkKptfile decodes the Kptfile carried in a PackageRevisionResources
// sample strictly into the kpt.dev/v1 KptFile type and checks that it
// survives a round trip too.
func checkKptfile(t *testing.T, prr *porchv1alpha1.PackageRevisionResources) {
	t.Helper()
	content, ok := prr.Spec.Resources[kptfilev1.KptFileName]
	if !ok {
		t.Fatalf("spec.resources has no %s", kptfilev1.KptFileName)
	}
	jsonData := singleObjectJSON(t, []byte(content))
	original := toMap(t, jsonData)

	var kf kptfilev1.KptFile
	decodeStrict(t, jsonData, &kf)
	if kf.APIVersion != kptfilev1.KptFileAPIVersion || kf.Kind != kptfilev1.KptFileKind {
		t.Errorf("Kptfile apiVersion/kind: got %s/%s, want %s/%s",
			kf.APIVersion, kf.Kind, kptfilev1.KptFileAPIVersion, kptfilev1.KptFileKind)
	}
	assertRoundTrip(t, original, &kf)
	assertRoundTrip(t, original, kf.DeepCopy())
}

// singleObjectJSON converts a YAML file holding exactly one object to JSON,
// failing on duplicate keys. sigs.k8s.io/yaml would silently convert only the
// first of several documents, so the documents are counted first.
func singleObjectJSON(t *testing.T, data []byte) []byte {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("split YAML documents: %v", err)
		}
		// Skip documents holding only comments or whitespace.
		if j, err := yaml.YAMLToJSON(doc); err == nil && string(j) == "null" {
			continue
		}
		docs = append(docs, doc)
	}
	if len(docs) != 1 {
		t.Fatalf("want exactly one YAML document, got %d", len(docs))
	}
	jsonData, err := yaml.YAMLToJSONStrict(docs[0])
	if err != nil {
		t.Fatalf("convert YAML to JSON: %v", err)
	}
	return jsonData
}

// decodeStrict decodes JSON into obj the way the API server's strict field
// validation does: case-sensitive, rejecting unknown and duplicate fields.
func decodeStrict(t *testing.T, jsonData []byte, obj any) {
	t.Helper()
	strictErrs, err := sigsjson.UnmarshalStrict(jsonData, obj)
	if err != nil {
		t.Fatalf("decode into %T: %v", obj, err)
	}
	for _, e := range strictErrs {
		t.Errorf("strict decoding into %T: %v", obj, e)
	}
}

// assertRoundTrip encodes obj and compares the result with the original
// sample as generic maps.
func assertRoundTrip(t *testing.T, original map[string]any, obj any) {
	t.Helper()
	encoded, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encode %T: %v", obj, err)
	}
	got := toMap(t, encoded)
	pruneEmptyAdditions(got, original)
	if diff := cmp.Diff(original, got); diff != "" {
		t.Errorf("%T does not round-trip the sample (-sample +re-encoded):\n%s", obj, diff)
	}
}

// pruneEmptyAdditions removes from got, recursively, the keys that are absent
// from want and whose value is null or an empty object. encoding/json cannot
// omit a struct field (omitempty never applies to structs), so every Kubernetes
// type encodes an unset metadata.creationTimestamp as null and an unset status
// as {}; that is noise, not a change. Additions carrying a value, even an
// empty string, are kept so that they show up in the diff.
func pruneEmptyAdditions(got, want any) {
	switch g := got.(type) {
	case map[string]any:
		w, _ := want.(map[string]any)
		for k, v := range g {
			wv, inWant := w[k]
			pruneEmptyAdditions(v, wv)
			if inWant {
				continue
			}
			if m, ok := v.(map[string]any); v == nil || ok && len(m) == 0 {
				delete(g, k)
			}
		}
	case []any:
		w, _ := want.([]any)
		for i, v := range g {
			var wv any
			if i < len(w) {
				wv = w[i]
			}
			pruneEmptyAdditions(v, wv)
		}
	}
}

func toMap(t *testing.T, jsonData []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(jsonData, &m); err != nil {
		t.Fatalf("decode JSON into a map: %v", err)
	}
	return m
}
