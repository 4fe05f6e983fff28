package porchsim

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/porchsim/porchsimtest"
)

// The tests in this file each prove one fact of porch-wire-contract.md,
// section "Measured against real Porch", on the Sim. Each fails on the Sim
// as it was before the facts were measured.

// brokenYAML fails every render: kpt cannot parse it.
const brokenYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed\n"

// failingPipeline is a Kptfile pipeline whose one function, built into
// Porch, runs and fails: its script does not parse.
const failingPipeline = `pipeline:
  mutators:
  - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5
    configMap:
      source: "def broken(:"
`

// TestUIDsDerivedFromName: Porch derives a revision's UID from its
// namespace and name, so a revision deleted and created again has the
// same UID (and a UID precondition tells the two apart no better).
func TestUIDsDerivedFromName(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	first := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	if first.UID != helper.PackageRevisionUID(ns, first.Name) {
		t.Errorf("uid %s, want Porch's %s", first.UID, helper.PackageRevisionUID(ns, first.Name))
	}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	if again.UID != first.UID {
		t.Errorf("re-created revision has uid %s, want the same %s", again.UID, first.UID)
	}
}

// TestDeletePreconditionsIgnored: a delete with a wrong resourceVersion and
// UID precondition deletes all the same.
func TestDeletePreconditionsIgnored(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	wrong := metav1.Preconditions{UID: ptr.To(pr.UID + "x"), ResourceVersion: ptr.To("stale")}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, pr.Name, metav1.DeleteOptions{Preconditions: &wrong}); err != nil {
		t.Fatalf("delete with a stale precondition: %v, want it done", err)
	}
	if _, err := s.PackageRevision(ns, pr.Name); !apierrors.IsNotFound(err) {
		t.Errorf("revision still there: %v", err)
	}
}

// TestReferencedUpstreamIsNotDeleted: Porch refuses (403) to delete a
// revision another revision was cloned or upgraded from, even once it is
// DeletionProposed; deleting the downstream lifts the refusal.
func TestReferencedUpstreamIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	clone := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	proposeDeletion(t, c, upstreamV1)
	err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, upstreamV1, metav1.DeleteOptions{})
	want := "cannot delete package revision, it is referenced as upstream by: " + clone.Name
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("delete of a referenced upstream: got %v, want 403 %q", err, want)
	}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, clone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, upstreamV1, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete once nothing refers to it: %v", err)
	}
	if _, err := s.PackageRevision(ns, upstreamV1); !apierrors.IsNotFound(err) {
		t.Errorf("upstream still there: %v", err)
	}
}

// TestPlaceholderAppearsAtFirstPublish: the first publish of a package,
// upstream or downstream, makes <repo>.<package>.main (revision -1,
// Published, workspace main, never labelled latest), which then holds the
// latest published files, tasks and upstream lock.
func TestPlaceholderAppearsAtFirstPublish(t *testing.T) {
	s, c := fixture(t)
	draft := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	if _, err := s.PackageRevision(ns, "deploy.foo.main"); !apierrors.IsNotFound(err) {
		t.Fatalf("placeholder before any publish: %v, want none", err)
	}
	if err := s.Publish(ns, draft.Name); err != nil {
		t.Fatal(err)
	}
	ph := getPR(t, c, "deploy.foo.main")
	want := porchv1alpha1.PackageRevisionSpec{
		PackageName: "foo", RepositoryName: "deploy", WorkspaceName: "main", Revision: -1,
		Lifecycle: porchv1alpha1.PackageRevisionLifecyclePublished,
		Tasks:     []porchv1alpha1.Task{cloneTask(upstreamV1)},
	}
	got := ph.Spec
	got.ReadinessGates, got.PackageMetadata = nil, nil
	checkDiff(t, want, got, "placeholder spec")
	if len(ph.Labels) != 0 {
		t.Errorf("placeholder labels %v, want none", ph.Labels)
	}
	if ph.Status.SelfLock == nil || ph.Status.SelfLock.Git == nil || ph.Status.SelfLock.Git.Ref != "main" {
		t.Errorf("placeholder selfLock %+v, want ref main", ph.Status.SelfLock)
	}
	if diff := cmp.Diff(getPR(t, c, draft.Name).Status.UpstreamLock, ph.Status.UpstreamLock); diff != "" {
		t.Errorf("placeholder upstreamLock (-published +placeholder):\n%s", diff)
	}
	if diff := cmp.Diff(resources(t, s, draft.Name), resources(t, s, ph.Name)); diff != "" {
		t.Errorf("placeholder files (-published +placeholder):\n%s", diff)
	}
	if _, err := s.PackageRevision(ns, "blueprints.app.main"); err != nil {
		t.Errorf("the upstream's placeholder: %v (AddPublished publishes too)", err)
	}
}

