//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
)

// TestRolloutRefusedByAPIServer: the API server itself refuses a set whose
// spec.rollout validation refuses (the CRD's OpenAPI and CEL rules), with
// 422 and the field path, both through kubectl apply and the API; a good
// rollout is accepted. No backend is needed: it is the CRD's word.
func TestRolloutRefusedByAPIServer(t *testing.T) {
	ns := createNamespace(t, "e2e-rollout-refused")
	const head = `apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: edge
spec:
  upstream: {repo: blueprints, package: app}
  targets:
  - repositorySelector: {matchLabels: {env: prod}}
  rollout:
`
	cases := map[string]struct {
		rollout string
		field   string
	}{
		"maxConcurrent: a word":         {"    waves: [{name: canary, maxConcurrent: abc}]\n", "spec.rollout.waves[0].maxConcurrent"},
		"maxConcurrent: zero":           {"    waves: [{name: canary, maxConcurrent: 0}]\n", "spec.rollout.waves[0].maxConcurrent"},
		"maxConcurrent: 150%":           {"    waves: [{name: canary, maxConcurrent: '150%'}]\n", "spec.rollout.waves[0].maxConcurrent"},
		"approval: unknown":             {"    waves: [{name: canary, approval: Sometimes}]\n", "spec.rollout.waves[0].approval"},
		"two waves of one name":         {"    waves: [{name: canary}, {name: canary}]\n", "spec.rollout.waves[1]"},
		"a wave name with upper case":   {"    waves: [{name: Canary}]\n", "spec.rollout.waves[0].name"},
		"no waves":                      {"    soakSeconds: 60\n", "spec.rollout.waves"},
		"a negative maxFailures":        {"    waves: [{name: canary}]\n    maxFailures: -1\n", "spec.rollout.maxFailures"},
		"a progress deadline of zero":   {"    waves: [{name: canary}]\n    progressDeadlineSeconds: 0\n", "spec.rollout.progressDeadlineSeconds"},
		"a soak of minus one second":    {"    waves: [{name: canary}]\n    soakSeconds: -1\n", "spec.rollout.soakSeconds"},
		"maxConcurrent: a quoted count": {"    waves: [{name: canary, maxConcurrent: '5'}]\n", "spec.rollout.waves[0].maxConcurrent"},
		"creates: unknown":              {"    waves: [{name: canary}]\n    creates: Later\n", "spec.rollout.creates"},
		"a health check without a kind": {"    waves: [{name: canary}]\n    health: {apiVersion: v1, nameExpr: variant.name}\n", "spec.rollout.health.kind"},
	}
	ctx := context.Background()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			manifest := head + tc.rollout
			out, err := env.kubectl.RunInput(manifest, "apply", "-n", ns, "-f", "-")
			if err == nil {
				t.Fatalf("kubectl apply accepted the set:\n%s\n%s", manifest, out)
			}
			if !strings.Contains(err.Error(), "is invalid") || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("kubectl apply's refusal does not name %s as invalid: %v", tc.field, err)
			}
			var set configv1alpha2.PackageVariantSet
			if err := yaml.UnmarshalStrict([]byte(manifest), &set); err != nil {
				// A word where a number goes cannot even be decoded by a
				// Go client; kubectl's answer above is the test.
				return
			}
			_, err = env.admin.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, &set, metav1.CreateOptions{})
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != http.StatusUnprocessableEntity {
				t.Fatalf("create: want 422 Unprocessable Entity, got %v", err)
			}
			var fields []string
			if d := status.Status().Details; d != nil {
				for _, c := range d.Causes {
					fields = append(fields, c.Field)
				}
			}
			if !slices.Contains(fields, tc.field) {
				t.Errorf("create's 422 names the fields %v, want %s", fields, tc.field)
			}
		})
	}
	good := head + "    waves: [{name: canary, maxConcurrent: 1}, {name: prod, maxConcurrent: '25%', approval: Manual}]\n    maxFailures: 1\n"
	if out, err := env.kubectl.RunInput(good, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply refused a good rollout: %v\n%s", err, out)
	}
}

