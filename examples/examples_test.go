// Package examples holds no code: its test proves that the example fleet and
// package under this directory are objects the controllers accept, field by
// field. What the fleet renders to is tested with variantctl
// (cmd/variantctl), which runs the real controllers on it.
package examples

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/config/validation"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/celtemplate"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

const (
	// namespace is where every fleet object lives: variants and sets see
	// Repositories and injected objects only in their own namespace.
	namespace  = "platform"
	fleetDir   = "fleet"
	packageDir = "packages/app"
)

var kptfileGVK = schema.GroupVersionKind{Group: "kpt.dev", Version: "v1", Kind: kptfilev1.KptFileKind}

// kinds are the kinds the examples may hold, each with its Go type. A kind
// missing here fails the test: add its type rather than skip it, so that
// every document is checked field by field.
var kinds = map[schema.GroupVersionKind]func() any{
	configv1alpha1.SchemeGroupVersion.WithKind("PackageVariant"):    func() any { return &configv1alpha1.PackageVariant{} },
	configv1alpha1.SchemeGroupVersion.WithKind("Repository"):        func() any { return &configv1alpha1.Repository{} },
	configv1alpha2.SchemeGroupVersion.WithKind("PackageVariantSet"): func() any { return &configv1alpha2.PackageVariantSet{} },
	kptfileGVK: func() any { return &kptfilev1.KptFile{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):                 func() any { return &corev1.ConfigMap{} },
	corev1.SchemeGroupVersion.WithKind("Service"):                   func() any { return &corev1.Service{} },
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                func() any { return &appsv1.Deployment{} },
	{Group: "fn.kpt.dev", Version: "v1alpha1", Kind: "StarlarkRun"}: func() any { return &starlarkRun{} },
}

// starlarkRun is the configuration of the starlark function
// (fn.kpt.dev/v1alpha1 StarlarkRun, as krm-functions-catalog defines it).
type starlarkRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	// Params are handed to the script as functionConfig.params.
	Params map[string]any `json:"params,omitempty"`
	// Source is the script.
	Source string `json:"source"`
}

// document is one YAML document of an example file, decoded.
type document struct {
	file  string // slash-separated, relative to examples/
	index int    // position among the file's non-empty documents
	gvk   schema.GroupVersionKind
	obj   any            // the typed object, from kinds
	raw   map[string]any // the same document, generically
}

func (d document) String() string {
	return fmt.Sprintf("%s#%d (%s)", d.file, d.index, d.gvk.Kind)
}

// TestExamplesDecodeStrictly decodes every document under examples/ into
// its Go type, rejecting unknown, duplicate and wrongly cased fields, and
// runs the checks the controllers run before they act: a variant with a
// validation problem or a set with a broken CEL expression would only get
// a Stalled condition.
func TestExamplesDecodeStrictly(t *testing.T) {
	docs := loadDocuments(t, ".")
	seen := map[string]int{}
	for _, d := range docs {
		seen[d.gvk.Kind]++
		t.Run(d.String(), func(t *testing.T) {
			switch obj := d.obj.(type) {
			case *configv1alpha1.PackageVariant:
				checkNamespace(t, obj.ObjectMeta)
				if errs := validation.ValidatePackageVariant(obj); len(errs) > 0 {
					t.Errorf("PackageVariant %s is invalid:\n%s", obj.Name, strings.Join(validation.Messages(errs), "\n"))
				}
			case *configv1alpha2.PackageVariantSet:
				checkNamespace(t, obj.ObjectMeta)
				cel := celtemplate.NewCache(celtemplate.Options{})
				set := celtemplate.SetKey{UID: obj.UID, Generation: obj.Generation}
				check := func(fldPath *field.Path, expr string, withRepository bool) error {
					return cel.Check(set, fldPath.String(), expr, withRepository)
				}
				if errs := validation.ValidatePackageVariantSet(obj, check); len(errs) > 0 {
					t.Errorf("PackageVariantSet %s is invalid:\n%s", obj.Name, strings.Join(validation.Messages(errs), "\n"))
				}
			case *configv1alpha1.Repository:
				checkNamespace(t, obj.ObjectMeta)
			case *kptfilev1.KptFile:
				if want := path.Base(path.Dir(d.file)); obj.Metadata.Name != want {
					t.Errorf("Kptfile metadata.name is %q, want the package directory name %q", obj.Metadata.Name, want)
				}
			case *corev1.ConfigMap:
				if strings.HasPrefix(d.file, fleetDir+"/") {
					checkNamespace(t, obj.ObjectMeta)
				}
			}
		})
	}
	// Guard against a walk that finds nothing and proves nothing.
	for _, kind := range []string{"PackageVariant", "PackageVariantSet", "Repository", kptfilev1.KptFileKind, "ConfigMap", "Deployment", "Service"} {
		if seen[kind] == 0 {
			t.Errorf("no %s found under examples/", kind)
		}
	}
}