// TestLatestLabelIsComputed: the label follows the highest published
// revision; a DeletionProposed revision keeps it; deleting it moves the
// label back to the previous revision.
func TestLatestLabelIsComputed(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	if _, err := s.AddPublished(ns, "blueprints", "app", 2, blueprint(2, "app:v2", "")); err != nil {
		t.Fatal(err)
	}
	latest := func() []string {
		var out []string
		for _, pr := range s.PackageRevisions(ns) {
			if pr.Labels[porchv1alpha1.LatestPackageRevisionLabel] == "true" {
				out = append(out, pr.Name)
			}
		}
		return out
	}
	checkDiff(t, []string{"blueprints.app.v2"}, latest(), "after publishing v2")
	proposeDeletion(t, c, "blueprints.app.v2")
	checkDiff(t, []string{"blueprints.app.v2"}, latest(), "v2 DeletionProposed keeps the label")
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, "blueprints.app.v2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	checkDiff(t, []string{upstreamV1}, latest(), "after deleting v2 the label moves back")
}

// TestRemovingTheLatestLabelIsInvalid: 422, as real Porch answers.
func TestRemovingTheLatestLabelIsInvalid(t *testing.T) {
	_, c := fixture(t)
	up := getPR(t, c, upstreamV1)
	delete(up.Labels, porchv1alpha1.LatestPackageRevisionLabel)
	_, err := c.PorchV1alpha1().PackageRevisions(ns).Update(context.Background(), up, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "label is managed by porch and cannot be modified by users") {
		t.Errorf("got %v, want Porch's 422", err)
	}
}

// TestOpaqueResourceVersionsAndGenerationZero: resourceVersions are commit
// SHAs, new with every change; generation stays 0; selfLock records the
// revision's git ref at that commit.
func TestOpaqueResourceVersionsAndGenerationZero(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	pr.Labels = map[string]string{"a": "b"}
	updated, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, pr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []*porchv1alpha1.PackageRevision{pr, updated} {
		if len(got.ResourceVersion) != 40 || strings.Trim(got.ResourceVersion, "0123456789abcdef") != "" || got.Generation != 0 {
			t.Errorf("resourceVersion %q generation %d, want a commit SHA and 0", got.ResourceVersion, got.Generation)
		}
		if s.Sequence(got.ResourceVersion) == 0 {
			t.Errorf("Sequence(%q) = 0: the Sim does not know a version it handed out", got.ResourceVersion)
		}
	}
	if updated.ResourceVersion == pr.ResourceVersion {
		t.Error("an update kept the resourceVersion")
	}
	want := &porchv1alpha1.UpstreamLock{Type: "git"}
	if lock := updated.Status.SelfLock; lock == nil || lock.Git == nil || lock.Type != want.Type ||
		lock.Git.Ref != "drafts/foo/ws" || lock.Git.Commit != updated.ResourceVersion || lock.Git.Directory != "foo" {
		t.Errorf("selfLock %+v, want drafts/foo/ws at the revision's commit", lock)
	}
}

// TestEveryUpdateOfADraftRenders: an update of a Draft (a label, a
// proposal) renders the package again; if its pipeline fails, the update
// is refused with Porch's 500 and nothing changes, so a draft that does not
// render cannot be proposed.
func TestEveryUpdateOfADraftRenders(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	files := resources(t, s, pr.Name)
	files["broken.yaml"] = brokenYAML
	if err := s.SetResources(ns, pr.Name, files); err != nil { // a person's edit, stored as is
		t.Fatal(err)
	}
	pr = getPR(t, c, pr.Name)
	for name, change := range map[string]func(*porchv1alpha1.PackageRevision){
		"a label": func(p *porchv1alpha1.PackageRevision) { p.Labels = map[string]string{"a": "b"} },
		"proposal": func(p *porchv1alpha1.PackageRevision) {
			p.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
		},
	} {
		in := pr.DeepCopy()
		change(in)
		_, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, in, metav1.UpdateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "Error rendering package in kpt function pipeline") || !helper.IsRenderFailure(err) {
			t.Errorf("%s on a draft that does not render: got %v, want Porch's 500", name, err)
		}
		if got := getPR(t, c, pr.Name); got.ResourceVersion != pr.ResourceVersion || got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
			t.Errorf("%s: the refused update changed the revision", name)
		}
	}
	if err := s.Propose(ns, pr.Name); err == nil {
		t.Error("Propose of a draft that does not render succeeded")
	}
}

// TestCreateRenders: Porch renders a new draft before storing it; a
// pipeline that fails refuses the create (500) and stores nothing.
func TestCreateRenders(t *testing.T) {
	s, c := fixture(t)
	bad := blueprint(1, "app:v1", "")
	bad["broken.yaml"] = brokenYAML
	if _, err := s.AddPublished(ns, "blueprints", "bad", 1, bad); err != nil {
		t.Fatal(err)
	}
	_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
		newDraft("deploy", "foo", "ws", cloneTask("blueprints.bad.v1")), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("clone of a package that does not render: got %v, want a 500", err)
	}
	if _, err := s.PackageRevision(ns, "deploy.foo.ws"); !apierrors.IsNotFound(err) {
		t.Errorf("a refused create stored a revision: %v", err)
	}
}

// updateWithFailingPipeline adds failingPipeline to the Kptfile of the
// revision name through a resources update, and returns the update's error.
func updateWithFailingPipeline(t *testing.T, c versioned.Interface, name string) error {
	t.Helper()
	prr := getPRR(t, c, name)
	prr.Spec.Resources[kptfileName] = strings.Replace(prr.Spec.Resources[kptfileName], "info:\n", failingPipeline+"info:\n", 1)
	return porchsimtest.ErrOf(c.PorchV1alpha1().PackageRevisionResources(ns).Update(context.Background(), prr, metav1.UpdateOptions{}))
}

