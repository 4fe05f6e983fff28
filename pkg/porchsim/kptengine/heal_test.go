package kptengine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHeal: a resources update that lost a resource's comments gets them
// back from the revision's previous files, as Porch heals an update before
// rendering it; other resources and non-YAML files are kept as sent.
func TestHeal(t *testing.T) {
	old := map[string]string{
		"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: region-config
data:
  # Placeholders, replaced by injection.
  region: unset
  dnsZone: unset.example.com
`,
		"README.md": "old\n",
	}
	updated := map[string]string{
		"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: region-config
data:
  dnsZone: us-east.example.com
  region: us-east
`,
		"new.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n",
		"README.md": "new\n",
	}
	got, err := Heal(old, updated)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: region-config
data:
  dnsZone: us-east.example.com
  # Placeholders, replaced by injection.
  region: us-east
`,
		"new.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n",
		"README.md": "new\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("healed files (-want +got):\n%s", diff)
	}
	if _, err := Heal(old, map[string]string{"bad.yaml": "a: [\n"}); err == nil {
		t.Error("healing YAML that does not parse succeeded")
	}
}
