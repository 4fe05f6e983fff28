package mutate

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// FuzzApply feeds arbitrary package files and names to Apply: it must never
// panic (package content comes from anyone who can push to a repository),
// and whatever it accepts it must accept again without changing it.
// `go test` runs only the seeds; run `go test -fuzz FuzzApply ./pkg/mutate/`
// to search further.
func FuzzApply(f *testing.F) {
	f.Add(testKptfile, testRegionConfigMap+"---\n"+testEndpoints, testPackageContext, "my-pv", "set-ns", "us-east")
	f.Add(kptfileWith("pipeline:\n  mutators:\n  - name: PackageVariant.a.b.x.0\n    image: i\n"), testDeployment, testPackageContext, "a.b", "x.y", "broken")
	f.Add(kptfileWith("info: &i {readinessGates: [{conditionType: x}]}\nstatus:\n  conditions: *c\n"), "a: &c [1]\nb: *c\n", "", "pv", "", "missing")
	f.Add("", "---\n--- # comment\n...\n", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata: null\n", "pv", "fn", "us-east")
	f.Add(kptfileWith("pipeline: []\nstatus: x\ninfo:\n  readinessGates: 3\n"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: region\n  annotations:\n    kpt.dev/config-injection: required\ndata: !!binary aGk=\n", testPackageContext, "pv", "fn", "us-east")

	f.Fuzz(func(t *testing.T, kptfile, resources, packageContext, variant, function, injector string) {
		files := map[string]string{
			"Kptfile":              kptfile,
			"resources.yaml":       resources,
			"package-context.yaml": packageContext,
			"README.md":            resources,
		}
		in := Input{
			VariantName:    variant,
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"env": function}, RemoveKeys: []string{injector}},
			Pipeline: &kptfilev1.Pipeline{
				Mutators:   []kptfilev1.Function{{Image: "img", Name: function, ConfigMap: map[string]string{function: injector}}},
				Validators: []kptfilev1.Function{{Image: function}},
			},
			Injectors: []configv1alpha1.InjectionSelector{{Name: injector}, {Kind: &function, Name: "us-east"}},
		}
		get := func(gvk schema.GroupVersionKind, name string) (map[string]interface{}, bool, error) {
			switch name {
			case "broken":
				return nil, false, errors.New("kind not served")
			case "us-east", injector:
				return map[string]interface{}{
					"data": map[string]interface{}{"k": injector},
					"spec": map[string]interface{}{"list": []interface{}{int64(1), "two", 3.5, nil, true}, function: injector},
				}, true, nil
			}
			return nil, false, nil
		}
		res, err := Apply(files, in, get)
		if err != nil {
			return
		}
		again, err := Apply(res.Files, in, get)
		if err != nil {
			t.Fatalf("second Apply failed on the output of the first: %v", err)
		}
		if again.Changed {
			t.Fatalf("second Apply changed the package (-first +second):\n%s", cmp.Diff(res.Files, again.Files))
		}
	})
}