// TestPushOnRenderFailure: with porch.kpt.dev/push-on-render-failure the
// files of a resources update that fails to render are stored anyway, and
// the answer is still a 500 that says so; without it nothing is stored.
func TestPushOnRenderFailure(t *testing.T) {
	for _, push := range []bool{false, true} {
		s, c := fixture(t)
		in := pushingOnRenderFailure(newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)), push)
		pr := create(t, c, in)
		before := resources(t, s, pr.Name)
		err := updateWithFailingPipeline(t, c, pr.Name)
		details, stored := helper.RenderFailureDetails(err)
		if !apierrors.IsInternalError(err) || details == "" || stored != push {
			t.Errorf("push=%v: got %v (stored=%v), want Porch's 500 render failure", push, err, stored)
		}
		after := resources(t, s, pr.Name)
		if got := strings.Contains(after[kptfileName], "def broken(:"); got != push {
			t.Errorf("push=%v: the failing pipeline stored: %v", push, got)
		}
		if push && !strings.Contains(after[kptfileName], "reason: RenderFailed") {
			t.Errorf("the stored Kptfile does not record the failure:\n%s", after[kptfileName])
		}
		if !push {
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("nothing must be stored (-before +after):\n%s", diff)
			}
		}
	}
}

// TestStatusCodesOfPorch: Porch's answers where a Kubernetes API server
// would answer differently (the table of the measured section).
func TestStatusCodesOfPorch(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	prs := c.PorchV1alpha1().PackageRevisions(ns)
	draft := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	cases := map[string]struct {
		do   func() error
		code int32
		msg  string
	}{
		"create of an existing workspace": {
			do: func() error {
				return porchsimtest.ErrOf(prs.Create(ctx, newDraft("deploy", "foo", "ws", initTask()), metav1.CreateOptions{}))
			},
			code: 500, msg: "package revision workspaceNames must be unique",
		},
		"update with a stale resourceVersion": {
			do: func() error {
				stale := draft.DeepCopy()
				stale.ResourceVersion = fakeCommit("stale")
				_, err := prs.Update(ctx, stale, metav1.UpdateOptions{})
				return err
			},
			code: 500, msg: "Operation cannot be fulfilled on packagerevisions.porch.kpt.dev",
		},
		"update without a resourceVersion": {
			do: func() error {
				in := draft.DeepCopy()
				in.ResourceVersion = ""
				_, err := prs.Update(ctx, in, metav1.UpdateOptions{})
				return err
			},
			code: 500, msg: "resourceVersion must be specified for an update",
		},
		"delete of a Published revision": {
			do:   func() error { return prs.Delete(ctx, upstreamV1, metav1.DeleteOptions{}) },
			code: 403, msg: "published PackageRevisions must be proposed for deletion",
		},
		"clone from the main placeholder": {
			do: func() error {
				return porchsimtest.ErrOf(prs.Create(ctx, newDraft("deploy", "bar", "ws", cloneTask("blueprints.app.main")), metav1.CreateOptions{}))
			},
			code: 500, msg: "upstream revision may not be the placeholder package revision",
		},
	}
	_ = s
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.do()
			var st apierrors.APIStatus
			if !apierrors.IsInternalError(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want %d", err, tc.code)
			}
			st = err.(apierrors.APIStatus)
			if st.Status().Code != tc.code || !strings.Contains(st.Status().Message, tc.msg) {
				t.Errorf("got %d %q, want %d containing %q", st.Status().Code, st.Status().Message, tc.code, tc.msg)
			}
		})
	}
}

