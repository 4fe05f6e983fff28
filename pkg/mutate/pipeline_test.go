package mutate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

func TestIsVariantFunction(t *testing.T) {
	cases := map[string]struct {
		function, variant string
		want              bool
	}{
		"plain":                           {"PackageVariant.pv.fn.0", "pv", true},
		"empty function name":             {"PackageVariant.pv..12", "pv", true},
		"dots in the function name":       {"PackageVariant.pv.set.namespace.3", "pv", true},
		"dots in the variant name":        {"PackageVariant.my.pv.fn.0", "my.pv", true},
		"dots in both":                    {"PackageVariant.my.pv.a.b.c.1", "my.pv", true},
		"another variant":                 {"PackageVariant.other.fn.0", "pv", false},
		"variant name is only a prefix":   {"PackageVariant.pv2.fn.0", "pv", false},
		"the package's own function":      {"set-namespace", "pv", false},
		"no function segment":             {"PackageVariant.pv.0", "pv", false},
		"position not a number":           {"PackageVariant.pv.fn.x", "pv", false},
		"signed position":                 {"PackageVariant.pv.fn.-1", "pv", false},
		"empty position":                  {"PackageVariant.pv.fn.", "pv", false},
		"other prefix":                    {"packagevariant.pv.fn.0", "pv", false},
		"unnamed function":                {"", "pv", false},
		"longer variant with same prefix": {"PackageVariant.my.pv.fn.0", "my", true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsVariantFunction(tc.function, tc.variant); got != tc.want {
				t.Errorf("IsVariantFunction(%q, %q) = %v, want %v", tc.function, tc.variant, got, tc.want)
			}
		})
	}
}

