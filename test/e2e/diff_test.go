//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// The blueprint of the diff test has an injection point: the region's
// settings ConfigMap.
const diffSettings = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    kpt.dev/config-injection: required
data:
  region: unset
`

// TestDiffLiveFleet runs variantctl diff, as a ServiceAccount that may only
// read, against a settled fleet the controller made on this control plane:
// every case of the issue, and the fleet unchanged afterwards.
func TestDiffLiveFleet(t *testing.T) {
	ns := namespace(t, "e2e-diff")
	ctx := context.Background()
	repository(t, ns, "blueprints", false, nil)
	publishRevision(t, ns, "v1", porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "e2e blueprint"}}, map[string]string{
		"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n",
		"settings.yaml":   diffSettings,
	})
	edit := porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{Source: &porchv1alpha1.PackageRevisionRef{Name: "blueprints.app.v1"}}}
	publishRevision(t, ns, "v2", edit, map[string]string{
		"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 2\n",
		"settings.yaml":   diffSettings,
	})
	repository(t, ns, "edge-1", true, map[string]string{"env": "prod", "region": "r1"})
	repository(t, ns, "edge-2", true, map[string]string{"env": "prod", "region": "r2"})
	repository(t, ns, "edge-3", true, map[string]string{"env": "staging", "region": "r3"})
	for _, r := range []string{"r1", "r2", "r3"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings-" + r, Namespace: ns}, Data: map[string]string{"region": r}}
		if _, err := env.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	ctrl := startController(t, "controller", false)
	set := diffSet(ns)
	if _, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctrl, "2 Ready variants with one draft each", func() (bool, string) { return fleetReady(ctx, ns, 2) })
	approve(t, ns, "edge-1.app.packagevariant-1")
	eventually(t, ctrl, "the set settled on its 2 variants", func() (bool, string) {
		s, err := env.admin.ConfigV1alpha2().PackageVariantSets(ns).Get(ctx, "edge", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pr, err := env.admin.PorchV1alpha1().PackageRevisions(ns).Get(ctx, "edge-1.app.packagevariant-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.ReadyVariants == 2 && s.Status.ObservedGeneration == s.Generation &&
				pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished,
			fmt.Sprintf("set status %+v; edge-1's revision %s; downstream revisions %v", s.Status, pr.Spec.Lifecycle, downstreamRevisions(ctx, ns))
	})
	reader := diffReader(t, ns)
	before := fleetVersions(t, ns)

	t.Run("its own manifest: no difference", func(t *testing.T) {
		out := runDiff(t, reader, 0, writeSet(t, set))
		mustContain(t, out, "No difference")
	})
	t.Run("the selector gains a repository", func(t *testing.T) {
		s := set.DeepCopy()
		s.Spec.Targets[0].RepositorySelector.LabelSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}}}}
		out := runDiff(t, reader, 1, writeSet(t, s))
		mustContain(t, out, "+ PackageVariant "+ns+"/edge-edge-3-app (set edge): added",
			"+ PackageRevision "+ns+"/edge-3.app.packagevariant-1: created Draft (clone)",
			"+  region: r3", "PackageVariants: 1 added, 0 changed, 0 removed", "1 created (1 clone, 0 edit, 0 upgrade)")
	})
	t.Run("a CEL change of the package context", func(t *testing.T) {
		s := set.DeepCopy()
		s.Spec.Targets[0].Template.PackageContext.DataExprs = append(s.Spec.Targets[0].Template.PackageContext.DataExprs,
			configv1alpha2.MapExpr{Key: ptr("tier"), ValueExpr: ptr("repository.labels['region'] == 'r1' ? 'gold' : 'silver'")})
		out := runDiff(t, reader, 1, writeSet(t, s))
		mustContain(t, out, "+  tier: gold", "+  tier: silver", "PackageVariants: 0 added, 2 changed, 0 removed")
	})
	t.Run("the upstream pin moves to revision 2", func(t *testing.T) {
		s := set.DeepCopy()
		s.Spec.Upstream.Revision = 2
		out := runDiff(t, reader, 1, writeSet(t, s))
		mustContain(t, out, "+ PackageRevision "+ns+"/edge-1.app.packagevariant-2: created Draft (upgrade)",
			"files against edge-1.app.packagevariant-1 (Published 1)", "+  replicas: 2",
			"in place of edge-2.app.packagevariant-1")
	})
	t.Run("deleting the set", func(t *testing.T) {
		out := runDiff(t, reader, 1, "--delete", writeSet(t, set))
		mustContain(t, out, "- PackageVariantSet "+ns+"/edge: removed",
			"! PackageRevision "+ns+"/edge-1.app.packagevariant-1: proposed for deletion (Published 1",
			"- PackageRevision "+ns+"/edge-2.app.packagevariant-1: deleted (was Draft)")
	})
	t.Run("an injector naming a missing object", func(t *testing.T) {
		s := set.DeepCopy()
		s.Spec.Targets[0].Template.Injectors[0].NameExpr = ptr("'missing-' + repository.labels['region']")
		out := runDiff(t, reader, 1, writeSet(t, s))
		mustContain(t, out, "Ready: True NoErrors", "blocks publishing: config.injection.ConfigMap.settings: False NoResourceSelected",
			`no v1 ConfigMap named \"missing-r2\"`)
	})
	t.Run("-o json", func(t *testing.T) {
		s := set.DeepCopy()
		s.Spec.Upstream.Revision = 2
		out := runDiff(t, reader, 1, "-o", "json", writeSet(t, s))
		var d offline.FleetDiff
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if d.Summary.Upgrades != 1 || d.Summary.RevisionsReplaced != 1 {
			t.Errorf("summary %+v, want 1 upgrade and 1 replaced draft", d.Summary)
		}
	})
	t.Run("a reader without rights", func(t *testing.T) {
		nobody, err := e2eutil.ServiceAccountUser(context.Background(), env.kube, env.adminConfig, ns, "nobody", env.workDir)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(env.bin, "variantctl"), "diff", "--kubeconfig", nobody.Kubeconfig, writeSet(t, set))
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, out)
		}
		mustContain(t, string(out), "the cluster refused to list", "needs get and list on")
	})

	if after := fleetVersions(t, ns); !maps.Equal(after, before) {
		t.Errorf("the diffs changed the fleet:\nbefore %s\nafter  %s", before, after)
	}
}

