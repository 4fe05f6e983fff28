//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// The CRDs of the health objects, from their projects' Go modules.
var healthCRDs = []struct{ module, version, path, name string }{
	{"github.com/fluxcd/kustomize-controller", "v1.9.6", "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml", "kustomizations.kustomize.toolkit.fluxcd.io"},
	{"github.com/argoproj/argo-cd/v3", "v3.3.0", "manifests/crds/application-crd.yaml", "applications.argoproj.io"},
}

var (
	kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	applications   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// healthReader lets the controller read the health objects, as the README
// says to: a ClusterRole aggregated into the shipped injection role.
const healthReader = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: e2e-health-objects
  labels:
    variant-controller.porch.kpt.dev/aggregate-to-injection: "true"
rules:
- apiGroups: ["kustomize.toolkit.fluxcd.io", "argoproj.io"]
  resources: ["kustomizations", "applications"]
  verbs: ["get", "list", "watch"]
`

var installHealthCRDs = sync.OnceValue(func() error {
	for _, c := range healthCRDs {
		path, err := e2eutil.ModuleFile(c.module, c.version, c.path)
		if err != nil {
			return err
		}
		if out, err := env.kubectl.Run("apply", "--server-side", "-f", path); err != nil {
			return fmt.Errorf("install %s: %v\n%s", c.name, err, out)
		}
		if err := waitEstablished(c.name, time.Minute); err != nil {
			return err
		}
	}
	if out, err := env.kubectl.RunInput(healthReader, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("grant the controller the health objects: %v\n%s", err, out)
	}
	return nil
})

// TestRolloutHealthGated: a set whose rollout checks health, on the real
// API server with the real CRDs of Flux (Kustomization) and Argo CD
// (Application); the test writes their status as those controllers do. A
// wave finishes only once each variant's object reports the revision it
// published as running and healthy; an unhealthy one halts the rollout
// until it recovers.
func TestRolloutHealthGated(t *testing.T) {
	if err := installHealthCRDs(); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, b *backend) {
		t.Run("Kustomization", func(t *testing.T) { testHealthGated(t, b, dyn, fluxObject) })
		t.Run("Application", func(t *testing.T) { testHealthGated(t, b, dyn, argoObject) })
	})
}

// healthObject is one project's object for the test: its resource, the
// check of the set, and how to write the object with its controller's
// status for a revision (healthy or failed; "" revision: no status yet).
type healthObject struct {
	resource schema.GroupVersionResource
	// statusSubresource: the status is written through /status.
	statusSubresource bool
	check             func() *configv1alpha2.RolloutHealth
	object            func(ns, name, revision string, healthy bool) *unstructured.Unstructured
}

var fluxObject = healthObject{
	resource: kustomizations, statusSubresource: true,
	check: func() *configv1alpha2.RolloutHealth {
		return &configv1alpha2.RolloutHealth{
			APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", NameExpr: "repository.name",
			Current: "object.?status.?lastAppliedRevision.orValue('') == revision.name && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
			Failed:  "object.?status.?lastAttemptedRevision.orValue('') == revision.name && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')",
		}
	},
	object: func(ns, name, revision string, healthy bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"interval": "1m", "path": "./" + name, "prune": true,
				"sourceRef": map[string]any{"kind": "GitRepository", "name": name}},
		}}
		if revision == "" {
			return u
		}
		status, reason, applied := "True", "ReconciliationSucceeded", revision
		if !healthy {
			status, reason, applied = "False", "HealthCheckFailed", ""
		}
		u.Object["status"] = map[string]any{
			"observedGeneration": int64(1), "lastAppliedRevision": applied, "lastAttemptedRevision": revision,
			"conditions": []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": "revision " + revision,
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": int64(1)}},
		}
		return u
	},
}

var argoObject = healthObject{
	resource: applications,
	check: func() *configv1alpha2.RolloutHealth {
		return &configv1alpha2.RolloutHealth{
			APIVersion: "argoproj.io/v1alpha1", Kind: "Application", NameExpr: "repository.name + '-' + variant.downstream.package",
			Current: "object.?status.?sync.?revision.orValue('') == revision.name && object.?status.?sync.?status.orValue('') == 'Synced' && object.?status.?health.?status.orValue('') == 'Healthy'",
			Failed:  "object.?status.?sync.?revision.orValue('') == revision.name && object.?status.?health.?status.orValue('') == 'Degraded'",
		}
	},
	object: func(ns, name, revision string, healthy bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name + "-app", "namespace": ns},
			"spec": map[string]any{"project": "default", "destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": name},
				"source": map[string]any{"repoURL": "http://git.example/" + name, "path": "app", "targetRevision": "main"}},
		}}
		if revision == "" {
			return u
		}
		health := "Healthy"
		if !healthy {
			health = "Degraded"
		}
		u.Object["status"] = map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": revision},
			"health": map[string]any{"status": health},
		}
		return u
	},
}

// write creates or replaces the object of repository name, its status as
// its controller writes it.
func (h healthObject) write(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns, name, revision string, healthy bool) {
	t.Helper()
	obj := h.object(ns, name, revision, healthy)
	res := dyn.Resource(h.resource).Namespace(ns)
	cur, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		if revision == "" {
			return
		}
		cur, err = res.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if h.statusSubresource {
		_, err = res.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	} else {
		_, err = res.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("write the status of %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

func testHealthGated(t *testing.T, b *backend, dyn dynamic.Interface, h healthObject) {
	ns := createNamespace(t, b.ns("e2e-health-"+strings.ToLower(h.check().Kind)))
	ctx := context.Background()
	publishUpstream(t, ns)
	tieredSites(t, ns, map[string]string{"edge-1": "canary", "edge-2": "rest"})
	for _, repo := range []string{"edge-1", "edge-2"} {
		h.write(t, ctx, dyn, ns, repo, "", false)
	}
	ctrl := startController(t, "controller", ns)
	set := tieredSet(ns)
	set.Spec.Rollout = &configv1alpha2.Rollout{
		Waves: []configv1alpha2.Wave{
			{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}}},
			{Name: "rest"},
		},
		Health: h.check(),
	}
	createSet(t, ctx, set)
	eventually(t, ctrl, "2 Ready variants with one draft each", func() (bool, string) { return fleetReady(ctx, ns, 2) })
	r := &rolloutRun{t: t, ctx: ctx, ns: ns, ctrl: ctrl}
	r.publishDrafts(r.open())

	rolledOut := func(what, reason, phases, message string) {
		t.Helper()
		eventually(t, ctrl, what, func() (bool, string) {
			pvs, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Get(ctx, "edge", metav1.GetOptions{})
			if err != nil || pvs.Status.Rollout == nil {
				return false, fmt.Sprint(err)
			}
			var got []string
			for _, w := range pvs.Status.Rollout.Waves {
				got = append(got, w.Name+":"+string(w.Phase))
			}
			cond := meta.FindStatusCondition(pvs.Status.Conditions, "RolledOut")
			if cond == nil {
				return false, "no RolledOut"
			}
			return cond.Reason == reason && strings.Join(got, " ") == phases && strings.Contains(cond.Message, message),
				fmt.Sprintf("%s %s: %s", strings.Join(got, " "), cond.Reason, cond.Message)
		})
	}
	rolledOut("the canary published, waiting for its health", "WaveProgressing", "canary:Progressing rest:Pending", "1 blocked (edge-edge-1-app (not healthy yet: ")

	h.write(t, ctx, dyn, ns, "edge-1", publishedOf(t, ctx, ns, "edge-1"), true)
	h.write(t, ctx, dyn, ns, "edge-2", publishedOf(t, ctx, ns, "edge-2"), false)
	rolledOut("the rest wave halted on edge-2's health", "Halted", "canary:Finished rest:Halted", "edge-edge-2-app (Unhealthy: ")
	// variantctl rollout status names each variant's state.
	out, err := exec.Command(filepath.Join(env.bin, "variantctl"), "rollout", "status", "edge", "-n", ns, "--kubeconfig", env.kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("variantctl rollout status: %v\n%s", err, out)
	}
	for _, row := range []string{`(?m)^edge-edge-1-app\s+canary\s+healthy$`, `(?m)^edge-edge-2-app\s+rest\s+failed\s+Unhealthy: `} {
		if !regexp.MustCompile(row).Match(out) {
			t.Errorf("variantctl rollout status has no line matching %s:\n%s", row, out)
		}
	}

	h.write(t, ctx, dyn, ns, "edge-2", publishedOf(t, ctx, ns, "edge-2"), true)
	r.waitRolledOut()
}

// publishedOf is the name of the Published revision of repo/app.
func publishedOf(t *testing.T, ctx context.Context, ns, repo string) string {
	t.Helper()
	prs, err := env.admin.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	best := ""
	rev := 0
	for _, pr := range prs.Items {
		if pr.Spec.RepositoryName == repo && pr.Spec.PackageName == "app" && pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished && pr.Spec.Revision > rev {
			best, rev = pr.Name, pr.Spec.Revision
		}
	}
	if best == "" {
		t.Fatalf("%s/app has no Published revision", repo)
	}
	return best
}
