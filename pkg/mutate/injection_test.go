package mutate

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

func TestFindInjectionPoints(t *testing.T) {
	cases := map[string]struct {
		files   map[string]string
		want    []InjectionPoint
		wantErr string
	}{
		"points in every YAML file, sorted by condition type": {
			files: map[string]string{
				"Kptfile":        kptfileWith(""),
				"region.yaml":    testRegionConfigMap,
				"sub/more.yml":   testEndpoints + "---\n" + testDeployment,
				"notes.txt":      "kpt.dev/config-injection: required",
				"deployment.yml": testDeployment,
			},
			want: []InjectionPoint{
				{File: "region.yaml", GVK: configMapGVK, Name: "region", Required: true, ConditionType: "config.injection.ConfigMap.region"},
				{File: "sub/more.yml", GVK: endpointsGVK, Name: "endpoints", ConditionType: "config.injection.Endpoints.endpoints"},
			},
		},
		"no points": {
			files: map[string]string{"Kptfile": kptfileWith(""), "deployment.yaml": testDeployment},
		},
		"invalid annotation value": {
			files: map[string]string{
				"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    kpt.dev/config-injection: mandatory\n",
				"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\n  annotations:\n    kpt.dev/config-injection: [required]\n",
			},
			wantErr: `invalid injection points: a.yaml: ConfigMap/cm has invalid "kpt.dev/config-injection" annotation value "mandatory" (want "required" or "optional"); ` +
				`b.yaml: ConfigMap/cm2 has invalid "kpt.dev/config-injection" annotation value a list (want "required" or "optional")`,
		},
		"ambiguous condition types": {
			files: map[string]string{
				"a.yaml": testRegionConfigMap,
				"b.yaml": "apiVersion: example.com/v1\nkind: ConfigMap\nmetadata:\n  name: region\n  annotations:\n    kpt.dev/config-injection: optional\n",
			},
			wantErr: `invalid injection points: ambiguous injection condition type "config.injection.ConfigMap.region": a.yaml (v1), b.yaml (example.com/v1); give the resources distinct kinds or names`,
		},
		"annotated object without a kind": {
			files:   map[string]string{"a.yaml": "apiVersion: v1\nmetadata:\n  name: x\n  annotations:\n    kpt.dev/config-injection: optional\n"},
			wantErr: `invalid injection points: a.yaml: /x is annotated "kpt.dev/config-injection" but lacks apiVersion, kind or metadata.name`,
		},
		"malformed YAML": {
			files:   map[string]string{"a.yaml": "metadata: {"},
			wantErr: "a.yaml: malformed YAML: yaml: line 1: did not find expected node content",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := FindInjectionPoints(tc.files)
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("points (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyConfigInjection(t *testing.T) {
	usWestEndpoints := map[string]interface{}{"spec": map[string]interface{}{"url": "https://us-west.example.com"}}
	cases := map[string]struct {
		files       map[string]string
		injectors   []configv1alpha1.InjectionSelector
		cluster     cluster
		get         ObjectGetter // overrides cluster
		want        map[string]string
		wantSources []string // Injected[].Source, in point order
		wantCands   []Candidate
		wantErr     string
	}{
		"ConfigMap data replaced, comments elsewhere kept, stale annotation left": {
			files: map[string]string{
				"Kptfile":     kptfileWith(""),
				"region.yaml": testdata("injection/configmap-replaced.in.region.yaml"),
			},
			injectors: []configv1alpha1.InjectionSelector{{Name: "us-east"}},
			want: map[string]string{
				"Kptfile":     testdata("injection/configmap-replaced.Kptfile"),
				"region.yaml": testdata("injection/configmap-replaced.region.yaml"),
			},
			wantSources: []string{"us-east"},
			wantCands:   []Candidate{{GVK: configMapGVK, Name: "us-east"}},
		},
		"in-cluster ConfigMap without data injects empty data": {
			files:     map[string]string{"Kptfile": kptfileWith(""), "region.yaml": testRegionConfigMap},
			injectors: []configv1alpha1.InjectionSelector{{Name: "empty"}},
			cluster:   cluster{clusterKey(configMapGVK, "empty"): {"metadata": map[string]interface{}{"name": "empty"}}},
			want: map[string]string{
				"Kptfile":     testdata("injection/empty-data.Kptfile"),
				"region.yaml": testdata("injection/empty-data.region.yaml"),
			},
			wantSources: []string{"empty"},
			wantCands:   []Candidate{{GVK: configMapGVK, Name: "empty"}},
		},
		"custom kind: spec replaced": {
			files:     map[string]string{"Kptfile": kptfileWith(""), "endpoints.yaml": testEndpoints},
			injectors: []configv1alpha1.InjectionSelector{{Name: "us-west"}},
			cluster:   cluster{clusterKey(endpointsGVK, "us-west"): usWestEndpoints},
			want: map[string]string{
				"Kptfile":        testdata("injection/custom-kind.Kptfile"),
				"endpoints.yaml": injectedEndpointsUSWest,
			},
			wantSources: []string{"us-west"},
			wantCands:   []Candidate{{GVK: endpointsGVK, Name: "us-west"}},
		},
		"injectors with GVK fields only apply to matching points; first found wins": {
			files: map[string]string{
				"Kptfile":        kptfileWith(""),
				"region.yaml":    testRegionConfigMap,
				"endpoints.yaml": testEndpoints,
			},
			injectors: []configv1alpha1.InjectionSelector{
				{Kind: ptr.To("Endpoints"), Name: "us-west"},
				{Group: ptr.To("other.example.com"), Name: "us-east"},
				{Version: ptr.To("v2"), Name: "us-east"},
				{Group: ptr.To(""), Version: ptr.To("v1"), Kind: ptr.To("ConfigMap"), Name: "missing"},
				{Name: "us-east"},
				{Name: "never-asked"},
			},
			cluster: cluster{
				clusterKey(endpointsGVK, "us-west"): usWestEndpoints,
				clusterKey(configMapGVK, "us-east"): testCluster()[clusterKey(configMapGVK, "us-east")],
			},
			want: map[string]string{
				"Kptfile":        testdata("injection/gvk-fields.Kptfile"),
				"region.yaml":    injectedRegionUSEast,
				"endpoints.yaml": injectedEndpointsUSWest,
			},
			wantSources: []string{"us-east", "us-west"},
			wantCands: []Candidate{
				{GVK: configMapGVK, Name: "missing"},
				{GVK: configMapGVK, Name: "us-east"},
				{GVK: endpointsGVK, Name: "us-west"},
			},
		},
		"nothing found: False conditions, required gate still added, package untouched": {
			files: map[string]string{
				"Kptfile":        kptfileWith(""),
				"region.yaml":    testRegionConfigMap,
				"endpoints.yaml": testEndpoints,
			},
			injectors: []configv1alpha1.InjectionSelector{
				{Kind: ptr.To("ConfigMap"), Name: "a"}, {Kind: ptr.To("ConfigMap"), Name: "b"},
				{Kind: ptr.To("ConfigMap"), Name: "c"}, {Kind: ptr.To("ConfigMap"), Name: "d"},
				{Kind: ptr.To("ConfigMap"), Name: "e"},
			},
			cluster:     cluster{},
			want:        map[string]string{"Kptfile": testdata("injection/nothing-found.Kptfile")},
			wantSources: []string{"", ""},
			wantCands: []Candidate{
				{GVK: configMapGVK, Name: "a"}, {GVK: configMapGVK, Name: "b"}, {GVK: configMapGVK, Name: "c"},
				{GVK: configMapGVK, Name: "d"}, {GVK: configMapGVK, Name: "e"},
			},
		},
		"no injectors": {
			files:       map[string]string{"Kptfile": kptfileWith(""), "endpoints.yaml": testEndpoints},
			want:        map[string]string{"Kptfile": testdata("injection/no-injectors.Kptfile")},
			wantSources: []string{""},
		},
		"getter error recorded in the condition and stops the search": {
			files:     map[string]string{"Kptfile": kptfileWith(""), "endpoints.yaml": testEndpoints},
			injectors: []configv1alpha1.InjectionSelector{{Name: "broken"}, {Name: "us-west"}},
			get: func(gvk schema.GroupVersionKind, name string) (map[string]interface{}, bool, error) {
				if name == "broken" {
					return nil, false, errors.New(`no matches for kind "Endpoints" in version "example.com/v1"`)
				}
				return usWestEndpoints, true, nil
			},
			want:        map[string]string{"Kptfile": testdata("injection/getter-error.Kptfile")},
			wantSources: []string{""},
			wantCands:   []Candidate{{GVK: endpointsGVK, Name: "broken"}},
		},
		"in-cluster object without spec": {
			files:       map[string]string{"Kptfile": kptfileWith(""), "endpoints.yaml": testEndpoints},
			injectors:   []configv1alpha1.InjectionSelector{{Name: "bare"}},
			cluster:     cluster{clusterKey(endpointsGVK, "bare"): {"metadata": map[string]interface{}{"name": "bare"}}},
			want:        map[string]string{"Kptfile": testdata("injection/no-spec.Kptfile")},
			wantSources: []string{""},
			wantCands:   []Candidate{{GVK: endpointsGVK, Name: "bare"}},
		},
		"existing conditions and gates kept; ours updated in place; gates sorted, never removed": {
			files: map[string]string{
				"Kptfile":        testdata("injection/existing-conditions.in.Kptfile"),
				"region.yaml":    testRegionConfigMap,
				"endpoints.yaml": testEndpoints,
			},
			injectors: []configv1alpha1.InjectionSelector{{Name: "us-east"}},
			want: map[string]string{
				"Kptfile":        testdata("injection/existing-conditions.Kptfile"),
				"region.yaml":    injectedRegionUSEast,
				"endpoints.yaml": injectedEndpointsUSEast,
			},
			wantSources: []string{"us-east", "us-east"},
			wantCands:   []Candidate{{GVK: configMapGVK, Name: "us-east"}, {GVK: endpointsGVK, Name: "us-east"}},
		},
		"required gate already there: gates left as they are": {
			files: map[string]string{
				"Kptfile":     kptfileWith("info:\n  readinessGates:\n  - conditionType: b\n  - conditionType: config.injection.ConfigMap.region\n"),
				"region.yaml": testRegionConfigMap,
			},
			cluster:     cluster{},
			want:        map[string]string{"Kptfile": testdata("injection/required-gate.Kptfile")},
			wantSources: []string{""},
		},
		"no Kptfile": {
			files:     map[string]string{"region.yaml": testRegionConfigMap},
			injectors: []configv1alpha1.InjectionSelector{{Name: "us-east"}},
			wantErr:   "Kptfile not found at the package root; it is needed to record the conditions of the injection points (config.injection.ConfigMap.region)",
		},
		"invalid injection point stops everything": {
			files: map[string]string{
				"Kptfile": kptfileWith(""),
				"a.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  annotations:\n    kpt.dev/config-injection: \"yes\"\n",
			},
			injectors: []configv1alpha1.InjectionSelector{{Name: "us-east"}},
			wantErr:   `invalid injection points: a.yaml: ConfigMap/cm has invalid "kpt.dev/config-injection" annotation value "yes" (want "required" or "optional")`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			get := tc.get
			if get == nil {
				c := tc.cluster
				if c == nil {
					c = testCluster()
				}
				get = c.get
			}
			res, err := Apply(tc.files, Input{VariantName: "pv", Injectors: tc.injectors}, get)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(withChanges(tc.files, tc.want), res.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			var sources []string
			for _, inj := range res.Injected {
				sources = append(sources, inj.Source)
			}
			if diff := cmp.Diff(tc.wantSources, sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCands, identities(res.Candidates)); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
			checkOutcomes(t, res.Candidates, get)

			again, err := Apply(res.Files, Input{VariantName: "pv", Injectors: tc.injectors}, get)
			if err != nil {
				t.Fatalf("second Apply: %v", err)
			}
			if again.Changed {
				t.Errorf("second Apply changed the package:\n%s", cmp.Diff(res.Files, again.Files))
			}
		})
	}
}

func TestApplyConfigInjectionMessagesMatchConditions(t *testing.T) {
	files := map[string]string{"Kptfile": kptfileWith(""), "region.yaml": testRegionConfigMap, "endpoints.yaml": testEndpoints}
	res := apply(t, files, Input{Injectors: []configv1alpha1.InjectionSelector{{Kind: ptr.To("ConfigMap"), Name: "us-east"}}}, nil)
	want := []Injected{
		{
			Point:   InjectionPoint{File: "region.yaml", GVK: configMapGVK, Name: "region", Required: true, ConditionType: "config.injection.ConfigMap.region"},
			Source:  "us-east",
			Message: `injected resource "us-east" from cluster`,
		},
		{
			Point:   InjectionPoint{File: "endpoints.yaml", GVK: endpointsGVK, Name: "endpoints", ConditionType: "config.injection.Endpoints.endpoints"},
			Message: "no resource matched any injection selector for this injection point: no injector selects example.com/v1 Endpoints",
		},
	}
	if diff := cmp.Diff(want, res.Injected); diff != "" {
		t.Errorf("injected (-want +got):\n%s", diff)
	}
}

// identities is the candidates without what their lookups returned.
func identities(cs []Candidate) []Candidate {
	var out []Candidate
	for _, c := range cs {
		out = append(out, Candidate{GVK: c.GVK, Name: c.Name})
	}
	return out
}

// checkOutcomes holds each candidate's reported lookup outcome against the
// getter: found, the fingerprint of what injection reads, or the error.
func checkOutcomes(t *testing.T, cs []Candidate, get ObjectGetter) {
	t.Helper()
	for _, c := range cs {
		obj, found, err := get(c.GVK, c.Name)
		want := Candidate{GVK: c.GVK, Name: c.Name, Found: found && err == nil}
		switch {
		case err != nil:
			want.Err = err.Error()
		case found:
			want.Fingerprint = Fingerprint(c.GVK, obj)
		}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Errorf("candidate %s %s reports its lookup wrongly (-want +got):\n%s", c.GVK.Kind, c.Name, diff)
		}
	}
}

// TestFingerprint: what injection reads, and only that, makes the
// fingerprint.
func TestFingerprint(t *testing.T) {
	cm := func(data map[string]interface{}, labels map[string]interface{}) map[string]interface{} {
		obj := map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "c", "labels": labels}}
		if data != nil {
			obj["data"] = data
		}
		return obj
	}
	base := Fingerprint(configMapGVK, cm(map[string]interface{}{"a": "1"}, nil))
	if base == "" || base != Fingerprint(configMapGVK, cm(map[string]interface{}{"a": "1"}, map[string]interface{}{"x": "y"})) {
		t.Error("metadata changed the fingerprint of a ConfigMap; only data is injected")
	}
	if base == Fingerprint(configMapGVK, cm(map[string]interface{}{"a": "2"}, nil)) {
		t.Error("new data left the fingerprint unchanged")
	}
	if Fingerprint(configMapGVK, cm(nil, nil)) != Fingerprint(configMapGVK, cm(map[string]interface{}{}, nil)) {
		t.Error("a ConfigMap without data injects empty data: same fingerprint as empty data")
	}
	ep := map[string]interface{}{"kind": "Endpoints", "spec": map[string]interface{}{"p": 1}, "data": map[string]interface{}{"a": "1"}}
	noSpec := map[string]interface{}{"kind": "Endpoints", "data": map[string]interface{}{"a": "1"}}
	if Fingerprint(endpointsGVK, ep) == Fingerprint(endpointsGVK, noSpec) {
		t.Error("an object of another kind is read for its spec; without one it cannot be injected")
	}
}
