package fleetdiff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const injectedCM = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    kpt.dev/config-injection: required
    kpt.dev/injected-resource: cluster-settings
data:
  region: %s
  tier: gold
`

const injectedCR = `apiVersion: infra.example.com/v1
kind: Database
metadata:
  name: db
  annotations:
    kpt.dev/injected-resource: db-settings
spec:
  size: %s
  replicas:
  - zone-a
`

// TestMaskInjected: injected values are masked, "***" when unchanged and
// "*** (before)"/"*** (after)" when changed; what injection did not write
// is shown as it is.
func TestMaskInjected(t *testing.T) {
	before := map[string]string{
		"settings.yaml": strings.Replace(injectedCM, "%s", "us-east", 1),
		"db.yaml":       strings.Replace(injectedCR, "%s", "large", 1),
		"README.md":     "region: us-east\n",
	}
	after := map[string]string{
		"settings.yaml": strings.Replace(injectedCM, "%s", "eu-west", 1),
		"db.yaml":       strings.Replace(injectedCR, "%s", "large", 1),
		"README.md":     "region: us-east\n",
	}
	b, a := maskInjected(before, after)
	for name, tc := range map[string]struct {
		got, want string
	}{
		"changed value, before": {b["settings.yaml"], "  region: '*** (before)'\n  tier: '***'\n"},
		"changed value, after":  {a["settings.yaml"], "  region: '*** (after)'\n  tier: '***'\n"},
		"spec of another kind":  {a["db.yaml"], "spec:\n  size: '***'\n  replicas:\n  - '***'\n"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("%s: want %q in\n%s", name, tc.want, tc.got)
		}
	}
	for _, files := range []map[string]string{b, a} {
		for path, content := range files {
			for _, secret := range []string{"us-east\n  tier", "eu-west", "gold", "large", "zone-a"} {
				if strings.Contains(content, secret) {
					t.Errorf("%s still shows %q:\n%s", path, secret, content)
				}
			}
		}
		if diff := cmp.Diff("region: us-east\n", files["README.md"]); diff != "" {
			t.Errorf("a file without injected resources changed (-want +got):\n%s", diff)
		}
	}
	if !strings.Contains(a["settings.yaml"], "kpt.dev/injected-resource: cluster-settings") {
		t.Errorf("the annotation naming the injected object is masked too:\n%s", a["settings.yaml"])
	}
	if d := UnifiedDiff("a", "b", b, a); !strings.Contains(d, "-  region: '*** (before)'") || !strings.Contains(d, "+  region: '*** (after)'") || strings.Contains(d, "db.yaml") {
		t.Errorf("the masked diff tells what changed, and only that:\n%s", d)
	}
}
