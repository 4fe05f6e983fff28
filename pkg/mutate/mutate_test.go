package mutate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// A Kptfile with comments, a field this package does not know, its own
// pipeline function and an existing condition: everything a mutation must
// keep.
const testKptfile = `# Kptfile of the package
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app # package name
  annotations:
    config.kubernetes.io/local-config: "true"
upstream:
  type: git
  git:
    repo: https://example.com/blueprints
    directory: app
    ref: app/v3
info:
  description: an app
pipeline:
  mutators:
  # the package's own function
  - image: gcr.io/kpt-fn/apply-setters:v0.2
    configPath: setters.yaml
somethingNew:
  kept: true
status:
  conditions:
  - type: Rendered
    status: "True"
`

const testPackageContext = `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: app # set by Porch
`

const testRegionConfigMap = `# region settings, injected per cluster
apiVersion: v1
kind: ConfigMap
metadata:
  name: region
  annotations:
    kpt.dev/config-injection: required
data:
  region: default # overwritten by injection
`

const testEndpoints = `apiVersion: example.com/v1
kind: Endpoints
metadata:
  name: endpoints
  annotations:
    kpt.dev/config-injection: optional
spec:
  url: http://localhost
`

const testReadme = "# app\n\nNot YAML: --- and key: value stay as they are.\n"

const testDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1 # scaled by setters
`

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

func ptr(s string) *string { return &s }

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
		"Kptfile": `# Kptfile of the package
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app # package name
  annotations:
    config.kubernetes.io/local-config: "true"
upstream:
  type: git
  git:
    repo: https://example.com/blueprints
    directory: app
    ref: app/v3
info:
  description: an app
  readinessGates:
  - conditionType: config.injection.ConfigMap.region
pipeline:
  mutators:
  - image: gcr.io/kpt-fn/set-namespace:v0.4
    configMap:
      namespace: prod
    name: PackageVariant.my-pv.set.namespace.0
  # the package's own function
  - image: gcr.io/kpt-fn/apply-setters:v0.2
    configPath: setters.yaml
  validators:
  - image: gcr.io/kpt-fn/kubeval:v0.3
    name: PackageVariant.my-pv..0
somethingNew:
  kept: true
status:
  conditions:
  - type: Rendered
    status: "True"
  - type: config.injection.ConfigMap.region
    status: "True"
    reason: ConfigInjected
    message: injected resource "us-east" from cluster
  - type: config.injection.Endpoints.endpoints
    status: "True"
    reason: ConfigInjected
    message: injected resource "us-east" from cluster
`,
		"package-context.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: app # set by Porch
  env: prod
  region: us-east-1
`,
		"region.yaml": `# region settings, injected per cluster
apiVersion: v1
kind: ConfigMap
metadata:
  name: region
  annotations:
    kpt.dev/config-injection: required
    kpt.dev/injected-resource: us-east
data:
  region: us-east-1
  zone: b
`,
		"endpoints.yaml": `apiVersion: example.com/v1
kind: Endpoints
metadata:
  name: endpoints
  annotations:
    kpt.dev/config-injection: optional
    kpt.dev/injected-resource: us-east
spec:
  ports:
  - 80
  - 443
  url: https://us-east.example.com
`,
		"deployment.yaml": testDeployment,
		"README.md":       testReadme,
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

func kptfileWith(extra string) string {
	return fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n%s", extra)
}
