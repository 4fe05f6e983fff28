package kit_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/test/kit"
)

var blueprint = map[string]string{
	"Kptfile":         "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
	"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n",
}

// TestHarness drives both controllers through the kit: a hand-written
// variant and a set, their conditions, drafts, a spec change and a resync.
func TestHarness(t *testing.T) {
	h := kit.Start(t, kit.Options{
		Namespace:    "kit",
		Repositories: map[string]map[string]string{"prod-a": {"env": "prod"}, "prod-b": {"env": "prod"}, "dev": {"env": "dev"}},
		Blueprint:    blueprint,
		Objects:      []*unstructured.Unstructured{kit.ConfigMap("kit", "settings", map[string]string{"k": "v"})},
	})
	h.CreateVariant(&configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kit", Name: "dev-app"},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: kit.UpstreamRepo, Package: kit.UpstreamPackage},
			Downstream: &configv1alpha1.Downstream{Repo: "dev", Package: "app"},
		},
	})
	h.WaitVariantCondition("dev-app", "Ready", metav1.ConditionTrue, packagevariant.ReasonNoErrors)
	if got := kit.Summary(h.Revisions("dev", "app")); len(got) != 1 || got[0] != "packagevariant-1:Draft" {
		t.Errorf("dev/app revisions %v, want one draft", got)
	}
	h.UpdateVariantSpec("dev-app", func(s *configv1alpha1.PackageVariantSpec) {
		s.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"cluster": "dev"}}
	})
	h.WaitVariantCondition("dev-app", "Ready", metav1.ConditionTrue, packagevariant.ReasonNoErrors)
	kit.MustContain(t, "the draft's package context", h.Files("dev.app.packagevariant-1")["package-context.yaml"], "cluster: dev")

	h.CreateSet(&configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kit", Name: "prod"},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: kit.UpstreamRepo, Package: kit.UpstreamPackage},
			Targets: []configv1alpha2.Target{{RepositorySelector: &configv1alpha2.RepositorySelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			}}},
		},
	})
	h.WaitSetCondition("prod", "Ready", metav1.ConditionTrue, packagevariantset.ReasonReconciled)
	h.WaitList("variants", func() []string {
		var names []string
		for name := range h.Variants() {
			names = append(names, name)
		}
		return names
	}, "dev-app", "prod-prod-a-app", "prod-prod-b-app")
	h.WaitAllVariantsReady()
	h.Settle()
	// Every variant queued, as a full resync queues them.
	before := h.SyncCount(packagevariant.ControllerName, "dev-app")
	h.Resync(packagevariant.ControllerName, "dev-app", func(cache.ObjectName) { h.Run.ResyncVariants() })
	if after := h.SyncCount(packagevariant.ControllerName, "dev-app"); after <= before {
		t.Errorf("syncs of dev-app: %d after a resync, %d before", after, before)
	}
}
