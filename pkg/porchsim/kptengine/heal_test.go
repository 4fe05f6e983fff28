package kptengine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHeal: a resources update that lost a resource's comments gets them
// back from the revision's previous files, as Porch heals an update before
// rendering it; other resources and non-YAML files are kept as sent.
func TestHeal(t *testing.T) {
	old := readPackageDir(t, "heal/old")
	updated := readPackageDir(t, "heal/updated")
	got, err := Heal(old, updated)
	if err != nil {
		t.Fatal(err)
	}
	want := readPackageDir(t, "heal/want")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("healed files (-want +got):\n%s", diff)
	}
	if _, err := Heal(old, map[string]string{"bad.yaml": "a: [\n"}); err == nil {
		t.Error("healing YAML that does not parse succeeded")
	}
}

// TestHealShortcutsChangeNothing: the cases Heal skips kyaml's comment copy
// for give the same files as copying, and a case outside them (a folded
// scalar, which kyaml rewrites) is still copied.
func TestHealShortcutsChangeNothing(t *testing.T) {
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: set-namespace:v0.4.1\n    configMap:\n      namespace: a\n"
	cases := []struct{ name, old, updated string }{
		{"unchanged with comments", "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\ndata:\n  a: b # why\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\ndata:\n  a: b # why\n"},
		{"comment-free old", kptfile, kptfile + "  - image: starlark:v0.5.0\n"},
		{"comment-free old, folded new", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: >\n    folded text\n"},
		{"comments to copy", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  # keep\n  a: b\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: c\n"},
		{"unchanged with an anchor and an alias", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: &x b # why\n  c: *x\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: &x b # why\n  c: *x\n"},
		{"unchanged, templated", "#@ load(\"@ytt:data\", \"data\")\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: #@ data.values.a\n",
			"#@ load(\"@ytt:data\", \"data\")\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: #@ data.values.a\n"},
		{"unchanged with comments, folded", "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\ndata:\n  a: >\n    folded text\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\ndata:\n  a: >\n    folded text\n"},
		{"unchanged with comments, literal", "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\ndata:\n  a: |\n    literal text\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\ndata:\n  a: |\n    literal text\n"},
		{"unchanged with comments and annotations", "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\n  annotations:\n    config.kubernetes.io/index: '0' # kio's\n    a: b # why\ndata:\n  x: y\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\n  annotations:\n    config.kubernetes.io/index: '0' # kio's\n    a: b # why\ndata:\n  x: y\n"},
		{"a kio annotation's comment dropped", "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\n  annotations:\n    config.kubernetes.io/index: '0' # kio's\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\n  annotations:\n    config.kubernetes.io/index: '0'\n"},
		{"an annotation's comment dropped", "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\n  annotations:\n    a: b # why\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /c\n  name: c\n  annotations:\n    a: b\n"},
		{"requoted with comments", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: 'b' # why\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: \"b\"\n"},
		{"an alias of its own parent", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: &d\n  a: b # why\n  c: *d\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: &d\n  a: b # why\n  c: *d\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old, updated := map[string]string{"r.yaml": c.old}, map[string]string{"r.yaml": c.updated}
			fast, err := Heal(old, updated)
			if err != nil {
				t.Fatal(err)
			}
			healShortcuts = false
			defer func() { healShortcuts = true }()
			full, err := Heal(old, updated)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(full, fast); diff != "" {
				t.Errorf("healed with shortcuts differs from healed without (-without +with):\n%s", diff)
			}
		})
	}
}
