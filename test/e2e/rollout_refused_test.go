//go:build e2e

package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

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