// TestStrictDecodingCatchesTypos proves that the decoding above is strict
// enough: one misspelt field in an otherwise valid example must fail it.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	cases := map[string]struct {
		file     string
		old, new string
	}{
		"misspelt field in a set template":        {file: "fleet/edge-set.yaml", old: "nameExpr:", new: "nameExp:"},
		"wrongly cased field in a set template":   {file: "fleet/edge-set.yaml", old: "valueExpr:", new: "valueexpr:"},
		"misspelt field in a variant":             {file: "fleet/staging-variant.yaml", old: "injectors:", new: "injector:"},
		"misspelt field in a repository":          {file: "fleet/repositories.yaml", old: "deployment: true", new: "deploy: true"},
		"misspelt field in the Kptfile":           {file: "packages/app/Kptfile", old: "mutators:", new: "mutator:"},
		"misspelt field in a package resource":    {file: "packages/app/deployment.yaml", old: "containerPort:", new: "containerport:"},
		"number where a ConfigMap wants a string": {file: "fleet/region-configs.yaml", old: "region: us-east", new: "region: 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.FromSlash(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := decodeFile(tc.file, data, func(document) {}); err != nil {
				t.Fatalf("the example itself does not decode: %v", err)
			}
			if !bytes.Contains(data, []byte(tc.old)) {
				t.Fatalf("%s does not contain %q; update this case", tc.file, tc.old)
			}
			typo := bytes.Replace(data, []byte(tc.old), []byte(tc.new), 1)
			err = decodeFile(tc.file, typo, func(document) {})
			if err == nil {
				t.Fatalf("%s with %q replaced by %q decoded without error", tc.file, tc.old, tc.new)
			}
			t.Logf("rejected as expected: %v", err)
		})
	}
}

// TestRegionConfigsFitInjectionPoint checks the contract between the
// package author and the infrastructure team: the package has one required
// injection point, and every regional ConfigMap carries exactly its keys
// (injection replaces data wholesale, so a missing key would silently
// vanish from the package).
func TestRegionConfigsFitInjectionPoint(t *testing.T) {
	pkgFiles := loadPackageFiles(t, packageDir)
	points, err := mutate.FindInjectionPoints(pkgFiles)
	if err != nil {
		t.Fatal(err)
	}
	wantPoints := []mutate.InjectionPoint{{
		File:          "region-config.yaml",
		GVK:           corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Name:          "region-config",
		Required:      true,
		ConditionType: "config.injection.ConfigMap.region-config",
	}}
	if diff := cmp.Diff(wantPoints, points); diff != "" {
		t.Fatalf("injection points (-want +got):\n%s", diff)
	}
	var point corev1.ConfigMap
	mustDecode(t, "region-config.yaml", pkgFiles["region-config.yaml"], &point)
	wantKeys := sortedKeys(point.Data)

	configMaps := map[string]*corev1.ConfigMap{}
	for _, d := range loadDocuments(t, fleetDir) {
		if cm, ok := d.obj.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = cm
		}
	}
	regions := 0
	for name, cm := range configMaps {
		if !strings.HasPrefix(name, "region-") {
			continue
		}
		regions++
		if diff := cmp.Diff(wantKeys, sortedKeys(cm.Data)); diff != "" {
			t.Errorf("ConfigMap %s keys (-region-config +%s):\n%s", name, name, diff)
		}
	}
	if regions == 0 {
		t.Errorf("no region-* ConfigMap in %s", fleetDir)
	}
}

func loadDocuments(t *testing.T, dir string) []document {
	t.Helper()
	var docs []document
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !isManifest(e.Name()) {
			return err
		}
		if p == liveSnapshot {
			// Generated: a cluster's state for the diff example, with
			// server fields and status (cmd/variantctl reads it back).
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return decodeFile(filepath.ToSlash(p), data, func(d document) { docs = append(docs, d) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("no YAML documents under %s", dir)
	}
	return docs
}

// liveSnapshot is the "live" fleet of the README's variantctl diff example.
const liveSnapshot = "diff/live-snapshot.yaml"

func isManifest(name string) bool {
	return name == kptfilev1.KptFileName || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// decodeFile splits a file into its documents and decodes each strictly
// into its Go type.
func decodeFile(file string, data []byte, emit func(document)) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for index := 0; ; {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: split YAML documents: %w", file, err)
		}
		var generic map[string]any
		if err := yaml.Unmarshal(raw, &generic); err != nil {
			return fmt.Errorf("%s#%d: %w", file, index, err)
		}
		if generic == nil { // only comments
			continue
		}
		apiVersion, _ := generic["apiVersion"].(string)
		kind, _ := generic["kind"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return fmt.Errorf("%s#%d: apiVersion: %w", file, index, err)
		}
		gvk := gv.WithKind(kind)
		newObj, ok := kinds[gvk]
		if !ok {
			return fmt.Errorf("%s#%d: %s is not a kind this test knows; add its Go type to kinds", file, index, gvk)
		}
		obj := newObj()
		if err := decodeStrict(raw, obj); err != nil {
			return fmt.Errorf("%s#%d: %w", file, index, err)
		}
		emit(document{file: file, index: index, gvk: gvk, obj: obj, raw: generic})
		index++
	}
}

// decodeStrict decodes one YAML document into obj, failing on unknown and
// duplicate fields. yaml.UnmarshalStrict matches field names as
// encoding/json does, ignoring case, and converts scalars to the field's
// type; the API server does neither. The second, case-sensitive decode
// catches what the API server would reject or silently drop.
func decodeStrict(raw []byte, obj any) error {
	if err := yaml.UnmarshalStrict(raw, obj); err != nil {
		return err
	}
	jsonData, err := yaml.YAMLToJSONStrict(raw)
	if err != nil {
		return err
	}
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface()
	strictErrs, err := sigsjson.UnmarshalStrict(jsonData, fresh)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

func mustDecode(t *testing.T, file, content string, obj any) {
	t.Helper()
	if content == "" {
		t.Fatalf("%s missing from the mutated package", file)
	}
	if err := decodeStrict([]byte(content), obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// loadPackageFiles reads a package as Porch hands it to the controller:
// path -> content.
func loadPackageFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkNamespace: every fleet object lives in the fleet's namespace.
func checkNamespace(t *testing.T, m metav1.ObjectMeta) {
	t.Helper()
	if m.Namespace != namespace {
		t.Errorf("%s is in namespace %q, want %q", m.Name, m.Namespace, namespace)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