// TestOverlappingWritesIntoARepository: two writes into one repository in
// progress at the same time are recorded (real Porch can lose one); two on
// one revision get Porch's 409; writes into different repositories, and
// writes one after the other, are no overlap.
func TestOverlappingWritesIntoARepository(t *testing.T) {
	s, _ := fixture(t)
	s.AddRepository(ns, "other", true, nil)
	var w writes
	a, err := w.begin(repoRef{ns, "deploy"}, revisionRef{ns, "deploy.a.ws"}, "create packagerevisions deploy.a.ws", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.begin(repoRef{ns, "deploy"}, revisionRef{ns, "deploy.a.ws"}, "update packagerevisions deploy.a.ws", ""); !apierrors.IsConflict(err) {
		t.Errorf("second write on one revision: got %v, want Porch's 409", err)
	}
	other, err := w.begin(repoRef{ns, "other"}, revisionRef{ns, "other.a.ws"}, "create packagerevisions other.a.ws", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.overlaps) != 0 {
		t.Errorf("writes into different repositories overlapped: %v", w.overlaps)
	}
	b, err := w.begin(repoRef{ns, "deploy"}, revisionRef{ns, "deploy.b.ws"}, "create packagerevisions deploy.b.ws", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Overlap{{Namespace: ns, Repository: "deploy", First: "create packagerevisions deploy.a.ws", Second: "create packagerevisions deploy.b.ws"}}
	checkDiff(t, want, w.overlaps, "overlaps")
	w.end(a)
	w.end(b)
	w.end(other)
	c, err := w.begin(repoRef{ns, "deploy"}, revisionRef{ns, "deploy.a.ws"}, "delete packagerevisions deploy.a.ws", "")
	if err != nil {
		t.Fatal(err)
	}
	w.end(c)
	// A person's write at the same time as a client's is not the
	// client's overlap: it cannot serialise its writes with a person's.
	d, err := w.begin(repoRef{ns, "deploy"}, revisionRef{ns, "deploy.d.ws"}, "create packagerevisions deploy.d.ws", "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := w.begin(repoRef{ns, "deploy"}, revisionRef{ns, "deploy.e.ws"}, "update packagerevisionresources deploy.e.ws", "person")
	if err != nil {
		t.Fatal(err)
	}
	w.end(d)
	w.end(e)
	if len(w.overlaps) != 1 {
		t.Errorf("a write after the others ended was taken for an overlap: %v", w.overlaps)
	}
}

// TestConcurrentClientsOverlapIsRecorded: through the clientset, writers
// into one repository that do not wait for each other are caught.
func TestConcurrentClientsOverlapIsRecorded(t *testing.T) {
	s, c := fixture(t)
	// Hold the fake clientset's lock (every request takes it) so that every
	// writer is in progress at once.
	s.clientset.Lock()
	var wg sync.WaitGroup
	for _, pkg := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
				newDraft("deploy", pkg, "ws", cloneTask(upstreamV1)), metav1.CreateOptions{})
		}()
	}
	waitUntil(t, func() bool {
		s.writes.mu.Lock()
		defer s.writes.mu.Unlock()
		return len(s.writes.inflight[repoRef{ns, "deploy"}]) == 3
	})
	s.clientset.Unlock()
	wg.Wait()
	if got := len(s.Overlaps()); got != 2 {
		t.Errorf("%d overlaps recorded, want 2 (the second and third writer): %v", got, s.Overlaps())
	}
}

// waitUntil polls cond until it holds, failing the test after wait.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", wait)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestResourcesUpdateHealsComments: Porch copies the comments a resources
// update lost back from the stored files before it renders ("heals" the
// update): a client that rewrote a map keeps its comments.
func TestResourcesUpdateHealsComments(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	prr := getPRR(t, c, pr.Name)
	if !strings.Contains(prr.Spec.Resources["deployment.yaml"], "# the app") {
		t.Fatalf("the clone lost the comment already:\n%s", prr.Spec.Resources["deployment.yaml"])
	}
	prr.Spec.Resources["deployment.yaml"] = strings.Replace(prr.Spec.Resources["deployment.yaml"], " # the app", "", 1)
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := resources(t, s, pr.Name)["deployment.yaml"]; !strings.Contains(got, "name: app # the app") {
		t.Errorf("the update's lost comment was not healed:\n%s", got)
	}
}

// TestRevisionChangedDuringRenderMakesUpdateStale: the Sim renders a
// resources update without its lock; a change of the revision meanwhile (a
// person's edit) makes the update fail as a stale write, as a new commit
// makes it fail in Porch, and the person's files are kept.
func TestRevisionChangedDuringRenderMakesUpdateStale(t *testing.T) {
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	prr := getPRR(t, c, pr.Name)
	edit := resources(t, s, pr.Name)
	edit["person.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: person\n"
	s.porch.rendering = func() {
		s.porch.rendering = nil
		if err := s.SetResources(ns, pr.Name, edit); err != nil {
			t.Error(err)
		}
	}
	prr.Spec.Resources["controller.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: controller\n"
	_, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(context.Background(), prr, metav1.UpdateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), helper.OptimisticLockMessage) {
		t.Errorf("update while the revision changed: got %v, want Porch's stale-write 500", err)
	}
	got := resources(t, s, pr.Name)
	if _, ok := got["person.yaml"]; !ok {
		t.Error("the person's edit was lost")
	}
	if _, ok := got["controller.yaml"]; ok {
		t.Error("the stale update was stored")
	}
}

// TestCreateRacedByAnotherRevisionIsRefused: the Sim clones and renders a
// new draft without its lock; when a revision with the same workspace is
// stored meanwhile, the create is refused as one whose workspace is taken
// (Porch's 500) and the revision stored first is kept.
func TestCreateRacedByAnotherRevisionIsRefused(t *testing.T) {
	s, c := fixture(t)
	first := newDraft("deploy", "foo", "ws", porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit})
	first.Name = helper.PackageRevisionName("deploy", "foo", "ws")
	first.Labels = map[string]string{"first": "true"}
	first.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDraft
	s.porch.rendering = func() {
		s.porch.rendering = nil
		if _, err := s.Import(first, map[string]string{kptfileName: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: foo\n"}); err != nil {
			t.Error(err)
		}
	}
	_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
		newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), helper.WorkspaceNotUniqueMessage) {
		t.Errorf("create raced by another revision: got %v, want Porch's 500 for a taken workspace", err)
	}
	if got := getPR(t, c, first.Name); got.Labels["first"] != "true" {
		t.Errorf("the revision stored first was replaced: labels %v", got.Labels)
	}
}

