package packagevariantset_test

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit"
)

// The integration tests run both controllers, as the binary does (built
// by controllers.Build), through pkg/offline against porchsim;
// objectSelector kinds come from offline's fake cluster.

const testNS = "fleet"

func blueprint(readme string) map[string]string {
	return map[string]string{
		"Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"README.md": readme,
		"deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
`,
	}
}

// harness is the kit's, with the set controller.
type harness struct {
	*kit.Harness
	set *packagevariantset.Controller
}

// newHarness starts a Sim with blueprints/app revision 1 and the given
// deployment repositories (name -> labels), then both controllers.
func newHarness(t *testing.T, repos map[string]map[string]string, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	return startHarness(t, repos, nil, nil, objects...)
}

// newHarnessWithSim is newHarness with setup run on the Sim before the
// controllers start (reactors must be in place before anything reads the
// clientset).
func newHarnessWithSim(t *testing.T, repos map[string]map[string]string, setup func(*porchsim.Sim), objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	return startHarness(t, repos, setup, nil, objects...)
}

// newHarnessWithAccess is newHarness with what sets and variants read
// bounded by their ServiceAccounts.
func newHarnessWithAccess(t *testing.T, repos map[string]map[string]string, checker *access.Checker, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	return startHarness(t, repos, nil, checker, objects...)
}

func startHarness(t *testing.T, repos map[string]map[string]string, setup func(*porchsim.Sim), checker *access.Checker, objects ...*unstructured.Unstructured) *harness {
	t.Helper()
	// Readiness changes of variants reach their set batched, as in the
	// cluster.
	k := kit.Start(t, kit.Options{
		Namespace: testNS, Repositories: repos, Blueprint: blueprint("v1\n"),
		Objects: objects, Setup: setup, Access: checker,
		ReadinessDelay: packagevariantset.DefaultReadinessDelay,
	})
	h := &harness{Harness: k, set: k.Run.Controller(packagevariantset.ControllerName).(*packagevariantset.Controller)}
	return h
}

func (h *harness) syncCount(name string) int {
	return h.SyncCount(packagevariantset.ControllerName, name)
}

// resync queues a set and waits until it was synced once more.
func (h *harness) resync(name string) {
	h.T.Helper()
	h.Resync(packagevariantset.ControllerName, name, h.set.Enqueue)
}

func names[T any](m map[string]T) []string {
	return slices.Sorted(maps.Keys(m))
}

func (h *harness) waitVariants(want ...string) map[string]configv1alpha1.PackageVariant {
	h.T.Helper()
	var got map[string]configv1alpha1.PackageVariant
	h.WaitList("variants", func() []string { got = h.Variants(); return names(got) }, want...)
	return got
}

// drafts is "<repo>/<package>:<lifecycle>" of every downstream revision.
func (h *harness) drafts() []string {
	var out []string
	for _, pr := range h.Sim.PackageRevisions(testNS) {
		if pr.Spec.RepositoryName == kit.UpstreamRepo {
			continue
		}
		out = append(out, fmt.Sprintf("%s/%s:%s", pr.Spec.RepositoryName, pr.Spec.PackageName, pr.Spec.Lifecycle))
	}
	sort.Strings(out)
	return out
}

func (h *harness) waitDrafts(want ...string) {
	h.T.Helper()
	h.WaitList("downstream revisions", h.drafts, want...)
}

func repoLabels(env, region string) map[string]string {
	return map[string]string{"env": env, "region": region}
}

func prodSelector() *configv1alpha2.RepositorySelector {
	return &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
}

func newSet(name string, targets ...configv1alpha2.Target) *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets:  targets,
		},
	}
}
