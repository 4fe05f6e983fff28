package mutate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

func TestApplyPackageContext(t *testing.T) {
	cases := map[string]struct {
		files   map[string]string
		pc      *configv1alpha1.PackageContext
		want    map[string]string // files expected to differ from the input
		wantErr string
	}{
		"existing keys updated in place, new keys appended sorted, comments kept": {
			files: map[string]string{"package-context.yaml": testdata("packagecontext/update.in.yaml")},
			pc:    &configv1alpha1.PackageContext{Data: map[string]string{"zone": "b", "env": "prod", "count": "3", "beta": "true"}},
			want:  map[string]string{"package-context.yaml": testdata("packagecontext/update.yaml")},
		},
		"removeKeys removed, absent ones ignored": {
			files: map[string]string{"package-context.yaml": testPackageContext + "  old: x\n  older: y\n"},
			pc:    &configv1alpha1.PackageContext{RemoveKeys: []string{"old", "never-there", "older"}},
			want:  map[string]string{"package-context.yaml": testPackageContext},
		},
		"data created when the ConfigMap has none": {
			files: map[string]string{"package-context.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n"},
			pc:    &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}},
			want:  map[string]string{"package-context.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  env: prod\n"},
		},
		"values already set: file untouched": {
			files: map[string]string{"package-context.yaml": "apiVersion:  v1\nkind: ConfigMap\nmetadata: {name: kptfile.kpt.dev}\ndata:\n  env: 'prod'\n"},
			pc:    &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}, RemoveKeys: []string{"gone"}},
		},
		"ConfigMap in another file": {
			files: map[string]string{"context/ctx.yaml": testPackageContext},
			pc:    &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}},
			want:  map[string]string{"context/ctx.yaml": testPackageContext + "  env: prod\n"},
		},
		"ConfigMap of a nested package is not ours": {
			files: map[string]string{
				"sub/Kptfile":              kptfileWith(""),
				"sub/package-context.yaml": testPackageContext,
			},
			pc:      &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}},
			wantErr: `package context ConfigMap "kptfile.kpt.dev" not found in package-context.yaml; the downstream package must be in a deployment repository or contain one`,
		},
		"missing ConfigMap": {
			files:   map[string]string{"Kptfile": kptfileWith("")},
			pc:      &configv1alpha1.PackageContext{RemoveKeys: []string{"x"}},
			wantErr: `package context ConfigMap "kptfile.kpt.dev" not found in package-context.yaml; the downstream package must be in a deployment repository or contain one`,
		},
		"missing ConfigMap is fine when there is nothing to do": {
			files: map[string]string{"Kptfile": kptfileWith("")},
			pc:    &configv1alpha1.PackageContext{},
		},
		"reserved keys rejected": {
			files:   map[string]string{"package-context.yaml": testPackageContext},
			pc:      &configv1alpha1.PackageContext{Data: map[string]string{"name": "other"}},
			wantErr: `invalid package context: spec.packageContext.data[name]: Forbidden: must not contain the key "name": it is reserved for kpt and Porch`,
		},
		"data that is not a map": {
			files:   map[string]string{"package-context.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata: [a]\n"},
			pc:      &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}},
			wantErr: "package-context.yaml: ConfigMap/kptfile.kpt.dev: data is a list, not a map",
		},
		"two ConfigMaps outside package-context.yaml": {
			files: map[string]string{
				"a.yaml": testPackageContext,
				"b.yaml": testPackageContext,
			},
			pc:      &configv1alpha1.PackageContext{Data: map[string]string{"env": "prod"}},
			wantErr: `package context ConfigMap "kptfile.kpt.dev" is defined more than once (a.yaml, b.yaml) and none is in package-context.yaml; remove all but one`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Apply(tc.files, Input{VariantName: "pv", PackageContext: tc.pc}, nil)
			if !wantError(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(withChanges(tc.files, tc.want), res.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if res.Changed != (len(tc.want) > 0) {
				t.Errorf("Changed = %v, want %v", res.Changed, len(tc.want) > 0)
			}
		})
	}
}

// TestPackageContextData: the data of the package context, scalars only
// (an alias followed); a package without one has none; two of them are an
// error naming both files.
func TestPackageContextData(t *testing.T) {
	ctx := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: app\n  tier: &t gold\n  copy: *t\n  nested: {a: b}\n"
	data, found, err := PackageContextData(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n", "package-context.yaml": ctx})
	if err != nil || !found {
		t.Fatalf("found %t, err %v", found, err)
	}
	if diff := cmp.Diff(map[string]string{"name": "app", "tier": "gold", "copy": "gold"}, data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if _, found, err := PackageContextData(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"}); found || err != nil {
		t.Errorf("a package without a package context: found %t, err %v", found, err)
	}
	if _, _, err := PackageContextData(map[string]string{"a.yaml": ctx, "b.yaml": ctx}); err == nil {
		t.Error("two package contexts: no error")
	}
}