// TestReadinessGatesNotEnforced: Porch lets a draft whose readiness gate
// has no True condition be proposed and published (only porchctl checks
// gates); so does the Sim.
func TestReadinessGatesNotEnforced(t *testing.T) {
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	pr.Spec.ReadinessGates = []porchv1alpha1.ReadinessGate{{ConditionType: "config.injection.ConfigMap.region"}}
	pr, err := c.PorchV1alpha1().PackageRevisions(ns).Update(context.Background(), pr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range pr.Status.Conditions {
		if cond.Type == "config.injection.ConfigMap.region" && cond.Status == porchv1alpha1.ConditionTrue {
			t.Fatalf("the gate's condition is True (%+v); the test needs it unmet", cond)
		}
	}
	pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Update(context.Background(), pr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("proposing a draft with an unmet readiness gate: %v, want it accepted as Porch does", err)
	}
	if err := s.Publish(ns, pr.Name); err != nil {
		t.Fatalf("publishing a revision with an unmet readiness gate: %v", err)
	}
	if got := getPR(t, c, pr.Name); got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		t.Errorf("lifecycle %s, want Published", got.Spec.Lifecycle)
	}
}

// TestPackageMetadataFromKptfile: Porch fills a revision's
// spec.packageMetadata from the labels and annotations of its package's
// Kptfile, for a published blueprint, a clone, and a draft whose Kptfile a
// resources update changed.
func TestPackageMetadataFromKptfile(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	bp := blueprint(1, "app:v1", "")
	bp[kptfileName] = strings.Replace(bp[kptfileName], "  name: anything # replaced by the package name\n",
		"  name: anything\n  labels:\n    tier: web\n  annotations:\n    owner: team-a\n", 1)
	if _, err := s.AddPublished(ns, "blueprints", "labelled", 1, bp); err != nil {
		t.Fatal(err)
	}
	want := &porchv1alpha1.PackageMetadata{Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"owner": "team-a"}}
	if diff := cmp.Diff(want, getPR(t, c, "blueprints.labelled.v1").Spec.PackageMetadata); diff != "" {
		t.Errorf("blueprint's packageMetadata (-Kptfile +got):\n%s", diff)
	}

	// What the clone's Kptfile says, whatever the clone added to it.
	fromKptfile := func(name string) *porchv1alpha1.PackageMetadata {
		t.Helper()
		prr := getPRR(t, c, name)
		kf := parseKptfile(t, prr.Spec.Resources[kptfileName])
		return &porchv1alpha1.PackageMetadata{Labels: kf.Metadata.Labels, Annotations: kf.Metadata.Annotations}
	}
	draft := create(t, c, newDraft("deploy", "foo", "ws", cloneTask("blueprints.labelled.v1")))
	kfMeta := fromKptfile(draft.Name)
	if kfMeta.Labels["tier"] != "web" || kfMeta.Annotations["owner"] != "team-a" {
		t.Fatalf("the clone's Kptfile lost the blueprint's metadata: %+v", kfMeta)
	}
	if diff := cmp.Diff(kfMeta, draft.Spec.PackageMetadata); diff != "" {
		t.Errorf("clone's packageMetadata as created (-Kptfile +got):\n%s", diff)
	}
	if diff := cmp.Diff(kfMeta, getPR(t, c, draft.Name).Spec.PackageMetadata); diff != "" {
		t.Errorf("clone's packageMetadata (-Kptfile +got):\n%s", diff)
	}

	prr := getPRR(t, c, draft.Name)
	prr.Spec.Resources[kptfileName] = strings.Replace(prr.Spec.Resources[kptfileName], "tier: web", "tier: db", 1)
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := getPR(t, c, draft.Name).Spec.PackageMetadata
	if got == nil || got.Labels["tier"] != "db" {
		t.Errorf("after the Kptfile's label changed, packageMetadata %+v, want label tier=db", got)
	}
	if diff := cmp.Diff(fromKptfile(draft.Name), got); diff != "" {
		t.Errorf("packageMetadata after a resources update (-Kptfile +got):\n%s", diff)
	}
}

// approve publishes a Proposed revision through the approval subresource
// of the clientset, as a person's client does.
func approve(t *testing.T, c versioned.Interface, pr *porchv1alpha1.PackageRevision) *porchv1alpha1.PackageRevision {
	t.Helper()
	in := pr.DeepCopy()
	in.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	obj, err := c.(interface {
		Invokes(clienttesting.Action, runtime.Object) (runtime.Object, error)
	}).Invokes(clienttesting.NewUpdateSubresourceAction(
		porchv1alpha1.SchemeGroupVersion.WithResource(resPackageRevisions), "approval", ns, in), &porchv1alpha1.PackageRevision{})
	if err != nil {
		t.Fatalf("approve %s: %v", pr.Name, err)
	}
	return obj.(*porchv1alpha1.PackageRevision)
}

