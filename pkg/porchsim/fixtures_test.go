package porchsim

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/google/go-cmp/cmp"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
	"github.com/porch-variants/variant-controller/pkg/porchsim/porchsimtest"
)

const ns = "ns"

// upstreamV1 is revision 1 of the blueprint "app".
const upstreamV1 = "blueprints.app.v1"

func deploymentYAML(replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # the app
spec:
  replicas: %d
  template:
    spec:
      containers:
      - name: app
        image: %s
`, replicas, image)
}

func blueprint(replicas int, image, readme string) map[string]string {
	return map[string]string{
		kptfileName: `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: anything # replaced by the package name
info:
  description: the app blueprint
`,
		"deployment.yaml": deploymentYAML(replicas, image),
		"README.md":       readme,
	}
}

// fixture is a Sim with a blueprints repository holding revision 1 of
// package "app" and a deployment repository "deploy".
func fixture(t *testing.T) (*Sim, versioned.Interface) {
	t.Helper()
	s := New()
	s.AddRepository(ns, "blueprints", false, map[string]string{"kind": "blueprints"})
	s.AddRepository(ns, "deploy", true, nil)
	if _, err := s.AddPublished(ns, "blueprints", "app", 1, blueprint(1, "app:v1", "readme v1\n")); err != nil {
		t.Fatalf("AddPublished: %v", err)
	}
	return s, s.Clientset()
}

// newDraft is a new revision of repo/pkg in workspace ws, made by task,
// with a name Porch ignores.
func newDraft(repo, pkg, ws string, task porchv1alpha1.Task) *porchv1alpha1.PackageRevision {
	pr := porchsimtest.NewDraft(ns, repo, pkg, ws, task)
	pr.Name = "ignored-by-porch"
	return pr
}

// cloneTask is a clone of the revision named upstream.
var cloneTask = porchsimtest.CloneTask

func editTask(source string) porchv1alpha1.Task {
	return porchv1alpha1.Task{
		Type: porchv1alpha1.TaskTypeEdit,
		Edit: &porchv1alpha1.PackageEditTaskSpec{Source: &porchv1alpha1.PackageRevisionRef{Name: source}},
	}
}

func upgradeTask(oldUp, newUp, local string) porchv1alpha1.Task {
	return porchv1alpha1.Task{
		Type: porchv1alpha1.TaskTypeUpgrade,
		Upgrade: &porchv1alpha1.PackageUpgradeTaskSpec{
			OldUpstream:             porchv1alpha1.PackageRevisionRef{Name: oldUp},
			NewUpstream:             porchv1alpha1.PackageRevisionRef{Name: newUp},
			LocalPackageRevisionRef: porchv1alpha1.PackageRevisionRef{Name: local},
			Strategy:                porchv1alpha1.ResourceMerge,
		},
	}
}

func initTask() porchv1alpha1.Task {
	return porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "new"}}
}

func create(t *testing.T, c versioned.Interface, pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	t.Helper()
	got, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(), pr, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", helper.PackageRevisionName(pr.Spec.RepositoryName, pr.Spec.PackageName, string(pr.Spec.WorkspaceName)), err)
	}
	return got
}

// getter is the Get of a typed client.
type getter[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// mustGet gets the object name through client, failing the test if it
// cannot.
func mustGet[T any](t *testing.T, client getter[T], name string) T {
	t.Helper()
	o, err := client.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return o
}

// lister is the List of a typed client.
type lister[L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// mustList lists through client, failing the test if it cannot.
func mustList[L any](t *testing.T, client lister[L], opts metav1.ListOptions) L {
	t.Helper()
	l, err := client.List(context.Background(), opts)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return l
}

// watchFromList lists through client and watches from the list's
// resourceVersion, as an informer starts; the watch stops with the test.
func watchFromList[L interface{ GetResourceVersion() string }](t *testing.T, client interface {
	lister[L]
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}) watch.Interface {
	t.Helper()
	list := mustList(t, client, metav1.ListOptions{})
	w, err := client.Watch(context.Background(), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

func getPR(t *testing.T, c versioned.Interface, name string) *porchv1alpha1.PackageRevision {
	t.Helper()
	return mustGet(t, c.PorchV1alpha1().PackageRevisions(ns), name)
}

func getPRR(t *testing.T, c versioned.Interface, name string) *porchv1alpha1.PackageRevisionResources {
	t.Helper()
	return mustGet(t, c.PorchV1alpha1().PackageRevisionResources(ns), name)
}

// proposeDeletion moves the Published revision name to DeletionProposed
// through an update.
func proposeDeletion(t *testing.T, c versioned.Interface, name string) {
	t.Helper()
	pr := getPR(t, c, name)
	pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDeletionProposed
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Update(context.Background(), pr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("propose the deletion of %s: %v", name, err)
	}
}

func parseKptfile(t *testing.T, content string) *kptfilev1.KptFile {
	t.Helper()
	var kf kptfilev1.KptFile
	if err := yaml.Unmarshal([]byte(content), &kf); err != nil {
		t.Fatalf("parse Kptfile: %v\n%s", err, content)
	}
	return &kf
}

func resources(t *testing.T, s *Sim, name string) map[string]string {
	t.Helper()
	files, err := s.Resources(ns, name)
	if err != nil {
		t.Fatalf("resources of %s: %v", name, err)
	}
	return files
}

// itemNames are the names of a list's items, in order.
func itemNames(t *testing.T, list runtime.Object) []string {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items {
		names = append(names, store.MustAccessor(it).GetName())
	}
	return names
}

func newVariant(name string) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:   &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Downstream: &configv1alpha1.Downstream{Repo: "deploy", Package: name},
		},
	}
}

func yamlUnmarshal(content string, v any) error {
	return yaml.Unmarshal([]byte(content), v)
}

func clienttestingCreate(gvr schema.GroupVersionResource, obj runtime.Object) clienttesting.Action {
	return clienttesting.NewCreateAction(gvr, ns, obj)
}

func clienttestingDelete(gvr schema.GroupVersionResource, name string) clienttesting.Action {
	return clienttesting.NewDeleteAction(gvr, ns, name)
}

func clienttestingWatch(gvr schema.GroupVersionResource) clienttesting.Action {
	return clienttesting.NewWatchAction(gvr, ns, metav1.ListOptions{})
}

// checkDiff fails t, going on, when got differs from want, saying what
// differs (format and args) and how (-want +got).
func checkDiff(t testing.TB, want, got any, format string, args ...any) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", fmt.Sprintf(format, args...), diff)
	}
}
