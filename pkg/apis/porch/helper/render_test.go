package helper

import "testing"

func TestHoldsWhatWasWritten(t *testing.T) {
	const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators: [{image: set-namespace}]\n"
	rendered := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: set-namespace\nstatus:\n  conditions:\n  - type: Rendered\n    status: \"True\"\n    reason: RenderSuccess\n"
	sent := map[string]string{"Kptfile": kptfile, "cm.yaml": "kind: ConfigMap\n"}
	cases := map[string]struct {
		stored map[string]string
		want   bool
	}{
		"exactly what was sent":                       {stored: map[string]string{"Kptfile": kptfile, "cm.yaml": "kind: ConfigMap\n"}, want: true},
		"the render's status, Kptfile re-encoded":     {stored: map[string]string{"Kptfile": rendered, "cm.yaml": "kind: ConfigMap\n"}, want: true},
		"a file added (a person's edit)":              {stored: map[string]string{"Kptfile": rendered, "cm.yaml": "kind: ConfigMap\n", "notes.yaml": "x: 1\n"}, want: false},
		"a file changed":                              {stored: map[string]string{"Kptfile": rendered, "cm.yaml": "kind: ConfigMap # mine\n"}, want: false},
		"a file removed":                              {stored: map[string]string{"Kptfile": rendered}, want: false},
		"the Kptfile's pipeline changed":              {stored: map[string]string{"Kptfile": kptfile + "info:\n  description: mine\n", "cm.yaml": "kind: ConfigMap\n"}, want: false},
		"a Kptfile that does not parse, not the same": {stored: map[string]string{"Kptfile": "kind: [", "cm.yaml": "kind: ConfigMap\n"}, want: false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := HoldsWhatWasWritten(sent, c.stored); got != c.want {
				t.Errorf("HoldsWhatWasWritten = %v, want %v", got, c.want)
			}
		})
	}
}
