package packagevariant_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit"
)

// The integration tests run the controllers as the binary does (built by
// controllers.Build on shared informers, the rate-limited workqueue, two
// workers), through pkg/offline, against porchsim and a fake cluster for
// the ConfigMaps that config injection reads. They wait on conditions with
// a timeout, never for a fixed time.

// The fixtures shared with the unit tests (fixtures_test.go).
const testNS = packagevariant.TestNS

var (
	newVariant  = packagevariant.NewVariant
	customised  = packagevariant.Customised
	configMap   = packagevariant.ConfigMap
	mustContain = packagevariant.MustContain
)

// Upstream blueprint "blueprints/app": a Deployment, a README and an
// injection point for a ConfigMap named region-config.
const kptfileV1 = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
info:
  description: the app blueprint
`

func blueprintFiles(replicas int, readme string) map[string]string {
	return map[string]string{
		"Kptfile": kptfileV1,
		"deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # the app
spec:
  replicas: %d
`, replicas),
		"region.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: region-config
  annotations:
    kpt.dev/config-injection: required
data:
  region: unset
`,
		"README.md": readme,
	}
}

// harness is the kit's, with the variant controller.
type harness struct {
	*kit.Harness
	ctrl *packagevariant.Controller
}

type harnessOption func(*kit.Options)

// withAccess bounds what variants read by their ServiceAccounts.
func withAccess(c *access.Checker) harnessOption {
	return func(o *kit.Options) { o.Access = c }
}

func withConfigMap(name string, data map[string]string) harnessOption {
	return func(o *kit.Options) { o.Objects = append(o.Objects, configMap(name, data)) }
}

// withSim prepares the Sim before the controller starts.
func withSim(setup func(*porchsim.Sim)) harnessOption {
	return func(o *kit.Options) { o.Setup = setup }
}

// prependReactor puts a reaction in front of the Sim's fake clientset, for
// a test to act while a request of the controller is on its way. Call it
// from withSim: adding one to a clientset in use races with its readers.
func prependReactor(s *porchsim.Sim, verb, resource string, reaction clienttesting.ReactionFunc) {
	s.Clientset().(interface {
		PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	}).PrependReactor(verb, resource, reaction)
}

// restart restarts the controllers (kit.Harness.Restart) and follows the
// new variant controller.
func (h *harness) restart(before func()) {
	h.T.Helper()
	h.Restart(before)
	h.ctrl = h.Run.Controller(packagevariant.ControllerName).(*packagevariant.Controller)
}

// newHarness starts a Sim holding revision 1 of blueprints/app (and a
// deployment repository "deploy"), then the controllers on top of it.
func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	o := kit.Options{
		Namespace:    testNS,
		Repositories: map[string]map[string]string{"deploy": {"env": "prod"}},
		Blueprint:    blueprintFiles(1, "v1\n"),
	}
	for _, opt := range opts {
		opt(&o)
	}
	k := kit.Start(t, o)
	return &harness{Harness: k, ctrl: k.Run.Controller(packagevariant.ControllerName).(*packagevariant.Controller)}
}

func (h *harness) syncCount(name string) int { return h.SyncCount(packagevariant.ControllerName, name) }

// resync queues a variant, as a periodic resync would, and waits until it
// was synced.
func (h *harness) resync(name string) {
	h.T.Helper()
	h.Resync(packagevariant.ControllerName, name, h.ctrl.Enqueue)
}

func (h *harness) deleteVariant(name string) {
	h.T.Helper()
	if err := h.Client.ConfigV1alpha1().PackageVariants(testNS).Delete(h.Ctx, name, metav1.DeleteOptions{}); err != nil {
		h.T.Fatalf("delete PackageVariant %s: %v", name, err)
	}
}

// condition returns a variant's condition of a type, or nil.
func (h *harness) condition(name, condType string) *metav1.Condition {
	pv := h.Variant(name)
	if pv == nil {
		return nil
	}
	return meta.FindStatusCondition(pv.Status.Conditions, condType)
}

func (h *harness) waitReady(name string) {
	h.T.Helper()
	h.WaitVariantCondition(name, packagevariant.ConditionReady, metav1.ConditionTrue, packagevariant.ReasonNoErrors)
}

// revisions are the revisions of deploy/<pkg>, without the placeholder
// (main) that Porch makes at the first publish.
func (h *harness) revisions(pkg string) []porchv1alpha1.PackageRevision {
	return h.Revisions("deploy", pkg)
}

// summary is "<workspace>:<lifecycle>" for each revision, for comparisons.
var summary = kit.Summary

func (h *harness) waitRevisions(pkg string, want ...string) []porchv1alpha1.PackageRevision {
	h.T.Helper()
	var revs []porchv1alpha1.PackageRevision
	h.WaitList("deploy/"+pkg+" revisions", func() []string { revs = h.revisions(pkg); return summary(revs) }, want...)
	return revs
}

// expectRevisions checks the revisions of deploy/<pkg> right now.
func (h *harness) expectRevisions(pkg string, want ...string) {
	h.T.Helper()
	sort.Strings(want)
	if got := summary(h.revisions(pkg)); strings.Join(got, ",") != strings.Join(want, ",") {
		h.T.Fatalf("deploy/%s revisions: got %v, want %v", pkg, got, want)
	}
}

// updateConfigMap changes an in-cluster ConfigMap once the controllers
// watch ConfigMaps.
func (h *harness) updateConfigMap(name string, data map[string]string) {
	h.T.Helper()
	h.UpdateObject(configMap(name, data))
}

func controllerOwners(pr *porchv1alpha1.PackageRevision) int {
	n := 0
	for _, ref := range pr.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			n++
		}
	}
	return n
}

// createReady creates a variant and waits until it is Ready and the
// controllers are idle; it returns the variant as created.
func (h *harness) createReady(pv *configv1alpha1.PackageVariant) *configv1alpha1.PackageVariant {
	h.T.Helper()
	created := h.CreateVariant(pv)
	h.waitReady(pv.Name)
	h.Settle()
	return created
}

// publishV2 publishes revision 2 of blueprints/app: three replicas and the
// README "v2".
func publishV2(t testing.TB, s *porchsim.Sim) {
	t.Helper()
	if _, err := s.AddPublished(testNS, "blueprints", "app", 2, blueprintFiles(3, "v2\n")); err != nil {
		t.Fatal(err)
	}
}

// publish publishes a revision as a person approving it would.
func (h *harness) publish(name string) {
	h.T.Helper()
	if err := h.Sim.Publish(testNS, name); err != nil {
		h.T.Fatal(err)
	}
}

// goldVariant is variant "app" of blueprints/app with the package context
// tier: gold.
func goldVariant() *configv1alpha1.PackageVariant {
	pv := newVariant("app", "app")
	pv.Spec.PackageContext = &configv1alpha1.PackageContext{Data: map[string]string{"tier": "gold"}}
	return pv
}

// settleRevisions waits until the revisions of deploy/<name> are want and
// variant name is Ready, lets the controllers go idle and checks that the
// revisions are still want.
func (h *harness) settleRevisions(name string, want ...string) []porchv1alpha1.PackageRevision {
	h.T.Helper()
	revs := h.waitRevisions(name, want...)
	h.waitReady(name)
	h.Settle()
	h.expectRevisions(name, want...)
	return revs
}

// readyAppDraft creates variant "app" of blueprints/app, waits until it is
// Ready and returns the name of its draft.
func (h *harness) readyAppDraft() string {
	h.T.Helper()
	h.createReady(newVariant("app", "app"))
	return h.revisions("app")[0].Name
}

// expectEvents checks that n events carry reason.
func (h *harness) expectEvents(reason string, n int) {
	h.T.Helper()
	if ev := h.EventsMatching(reason); len(ev) != n {
		h.T.Errorf("%s events %v, want %d", reason, ev, n)
	}
}

// waitNotReady waits until variant name is not Ready for reason, then lets
// the controllers go idle.
func (h *harness) waitNotReady(name, reason string) {
	h.T.Helper()
	h.WaitVariantCondition(name, packagevariant.ConditionReady, metav1.ConditionFalse, reason)
	h.Settle()
}

// publishedGold creates goldVariant, publishes its first draft as a person
// approving it would, waits until the controllers are idle and returns the
// published revision's name.
func (h *harness) publishedGold() string {
	h.T.Helper()
	h.CreateVariant(goldVariant())
	h.waitReady("app")
	published := h.revisions("app")[0].Name
	h.publish(published)
	h.waitRevisions("app", "packagevariant-1:Published")
	h.Settle()
	return published
}

// expectEditedDraftKept checks that the person's draft of variant "app" is
// still its only revision, with the person's edits.
func (h *harness) expectEditedDraftKept(draft string) {
	h.T.Helper()
	h.expectRevisions("app", "packagevariant-1:Draft")
	expectPersonEdits(h.T, h.Files(draft))
}
