package mutate

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// The test package lives in testdata/package: a Kptfile with comments, a
// field this package does not know, its own pipeline function and an existing
// condition (everything a mutation must keep); the package context; an
// injection point of each kind; a Deployment no mutation touches; and a
// README that is not YAML. testdata/injected holds the injection points as
// they are after injection from testCluster, testdata/all-mutations the
// other files fullInput changes.
var (
	testKptfile         = testdata("package/Kptfile")
	testPackageContext  = testdata("package/package-context.yaml")
	testRegionConfigMap = testdata("package/region.yaml")
	testEndpoints       = testdata("package/endpoints.yaml")
	testDeployment      = testdata("package/deployment.yaml")
	testReadme          = testdata("package/README.md")

	injectedRegionUSEast    = testdata("injected/region-us-east.yaml")
	injectedEndpointsUSEast = testdata("injected/endpoints-us-east.yaml")
	injectedEndpointsUSWest = testdata("injected/endpoints-us-west.yaml")
)

// testdata is the file testdata/name, byte for byte.
func testdata(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func testFiles() map[string]string {
	return map[string]string{
		"Kptfile":              testKptfile,
		"package-context.yaml": testPackageContext,
		"region.yaml":          testRegionConfigMap,
		"endpoints.yaml":       testEndpoints,
		"deployment.yaml":      testDeployment,
		"README.md":            testReadme,
	}
}

// cluster is an ObjectGetter over a fixed set of in-cluster objects.
type cluster map[string]map[string]interface{}

func clusterKey(gvk schema.GroupVersionKind, name string) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind + "/" + name
}

func (c cluster) get(gvk schema.GroupVersionKind, name string) (map[string]interface{}, bool, error) {
	obj, ok := c[clusterKey(gvk, name)]
	return obj, ok, nil
}

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	endpointsGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Endpoints"}
)

func testCluster() cluster {
	return cluster{
		clusterKey(configMapGVK, "us-east"): {
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "us-east", "namespace": "default"},
			"data":     map[string]interface{}{"region": "us-east-1", "zone": "b"},
		},
		clusterKey(endpointsGVK, "us-east"): {
			"apiVersion": "example.com/v1", "kind": "Endpoints",
			"metadata": map[string]interface{}{"name": "us-east", "namespace": "default"},
			"spec":     map[string]interface{}{"url": "https://us-east.example.com", "ports": []interface{}{int64(80), int64(443)}},
		},
	}
}

func fullInput(variant string) Input {
	return Input{
		VariantName: variant,
		PackageContext: &configv1alpha1.PackageContext{
			Data:       map[string]string{"region": "us-east-1", "env": "prod"},
			RemoveKeys: []string{"obsolete"},
		},
		Pipeline: &kptfilev1.Pipeline{
			Mutators: []kptfilev1.Function{{
				Image:     "gcr.io/kpt-fn/set-namespace:v0.4",
				Name:      "set.namespace",
				ConfigMap: map[string]string{"namespace": "prod"},
			}},
			Validators: []kptfilev1.Function{{Image: "gcr.io/kpt-fn/kubeval:v0.3"}},
		},
		Injectors: []configv1alpha1.InjectionSelector{{Name: "us-east"}},
	}
}

func TestApplyAllMutations(t *testing.T) {
	res, err := Apply(testFiles(), fullInput("my-pv"), testCluster().get)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := map[string]string{
		"Kptfile":              testdata("all-mutations/Kptfile"),
		"package-context.yaml": testdata("all-mutations/package-context.yaml"),
		"region.yaml":          injectedRegionUSEast,
		"endpoints.yaml":       injectedEndpointsUSEast,
		"deployment.yaml":      testDeployment,
		"README.md":            testReadme,
	}
	if diff := cmp.Diff(want, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if !res.Changed {
		t.Errorf("Changed = false, want true")
	}
	wantPoints := []InjectionPoint{
		{File: "region.yaml", GVK: configMapGVK, Name: "region", Required: true, ConditionType: "config.injection.ConfigMap.region"},
		{File: "endpoints.yaml", GVK: endpointsGVK, Name: "endpoints", ConditionType: "config.injection.Endpoints.endpoints"},
	}
	if diff := cmp.Diff(wantPoints, res.Points); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	wantInjected := []Injected{
		{Point: wantPoints[0], Source: "us-east", Message: `injected resource "us-east" from cluster`},
		{Point: wantPoints[1], Source: "us-east", Message: `injected resource "us-east" from cluster`},
	}
	if diff := cmp.Diff(wantInjected, res.Injected); diff != "" {
		t.Errorf("injected (-want +got):\n%s", diff)
	}
	wantCandidates := []Candidate{{GVK: configMapGVK, Name: "us-east"}, {GVK: endpointsGVK, Name: "us-east"}}
	if diff := cmp.Diff(wantCandidates, identities(res.Candidates)); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
}

// A controller reconciling an up-to-date variant must see no change, or it
// would make a new draft on every reconcile.
func TestApplyIsIdempotent(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		in    Input
	}{
		"all mutations": {
			files: testFiles(),
			in:    fullInput("my-pv"),
		},
		"dots in variant and function names": {
			files: testFiles(),
			in:    fullInput("my.pv.v2"),
		},
		"nothing to do": {
			files: testFiles(),
			in:    Input{VariantName: "my-pv"},
		},
		"no injector matches": {
			files: testFiles(),
			in:    Input{VariantName: "my-pv", Injectors: []configv1alpha1.InjectionSelector{{Name: "nowhere"}}},
		},
		"wide sequence indent and multiple documents": {
			files: map[string]string{
				"Kptfile":              "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n    - image: own:v1\n",
				"all.yaml":             "---\n" + testRegionConfigMap + "---\n" + testEndpoints + "---\n" + testDeployment,
				"package-context.yaml": testPackageContext,
			},
			in: fullInput("pv"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			first, err := Apply(tc.files, tc.in, testCluster().get)
			if err != nil {
				t.Fatalf("first Apply: %v", err)
			}
			second, err := Apply(first.Files, tc.in, testCluster().get)
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if second.Changed {
				t.Errorf("second Apply: Changed = true, want false")
			}
			if diff := cmp.Diff(first.Files, second.Files); diff != "" {
				t.Errorf("second Apply changed files (-first +second):\n%s", diff)
			}
		})
	}
}