// TestPublishTimestampNullUntilPublished: a Draft's (and a Proposed
// revision's) status.publishTimestamp is null; publishing sets it.
func TestPublishTimestampNullUntilPublished(t *testing.T) {
	ctx := context.Background()
	_, c := fixture(t)
	before := time.Now().Add(-time.Second)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	pr = getPR(t, c, pr.Name)
	nullTimestamp := func(pr *porchv1alpha1.PackageRevision) {
		t.Helper()
		if pr.Status.PublishedAt != nil {
			t.Errorf("%s revision has publishTimestamp %v, want null", pr.Spec.Lifecycle, pr.Status.PublishedAt)
		}
		data, err := json.Marshal(pr.Status)
		if err != nil {
			t.Fatal(err)
		}
		var status map[string]any
		if err := json.Unmarshal(data, &status); err != nil {
			t.Fatal(err)
		}
		if v := status["publishTimestamp"]; v != nil {
			t.Errorf("%s revision's status carries publishTimestamp %v, want null", pr.Spec.Lifecycle, v)
		}
	}
	nullTimestamp(pr)
	pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	pr, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, pr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nullTimestamp(getPR(t, c, pr.Name))
	approve(t, c, pr)
	published := getPR(t, c, pr.Name)
	if published.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		t.Fatalf("lifecycle %s after approval, want Published", published.Spec.Lifecycle)
	}
	if at := published.Status.PublishedAt; at == nil || at.Time.Before(before) || at.Time.After(time.Now().Add(time.Second)) {
		t.Errorf("published revision's publishTimestamp %v, want the time of publishing", at)
	}
}

// TestCloneReencodesKptfile: a clone re-encodes the blueprint's Kptfile, so
// its comments are dropped (its content kept); the comments in every other
// file survive the clone.
func TestCloneReencodesKptfile(t *testing.T) {
	s, c := fixture(t)
	kptfileComments := []string{"# the head of the Kptfile", "# an inline Kptfile comment", "# above the description"}
	bp := blueprint(1, "app:v1", "")
	bp[kptfileName] = `# the head of the Kptfile
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: anything # an inline Kptfile comment
info:
  # above the description
  description: the commented blueprint
`
	bp["config.yaml"] = `# about the config map
apiVersion: v1
kind: ConfigMap
metadata:
  name: config
data:
  key: value # why this value
`
	if _, err := s.AddPublished(ns, "blueprints", "commented", 1, bp); err != nil {
		t.Fatal(err)
	}
	stored := resources(t, s, "blueprints.commented.v1")[kptfileName]
	for _, comment := range kptfileComments {
		if !strings.Contains(stored, comment) {
			t.Fatalf("the blueprint's stored Kptfile lacks %q; the test needs it:\n%s", comment, stored)
		}
	}
	draft := create(t, c, newDraft("deploy", "foo", "ws", cloneTask("blueprints.commented.v1")))
	prr := getPRR(t, c, draft.Name)
	files := prr.Spec.Resources
	for _, comment := range kptfileComments {
		if strings.Contains(files[kptfileName], comment) {
			t.Errorf("the clone's Kptfile kept the blueprint's comment %q:\n%s", comment, files[kptfileName])
		}
	}
	if kf := parseKptfile(t, files[kptfileName]); kf.Info == nil || kf.Info.Description != "the commented blueprint" {
		t.Errorf("the clone's Kptfile lost the blueprint's content:\n%s", files[kptfileName])
	}
	for file, comments := range map[string][]string{
		"config.yaml":     {"# about the config map", "key: value # why this value"},
		"deployment.yaml": {"name: app # the app"},
	} {
		for _, comment := range comments {
			if !strings.Contains(files[file], comment) {
				t.Errorf("the clone's %s lost the comment %q:\n%s", file, comment, files[file])
			}
		}
	}
}