// TestRolloutRatchetsValuesStoredBeforeTheRules: a set stored before the
// CRD refused its spec.rollout (here: a CRD without the maxConcurrent rule,
// as an older release installed it) keeps being updatable once the rule is
// in: the API server ratchets, refusing only a value that changes to
// another refused one. Upgrading the CRD never strands a live set.
func TestRolloutRatchetsValuesStoredBeforeTheRules(t *testing.T) {
	ns := createNamespace(t, "e2e-rollout-ratchet")
	const crd = "packagevariantsets.config.porch.kpt.dev"
	original, err := env.kubectl.Run("get", "crd", crd, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	replaceSchema := func(edit func(maxConcurrent map[string]any)) {
		t.Helper()
		live, err := env.kubectl.Run("get", "crd", crd, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		var cur, orig map[string]any
		if err := json.Unmarshal([]byte(live), &cur); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(original), &orig); err != nil {
			t.Fatal(err)
		}
		cur["spec"] = orig["spec"]
		if edit != nil {
			versions, _ := cur["spec"].(map[string]any)["versions"].([]any)
			for _, v := range versions {
				if v.(map[string]any)["name"] != "v1alpha2" {
					continue
				}
				props := v.(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
				for _, step := range []string{"spec", "rollout", "waves"} {
					props = props["properties"].(map[string]any)[step].(map[string]any)
				}
				edit(props["items"].(map[string]any)["properties"].(map[string]any)["maxConcurrent"].(map[string]any))
			}
		}
		b, err := json.Marshal(cur)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := env.kubectl.RunInput(string(b), "replace", "-f", "-"); err != nil {
			t.Fatalf("replace the CRD: %v\n%s", err, out)
		}
	}
	t.Cleanup(func() { replaceSchema(nil) })
	set := func(name, maxConcurrent string) string {
		return fmt.Sprintf(`apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: %s
spec:
  upstream: {repo: blueprints, package: app}
  targets:
  - repositorySelector: {matchLabels: {env: prod}}
  rollout:
    waves: [{name: canary, maxConcurrent: '%s'}]
`, name, maxConcurrent)
	}
	// until: kubectl apply of manifest, retried until it is accepted (or,
	// with refused, refused) as the API server takes the CRD in.
	until := func(what, manifest string, refused bool) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			out, err := env.kubectl.RunInput(manifest, "apply", "-n", ns, "-f", "-")
			if (err != nil) == refused {
				if err != nil {
					return err.Error()
				}
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %v after a minute: %s", what, err, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// An older CRD, without the rule: a set with maxConcurrent 150% is
	// stored.
	replaceSchema(func(mc map[string]any) { delete(mc, "x-kubernetes-validations"); delete(mc, "maxLength") })
	until("the old CRD accepts maxConcurrent 150%", set("stored", "150%"), false)

	// The CRD of this release: a new set with it is refused, the stored
	// one is still updatable as long as the value stays.
	replaceSchema(nil)
	until("the new CRD refuses maxConcurrent 150%", set("probe", "150%"), true)
	if out, err := env.kubectl.Run("patch", "-n", ns, "packagevariantset", "stored", "--type=merge", "-p", `{"metadata":{"labels":{"team":"edge"}},"spec":{"rollout":{"soakSeconds":60}}}`); err != nil {
		t.Errorf("an update that leaves the stored maxConcurrent alone was refused (no ratcheting): %v\n%s", err, out)
	}
	out, err := env.kubectl.Run("patch", "-n", ns, "packagevariantset", "stored", "--type=json", "-p", `[{"op":"replace","path":"/spec/rollout/waves/0/maxConcurrent","value":"200%"}]`)
	if err == nil || !strings.Contains(err.Error(), "spec.rollout.waves[0].maxConcurrent") {
		t.Errorf("changing the stored maxConcurrent to another refused value: %v %s, want it refused naming spec.rollout.waves[0].maxConcurrent", err, out)
	}
	if out, err := env.kubectl.Run("patch", "-n", ns, "packagevariantset", "stored", "--type=json", "-p", `[{"op":"replace","path":"/spec/rollout/waves/0/maxConcurrent","value":"50%"}]`); err != nil {
		t.Errorf("fixing the stored maxConcurrent was refused: %v\n%s", err, out)
	}
}