func TestApplyLeavesUntouchedContentAlone(t *testing.T) {
	// Odd but valid formatting that a re-encode would change: it must survive
	// in every file and document no mutation touched.
	oddDeployment := "apiVersion:   apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec:\n    replicas: 1\n"
	files := map[string]string{
		"Kptfile":      testKptfile,
		"odd.yaml":     oddDeployment,
		"notes.txt":    "key: [unclosed",
		"README.md":    testReadme,
		"sub/data.yml": "# only a comment\n",
		"multi.yaml":   oddDeployment + "---\n" + testRegionConfigMap,
	}
	in := Input{VariantName: "pv", Injectors: []configv1alpha1.InjectionSelector{{Name: "us-east"}}}
	res, err := Apply(files, in, testCluster().get)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	for _, name := range []string{"odd.yaml", "notes.txt", "README.md", "sub/data.yml"} {
		if diff := cmp.Diff(files[name], res.Files[name]); diff != "" {
			t.Errorf("%s changed (-want +got):\n%s", name, diff)
		}
	}
	// Only the second document of multi.yaml was injected into.
	if !strings.HasPrefix(res.Files["multi.yaml"], oddDeployment+"---\n") {
		t.Errorf("first document of multi.yaml was re-encoded:\n%s", res.Files["multi.yaml"])
	}
	if !strings.Contains(res.Files["multi.yaml"], "kpt.dev/injected-resource: us-east") {
		t.Errorf("second document of multi.yaml was not injected:\n%s", res.Files["multi.yaml"])
	}
}

func TestApplyDoesNotModifyInput(t *testing.T) {
	files := testFiles()
	orig := testFiles()
	if _, err := Apply(files, fullInput("pv"), testCluster().get); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if diff := cmp.Diff(orig, files); diff != "" {
		t.Errorf("input map modified (-want +got):\n%s", diff)
	}
}

func TestApplyErrors(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		in    Input
		want  string
	}{
		"malformed YAML names the file": {
			files: map[string]string{"Kptfile": testKptfile, "bad.yaml": "a: [b\n"},
			in:    Input{VariantName: "pv"},
			want:  "bad.yaml: malformed YAML: yaml: line 1: did not find expected ',' or ']'",
		},
		"content after a document separator": {
			files: map[string]string{"Kptfile": testKptfile, "bad.yaml": "a: b\n--- c: d\n"},
			in:    Input{VariantName: "pv"},
			want:  `bad.yaml: invalid document separator "--- c: d": content after a separator is not supported`,
		},
		"variant name missing": {
			files: testFiles(),
			in:    Input{},
			want:  "variant name is required: it names the pipeline functions the variant adds",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Apply(tc.files, tc.in, testCluster().get)
			if diff := cmp.Diff(tc.want, errString(err)); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// The design document orders the mutations package context, pipeline,
// injection: a package context ConfigMap that is also an injection point
// ends up with the injected data.
func TestApplyOrderInjectionAfterPackageContext(t *testing.T) {
	files := map[string]string{
		"Kptfile": testKptfile,
		"package-context.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    kpt.dev/config-injection: optional
data:
  name: app
`,
	}
	in := Input{
		VariantName:    "pv",
		PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}},
		Injectors:      []configv1alpha1.InjectionSelector{{Name: "ctx"}},
	}
	c := cluster{clusterKey(configMapGVK, "ctx"): {"data": map[string]interface{}{"name": "app", "from": "cluster"}}}
	res, err := Apply(files, in, c.get)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    kpt.dev/config-injection: optional
    kpt.dev/injected-resource: ctx
data:
  from: cluster
  name: app
`
	if diff := cmp.Diff(want, res.Files["package-context.yaml"]); diff != "" {
		t.Errorf("package-context.yaml (-want +got):\n%s", diff)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantError fails the test unless err is wantErr ("" for none), and reports
// whether there is a result to check.
func wantError(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if diff := cmp.Diff(wantErr, errString(err)); diff != "" {
		t.Fatalf("error (-want +got):\n%s", diff)
	}
	return err == nil
}

// apply runs Apply and fails the test on error; for tests about one file.
func apply(t *testing.T, files map[string]string, in Input, get ObjectGetter) Result {
	t.Helper()
	if in.VariantName == "" {
		in.VariantName = "pv"
	}
	if get == nil {
		get = testCluster().get
	}
	res, err := Apply(files, in, get)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// withChanges is files with the changed ones replaced: what Apply returns
// when it changes exactly those.
func withChanges(files, changed map[string]string) map[string]string {
	out := maps.Clone(files)
	maps.Copy(out, changed)
	return out
}

func kptfileWith(extra string) string {
	return fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n%s", extra)
}