// TestRenderFailureOnCreateIsTheRenderersOwn500: a blueprint pushed to git
// directly can be Published with a pipeline that fails; a clone of it
// fails to render, and Porch answers the create with a 500 whose message is
// the renderer's own ("fn.render: pkg /:" ... "pipeline.run:"), not the
// "error rendering package in kpt function pipeline" of a failed resources
// update, and stores nothing, even when the new draft carries
// porch.kpt.dev/push-on-render-failure.
func TestRenderFailureOnCreateIsTheRenderersOwn500(t *testing.T) {
	ctx := context.Background()
	for _, push := range []bool{false, true} {
		s, c := fixture(t)
		bp := blueprint(1, "app:v1", "")
		bp[kptfileName] = strings.Replace(bp[kptfileName], "info:\n", failingPipeline+"info:\n", 1)
		published, err := s.AddPublished(ns, "blueprints", "failing", 1, bp)
		if err != nil {
			t.Fatalf("AddPublished of a blueprint whose pipeline fails: %v, want it Published", err)
		}
		if got := getPR(t, c, published.Name); got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
			t.Fatalf("the blueprint is %s, want Published", got.Spec.Lifecycle)
		}
		if !strings.Contains(resources(t, s, published.Name)[kptfileName], "def broken(:") {
			t.Fatal("the blueprint's failing pipeline was not stored; the test needs it")
		}

		in := pushingOnRenderFailure(newDraft("deploy", "foo", "ws", cloneTask(published.Name)), push)
		_, err = c.PorchV1alpha1().PackageRevisions(ns).Create(ctx, in, metav1.CreateOptions{})
		var st apierrors.APIStatus
		if !apierrors.IsInternalError(err) || !errors.As(err, &st) || st.Status().Code != 500 {
			t.Fatalf("push=%v: clone of a package whose pipeline fails: got %v, want a 500", push, err)
		}
		msg := strings.TrimPrefix(st.Status().Message, "Internal error occurred: ")
		if !strings.HasPrefix(msg, "fn.render: pkg /:") || !strings.Contains(msg, "pkg.render:") || !strings.Contains(msg, "pipeline.run:") {
			t.Errorf("push=%v: message %q, want the renderer's own (fn.render: pkg /: ... pipeline.run: ...)", push, st.Status().Message)
		}
		if strings.Contains(strings.ToLower(msg), "error rendering package in kpt function pipeline") {
			t.Errorf("push=%v: message %q is that of a failed resources update", push, st.Status().Message)
		}
		if details, stored := helper.RenderFailureDetails(err); details != msg || stored {
			t.Errorf("push=%v: classified as %q, stored=%v; want a render failure with the renderer's message, nothing stored", push, details, stored)
		}
		if _, err := s.PackageRevision(ns, "deploy.foo.ws"); !apierrors.IsNotFound(err) {
			t.Errorf("push=%v: the refused create stored a revision: %v", push, err)
		}
		list := mustList(t, c.PorchV1alpha1().PackageRevisions(ns), metav1.ListOptions{})
		for _, pr := range list.Items {
			if pr.Spec.RepositoryName == "deploy" {
				t.Errorf("push=%v: the refused create left %s in the repository", push, pr.Name)
			}
		}
	}
}

// TestProposingADraftThatDoesNotRenderIsRefused: proposing re-renders the
// draft; when its pipeline fails the proposal is refused ("Package NOT
// pushed") and the draft stays a Draft, even with
// porch.kpt.dev/push-on-render-failure (with which a failed resources
// update stored the failing pipeline).
func TestProposingADraftThatDoesNotRenderIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, push := range []bool{false, true} {
		s, c := fixture(t)
		in := pushingOnRenderFailure(newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)), push)
		pr := create(t, c, in)
		if push {
			// The client's own update stores the failing pipeline.
			err := updateWithFailingPipeline(t, c, pr.Name)
			if _, stored := helper.RenderFailureDetails(err); !stored {
				t.Fatalf("the resources update with push-on-render-failure: %v, want it stored with a 500", err)
			}
		} else {
			files := resources(t, s, pr.Name)
			files[kptfileName] = strings.Replace(files[kptfileName], "info:\n", failingPipeline+"info:\n", 1)
			if err := s.SetResources(ns, pr.Name, files); err != nil { // a person's edit
				t.Fatal(err)
			}
		}
		if !strings.Contains(resources(t, s, pr.Name)[kptfileName], "def broken(:") {
			t.Fatalf("push=%v: the failing pipeline is not in the draft; the test needs it", push)
		}
		pr = getPR(t, c, pr.Name)
		if got := pr.Annotations[porchv1alpha1.PushOnRenderFailureAnnotation] == "true"; got != push {
			t.Fatalf("push=%v: the draft's annotations %v", push, pr.Annotations)
		}
		proposed := pr.DeepCopy()
		proposed.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
		_, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, proposed, metav1.UpdateOptions{})
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "Error rendering package") || !strings.Contains(err.Error(), "Package NOT pushed") {
			t.Errorf("push=%v: proposing a draft that does not render: got %v, want Porch's 500 \"... Package NOT pushed ...\"", push, err)
		}
		if got := getPR(t, c, pr.Name); got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft || got.ResourceVersion != pr.ResourceVersion {
			t.Errorf("push=%v: after the refused proposal: lifecycle %s, resourceVersion changed %v; want the Draft unchanged",
				push, got.Spec.Lifecycle, got.ResourceVersion != pr.ResourceVersion)
		}
		if err := s.Propose(ns, pr.Name); err == nil || !strings.Contains(err.Error(), "Package NOT pushed") {
			t.Errorf("push=%v: Propose of a draft that does not render: %v, want it refused", push, err)
		}
	}
}

// TestUpgradeTargetIsNotDeleted: Porch refuses (403) to delete a revision an
// upgrade draft names as its new upstream, even once it is
// DeletionProposed; deleting the upgrade draft lifts the refusal.
func TestUpgradeTargetIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	s, local := upgradeFixture(t)
	c := s.Clientset()
	const target = "blueprints.app.v2"
	upgrade := create(t, c, newDraft("deploy", "foo", "upgrade", upgradeTask(upstreamV1, target, local)))
	proposeDeletion(t, c, target)
	err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, target, metav1.DeleteOptions{})
	want := "cannot delete package revision, it is referenced as upstream by: " + upgrade.Name
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("delete of an upgrade's new upstream: got %v, want 403 %q", err, want)
	}
	if _, err := s.PackageRevision(ns, target); err != nil {
		t.Errorf("the refused delete deleted: %v", err)
	}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, upgrade.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, target, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete once no upgrade names it: %v", err)
	}
}