// runDiff runs the variantctl binary as the reader and checks its exit
// status; it returns stdout.
func runDiff(t *testing.T, kubeconfig string, want int, args ...string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd := exec.Command(filepath.Join(env.bin, "variantctl"), append([]string{"diff", "--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if code := exitCode(err); code != want {
		t.Fatalf("variantctl diff %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout.String(), stderr.String())
	}
	t.Logf("variantctl diff %v:\n%s%s", args, stdout.String(), stderr.String())
	return stdout.String()
}

func mustContain(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the output does not contain %q:\n%s", w, text)
		}
	}
}

// publishRevision publishes a revision of blueprints/app made by task,
// with the given files changed, as a person does through Porch's API.
func publishRevision(t *testing.T, ns, workspace string, task porchv1alpha1.Task, files map[string]string) {
	t.Helper()
	ctx := context.Background()
	prs := env.admin.PorchV1alpha1().PackageRevisions(ns)
	draft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName: "app", RepositoryName: "blueprints", WorkspaceName: porchv1alpha1.WorkspaceName(workspace),
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:     []porchv1alpha1.Task{task},
		},
	}
	var created *porchv1alpha1.PackageRevision
	// Porch learns of a new Repository through its watch.
	if err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = prs.Create(ctx, draft, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("create %s of blueprints/app: %v", workspace, err)
	}
	prr, err := env.admin.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		prr.Spec.Resources[k] = v
	}
	if _, err := env.admin.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve(t, ns, created.Name)
}

// approve proposes and approves a revision, as a person does.
func approve(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	prs := env.admin.PorchV1alpha1().PackageRevisions(ns)
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := prs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if cur.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished {
			return true, nil
		}
		if cur.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
			cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
			if cur, err = prs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return false, nil
			}
		}
		cur.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
		err = env.admin.PorchV1alpha1().RESTClient().Put().Namespace(ns).Resource("packagerevisions").
			Name(cur.Name).SubResource("approval").Body(cur).Do(ctx).Error()
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("approve %s: %v", name, err)
	}
}

func diffSet(ns string) *configv1alpha2.PackageVariantSet { return e2eutil.DiffSet(ns) }

func writeSet(t *testing.T, s *configv1alpha2.PackageVariantSet) string {
	t.Helper()
	f, err := e2eutil.WriteManifest(t.TempDir(), s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func exitCode(err error) int { return e2eutil.ExitCode(err) }

// diffReader is the kubeconfig of a ServiceAccount that may only read what
// variantctl diff reads (e2eutil.DiffReader).
func diffReader(t *testing.T, ns string) string {
	t.Helper()
	u, err := e2eutil.DiffReader(context.Background(), env.kube, env.adminConfig, ns, env.workDir)
	if err != nil {
		t.Fatal(err)
	}
	return u.Kubeconfig
}

func fleetVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	v, err := e2eutil.FleetVersions(context.Background(), env.admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
