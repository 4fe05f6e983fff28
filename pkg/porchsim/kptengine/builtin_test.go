package kptengine

import "testing"

// TestIsBuiltin checks the image strings Porch's FunctionConfigs build in
// (goExecutor tags, with and without the catalog prefix) against some that
// need the function runner.
func TestIsBuiltin(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		image string
		want  bool
	}{
		"SetNamespaceShortTag":           {image: "set-namespace:v0.4", want: true},
		"SetNamespaceFullTagPrefixed":    {image: "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5", want: true},
		"ApplyReplacementsShortTag":      {image: "ghcr.io/kptdev/krm-functions-catalog/apply-replacements:v0.1", want: true},
		"ApplyReplacementsUnprefixed":    {image: "apply-replacements:v0.1.5", want: true},
		"StarlarkFullTag":                {image: "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5", want: true},
		"StarlarkShortTagUnprefixed":     {image: "starlark:v0.5", want: true},
		"PodExecutorTagOnly":             {image: "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1", want: false},
		"OtherRegistry":                  {image: "gcr.io/kpt-fn/set-namespace:v0.4.5", want: false},
		"BinaryExecutorOnly":             {image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2.2", want: false},
		"NoTag":                          {image: "set-namespace", want: false},
		"PrefixWithoutSlashIsNotTheSame": {image: "ghcr.io/kptdev/krm-functions-catalogset-namespace:v0.4.5", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := IsBuiltin(tc.image); got != tc.want {
				t.Errorf("IsBuiltin(%q) = %v, want %v", tc.image, got, tc.want)
			}
		})
	}
}