// TestOverlappingWritesOnOneRevisionConflict: through the clientset, a write
// on a revision while another write on it is still in progress is answered
// with Porch's 409 ("another request is already in progress") and changes
// nothing; the first write is served, and writes after it are again.
func TestOverlappingWritesOnOneRevisionConflict(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
	held, release := make(chan struct{}), make(chan struct{})
	var holding atomic.Bool
	s.OnWrite(func(_, _, what string) {
		if what == "update packagerevisions "+pr.Name && holding.CompareAndSwap(false, true) {
			close(held)
			<-release
		}
	})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)

	first := pr.DeepCopy()
	first.Labels = map[string]string{"write": "first"}
	firstDone := make(chan error, 1)
	go func() {
		_, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, first, metav1.UpdateOptions{})
		firstDone <- err
	}()
	select {
	case <-held:
	case <-time.After(wait):
		t.Fatal("the first write never reached the Sim")
	}

	second := pr.DeepCopy()
	second.Labels = map[string]string{"write": "second"}
	_, errPR := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, second, metav1.UpdateOptions{})
	prr := getPRR(t, c, pr.Name)
	prr.Spec.Resources["second.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: second\n"
	_, errPRR := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{})
	for what, err := range map[string]error{"an update of the revision": errPR, "an update of its resources": errPRR} {
		var st apierrors.APIStatus
		if !apierrors.IsConflict(err) || !errors.As(err, &st) || st.Status().Code != 409 ||
			!strings.Contains(st.Status().Message, "another request is already in progress") {
			t.Errorf("%s while another write on it is in progress: got %v, want Porch's 409", what, err)
		}
	}

	unblock()
	if err := <-firstDone; err != nil {
		t.Fatalf("the first write: %v", err)
	}
	got := getPR(t, c, pr.Name)
	if got.Labels["write"] != "first" {
		t.Errorf("labels %v, want the first write's", got.Labels)
	}
	if _, ok := resources(t, s, pr.Name)["second.yaml"]; ok {
		t.Error("the refused resources update was stored")
	}
	got.Labels["write"] = "third"
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a write after the first ended: %v", err)
	}
}

// TestRenderFailureOnEveryCreatePath: the edit of a published revision and
// the upgrade to an upstream revision whose pipelines fail are refused at
// the create as the clone is (TestRenderFailureOnCreateIsTheRenderersOwn500):
// a 500 with the renderer's own message, nothing stored.
func TestRenderFailureOnEveryCreatePath(t *testing.T) {
	failing := func(rev int, image string) map[string]string {
		files := blueprint(rev, image, "")
		files[kptfileName] = strings.Replace(files[kptfileName], "info:\n", failingPipeline+"info:\n", 1)
		return files
	}
	cases := map[string]struct {
		stage func(t *testing.T, s *Sim) porchv1alpha1.Task
	}{
		"an edit of a published revision whose pipeline fails": {
			stage: func(t *testing.T, s *Sim) porchv1alpha1.Task {
				if _, err := s.AddPublished(ns, "deploy", "foo", 1, failing(1, "app:v1")); err != nil {
					t.Fatal(err)
				}
				return editTask("deploy.foo.v1")
			},
		},
		"an upgrade to an upstream revision whose pipeline fails": {
			stage: func(t *testing.T, s *Sim) porchv1alpha1.Task {
				draft := create(t, s.Clientset(), newDraft("deploy", "foo", "ws", cloneTask(upstreamV1)))
				if err := s.Publish(ns, draft.Name); err != nil {
					t.Fatal(err)
				}
				if _, err := s.AddPublished(ns, "blueprints", "app", 2, failing(1, "app:v2")); err != nil {
					t.Fatal(err)
				}
				return upgradeTask(upstreamV1, "blueprints.app.v2", draft.Name)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			task := tc.stage(t, s)
			in := pushingOnRenderFailure(newDraft("deploy", "foo", "new", task), true)
			_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(), in, metav1.CreateOptions{})
			var st apierrors.APIStatus
			if !apierrors.IsInternalError(err) || !errors.As(err, &st) {
				t.Fatalf("got %v, want a 500", err)
			}
			msg := strings.TrimPrefix(st.Status().Message, "Internal error occurred: ")
			if !strings.HasPrefix(msg, "fn.render: pkg /:") || !strings.Contains(msg, "pipeline.run:") {
				t.Errorf("message %q, want the renderer's own (fn.render: pkg /: ... pipeline.run: ...)", st.Status().Message)
			}
			if details, stored := helper.RenderFailureDetails(err); details != msg || stored {
				t.Errorf("classified as %q, stored=%v; want the renderer's message, nothing stored", details, stored)
			}
			if _, err := s.PackageRevision(ns, "deploy.foo.new"); !apierrors.IsNotFound(err) {
				t.Errorf("the refused create stored a revision: %v", err)
			}
		})
	}
}

// pushingOnRenderFailure gives a new draft porch.kpt.dev/push-on-render-failure
// when push is set.
func pushingOnRenderFailure(pr *porchv1alpha1.PackageRevision, push bool) *porchv1alpha1.PackageRevision {
	if push {
		pr.Annotations = map[string]string{porchv1alpha1.PushOnRenderFailureAnnotation: "true"}
	}
	return pr
}