func TestApplyPipeline(t *testing.T) {
	setNS := kptfilev1.Function{Image: "set-namespace:v1", Name: "set-ns", ConfigMap: map[string]string{"namespace": "prod"}}
	labels := kptfilev1.Function{Image: "set-labels:v1"}
	kubeval := kptfilev1.Function{Image: "kubeval:v1", Name: "check"}
	cases := map[string]struct {
		kptfile  string // "" for no Kptfile
		variant  string
		pipeline *kptfilev1.Pipeline
		want     string // "" when the Kptfile must stay byte-identical
		wantErr  string
	}{
		"prepended, positions counted per list, unknown fields and comments kept": {
			kptfile: kptfileWith(`# pipeline of the package
pipeline:
  mutators:
  - image: own:v1 # the package's own
  validators:
  - image: own-check:v1
  x-future: 1
inventory:
  name: inv
`),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{setNS, labels}, Validators: []kptfilev1.Function{kubeval}},
			want: kptfileWith(`# pipeline of the package
pipeline:
  mutators:
  - image: set-namespace:v1
    configMap:
      namespace: prod
    name: PackageVariant.pv.set-ns.0
  - image: set-labels:v1
    name: PackageVariant.pv..1
  - image: own:v1 # the package's own
  validators:
  - image: kubeval:v1
    name: PackageVariant.pv.check.0
  - image: own-check:v1
  x-future: 1
inventory:
  name: inv
`),
		},
		"earlier functions of the variant replaced, other variants kept after ours": {
			kptfile: kptfileWith(`pipeline:
  mutators:
  - image: other:v1
    name: PackageVariant.other.fn.0
  - image: old:v1
    name: PackageVariant.pv.old.0
  - image: own:v1
  - image: old2:v1
    name: PackageVariant.pv..1
`),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{labels}},
			want: kptfileWith(`pipeline:
  mutators:
  - image: set-labels:v1
    name: PackageVariant.pv..0
  - image: other:v1
    name: PackageVariant.other.fn.0
  - image: own:v1
`),
		},
		"no pipeline in the variant still removes its old functions": {
			kptfile: kptfileWith(`pipeline:
  mutators:
  - image: old:v1
    name: PackageVariant.pv.old.0
  - image: own:v1
`),
			variant: "pv",
			want: kptfileWith(`pipeline:
  mutators:
  - image: own:v1
`),
		},
		"a list left empty is removed, and so is an empty pipeline": {
			kptfile: kptfileWith(`pipeline:
  validators:
  - image: old:v1
    name: PackageVariant.pv.old.0
status: {}
`),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{},
			want:     kptfileWith("status: {}\n"),
		},
		"pipeline created where kpt puts it, without empty lists": {
			kptfile:  kptfileWith("info:\n  description: d\ninventory:\n  name: inv\n"),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Validators: []kptfilev1.Function{kubeval}},
			want: kptfileWith(`info:
  description: d
pipeline:
  validators:
  - image: kubeval:v1
    name: PackageVariant.pv.check.0
inventory:
  name: inv
`),
		},
		"nothing to add and nothing of ours: untouched": {
			kptfile:  "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\npipeline:\n  mutators: []\n",
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{},
		},
		"wide sequence indent kept": {
			kptfile:  kptfileWith("pipeline:\n  mutators:\n    - image: own:v1\n"),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{labels}},
			want:     kptfileWith("pipeline:\n  mutators:\n    - image: set-labels:v1\n      name: PackageVariant.pv..0\n    - image: own:v1\n"),
		},
		"configMap values that look like other types stay strings": {
			kptfile:  kptfileWith(""),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "f", ConfigMap: map[string]string{"on": "true", "n": "007", "empty": ""}}}},
			want: kptfileWith(`pipeline:
  mutators:
  - image: f
    configMap:
      empty: ""
      n: "007"
      on: "true"
    name: PackageVariant.pv..0
`),
		},
		"missing Kptfile with functions to add": {
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{labels}},
			wantErr:  `Kptfile not found at the package root; it is needed to add the pipeline functions of PackageVariant "pv"`,
		},
		"missing Kptfile and nothing to add": {
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{},
		},
		"mutators that are not a list": {
			kptfile:  kptfileWith("pipeline:\n  mutators: {image: x}\n"),
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{labels}},
			wantErr:  "Kptfile: Kptfile/app: pipeline.mutators is a map, not a list",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"README.md": testReadme}
			if tc.kptfile != "" {
				files["Kptfile"] = tc.kptfile
			}
			res, err := Apply(files, Input{VariantName: tc.variant, Pipeline: tc.pipeline}, nil)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			want := tc.want
			if want == "" {
				want = tc.kptfile
			}
			if diff := cmp.Diff(want, res.Files["Kptfile"]); diff != "" {
				t.Errorf("Kptfile (-want +got):\n%s", diff)
			}
			if res.Changed != (tc.want != "") {
				t.Errorf("Changed = %v, want %v", res.Changed, tc.want != "")
			}
		})
	}
}

// The reference splits function names on dots and, with a dot in a variant
// or function name, never recognises its own functions: it prepends them
// again on every reconcile. The list must stay the same however often the
// variant is applied.
func TestApplyPipelineStableWithDots(t *testing.T) {
	cases := map[string]struct {
		variant  string
		pipeline *kptfilev1.Pipeline
	}{
		"dot in the function name": {
			variant:  "pv",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "a", Name: "set.namespace"}}},
		},
		"dots in the variant name": {
			variant:  "my.pv.v1",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "a", Name: "fn"}}, Validators: []kptfilev1.Function{{Image: "b"}}},
		},
		"dots in both": {
			variant:  "a.b",
			pipeline: &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "a", Name: "x.y.z"}, {Image: "b", Name: "1.2"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{"Kptfile": testKptfile}
			in := Input{VariantName: tc.variant, Pipeline: tc.pipeline}
			var results []string
			for i := 0; i < 3; i++ {
				res := apply(t, files, in, nil)
				if i > 0 && res.Changed {
					t.Errorf("Apply #%d: Changed = true, want false", i+1)
				}
				files = res.Files
				results = append(results, res.Files["Kptfile"])
			}
			if diff := cmp.Diff(results[0], results[2]); diff != "" {
				t.Errorf("Kptfile changed between the first and the third Apply (-first +third):\n%s", diff)
			}
			want := len(tc.pipeline.Mutators) + len(tc.pipeline.Validators)
			if got := strings.Count(results[2], "name: PackageVariant."); got != want {
				t.Errorf("%d variant functions in the Kptfile, want %d:\n%s", got, want, results[2])
			}
		})
	}
}
