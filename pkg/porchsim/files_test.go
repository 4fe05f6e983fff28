package porchsim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

// fileSource is a file source for tests: the files of each revision, the
// failures to return instead, and the calls made.
type fileSource struct {
	mu    sync.Mutex
	files map[string]map[string]string // by "namespace/name"
	fail  map[string]error
	calls map[string]int
}

func (f *fileSource) fetch(_ context.Context, namespace, name string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := namespace + "/" + name
	f.calls[key]++
	if err := f.fail[key]; err != nil {
		return nil, err
	}
	files, ok := f.files[key]
	if !ok {
		return nil, fmt.Errorf("no such revision %s", key)
	}
	return files, nil
}

func (f *fileSource) callsOf(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[ns+"/"+name]
}

func (f *fileSource) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

// publishedRevision is a Published revision of a blueprint as a snapshot
// lists it.
func publishedRevision(pkg string, revision int) *porchv1alpha1.PackageRevision {
	ws := fmt.Sprintf("v%d", revision)
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: helper.PackageRevisionName("blueprints", pkg, ws)},
		Spec: porchv1alpha1.PackageRevisionSpec{
			RepositoryName: "blueprints", PackageName: pkg, WorkspaceName: porchv1alpha1.WorkspaceName(ws),
			Revision: revision, Lifecycle: porchv1alpha1.PackageRevisionLifecyclePublished,
		},
	}
}

// lazyFixture is a Sim with the repositories of fixture, a file source
// holding blueprint files for blueprints.app.v1 and blueprints.db.v1, both
// imported without files.
func lazyFixture(t *testing.T) (*Sim, versioned.Interface, *fileSource) {
	t.Helper()
	s := New()
	s.AddRepository(ns, "blueprints", false, nil)
	s.AddRepository(ns, "deploy", true, nil)
	src := &fileSource{
		files: map[string]map[string]string{
			ns + "/blueprints.app.v1": blueprint(1, "app:v1", "app readme\n"),
			ns + "/blueprints.db.v1":  blueprint(1, "db:v1", "db readme\n"),
		},
		fail:  map[string]error{},
		calls: map[string]int{},
	}
	s.SetFileSource(src.fetch)
	for _, pkg := range []string{"app", "db"} {
		if _, err := s.Import(publishedRevision(pkg, 1), nil); err != nil {
			t.Fatal(err)
		}
	}
	return s, s.Clientset(), src
}

// TestLazyFilesFetchedOnceOnFirstNeed: importing and serving the revision
// itself fetches nothing; the first get of its resources fetches its files,
// once; later reads are served from what was fetched.
func TestLazyFilesFetchedOnceOnFirstNeed(t *testing.T) {
	s, c, src := lazyFixture(t)
	ctx := context.Background()
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Get(ctx, "blueprints.app.v1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := src.totalCalls(); n != 0 || len(s.Fetched()) != 0 {
		t.Fatalf("before any read of files: %d fetches, Fetched %v; want none", n, s.Fetched())
	}

	// What a controller does: get the resources of the revision.
	for range 3 {
		prr := getPRR(t, c, "blueprints.app.v1")
		if d := cmp.Diff(blueprint(1, "app:v1", "app readme\n"), prr.Spec.Resources); d != "" {
			t.Fatalf("resources served (-fetched +served):\n%s", d)
		}
	}
	if got := resources(t, s, "blueprints.app.v1"); got["README.md"] != "app readme\n" {
		t.Errorf("Resources = %v", got)
	}
	if n := src.callsOf("blueprints.app.v1"); n != 1 {
		t.Errorf("blueprints.app.v1 fetched %d times, want once", n)
	}
	checkFetched(t, s, " (db was never read)", ns+"/blueprints.app.v1")
	if errs := s.FileSourceErrors(); len(errs) != 0 {
		t.Errorf("FileSourceErrors() = %v", errs)
	}
}

// TestLazyFilesNeverReadNeverFetched: what does not need files does not
// fetch them: reads and metadata updates of revisions, and a list of
// resources narrowed by a field selector fetches only what it returns.
func TestLazyFilesNeverReadNeverFetched(t *testing.T) {
	s, c, src := lazyFixture(t)
	ctx := context.Background()
	prs := c.PorchV1alpha1().PackageRevisions(ns)
	pr := mustGet(t, prs, "blueprints.app.v1")
	pr.Annotations = map[string]string{"adopted": "yes"}
	if _, err := prs.Update(ctx, pr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := prs.List(ctx, metav1.ListOptions{FieldSelector: "spec.packageName=app"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Fetched(); len(got) != 0 || src.totalCalls() != 0 {
		t.Fatalf("without any read of files: Fetched() = %v, %d calls; want none", got, src.totalCalls())
	}

	list := mustList(t, c.PorchV1alpha1().PackageRevisionResources(ns), metav1.ListOptions{FieldSelector: "spec.packageName=db"})
	if len(list.Items) != 1 || list.Items[0].Spec.Resources["README.md"] != "db readme\n" {
		t.Fatalf("list of db's resources: %+v", list.Items)
	}
	checkFetched(t, s, ": a narrow list fetches only what it returns", ns+"/blueprints.db.v1")
}

// TestLazyFilesEagerImportUnchanged: with a source set, an Import with
// files stores them and never asks the source.
func TestLazyFilesEagerImportUnchanged(t *testing.T) {
	s, _, src := lazyFixture(t)
	in := publishedRevision("web", 1)
	if _, err := s.Import(in, blueprint(3, "web:v1", "web readme\n")); err != nil {
		t.Fatal(err)
	}
	if got := resources(t, s, in.Name); got["README.md"] != "web readme\n" {
		t.Errorf("Resources = %v", got)
	}
	if n := src.totalCalls(); n != 0 || len(s.Fetched()) != 0 {
		t.Errorf("eager import: %d fetches, Fetched %v; want none", n, s.Fetched())
	}
}

// TestLazyFilesWithoutSourceRefused: without a source, Import still wants
// the files.
func TestLazyFilesWithoutSourceRefused(t *testing.T) {
	s := New()
	s.AddRepository(ns, "blueprints", false, nil)
	_, err := s.Import(publishedRevision("app", 1), nil)
	if err == nil || !strings.Contains(err.Error(), "SetFileSource") {
		t.Fatalf("Import without files or source: %v, want a refusal pointing at SetFileSource", err)
	}
}

// TestLazyFilesClone: a clone from a lazy upstream fetches it and clones
// its files.
func TestLazyFilesClone(t *testing.T) {
	s, c, src := lazyFixture(t)
	draft := create(t, c, newDraft("deploy", "app", "packagevariant-1", cloneTask("blueprints.app.v1")))
	files := resources(t, s, draft.Name)
	if !strings.Contains(files["deployment.yaml"], "image: app:v1") || files["README.md"] != "app readme\n" {
		t.Errorf("clone of a lazy upstream: %v", files)
	}
	if n := src.callsOf("blueprints.app.v1"); n != 1 {
		t.Errorf("upstream fetched %d times, want once", n)
	}
	checkFetched(t, s, "", ns+"/blueprints.app.v1")
}

// TestLazyFilesPublish: publishing a lazy revision fetches its files for
// the placeholder; the placeholder's own files, lazy, are replaced without
// being fetched. An update of a lazy draft renders its fetched files.
func TestLazyFilesPublish(t *testing.T) {
	s, c, src := lazyFixture(t)
	ctx := context.Background()
	ph := publishedRevision("app", porchv1alpha1.PlaceholderRevision)
	ph.Name, ph.Spec.WorkspaceName = "blueprints.app.main", helper.PlaceholderWorkspace
	if _, err := s.Import(ph, nil); err != nil {
		t.Fatal(err)
	}
	draft := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blueprints.app.next"},
		Spec: porchv1alpha1.PackageRevisionSpec{RepositoryName: "blueprints", PackageName: "app", WorkspaceName: "next",
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft},
	}
	if _, err := s.Import(draft, nil); err != nil {
		t.Fatal(err)
	}
	src.files[ns+"/blueprints.app.next"] = blueprint(2, "app:v2", "app readme v2\n")

	// An update of a draft renders it: its files are read.
	got := mustGet(t, c.PorchV1alpha1().PackageRevisions(ns), draft.Name)
	got.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := src.callsOf(draft.Name); n != 1 {
		t.Fatalf("draft fetched %d times by its update, want once", n)
	}
	if err := s.Publish(ns, draft.Name); err != nil {
		t.Fatal(err)
	}
	if got := resources(t, s, "blueprints.app.main"); got["README.md"] != "app readme v2\n" {
		t.Errorf("placeholder after the publish: %v, want the published files", got)
	}
	checkFetched(t, s, " (the placeholder's old files are not needed)", ns+"/blueprints.app.next")
}

// TestLazyFilesFetchError: a failed fetch fails the requests that need the
// files with an internal error naming the revision and the cause, is not
// retried, and is listed by FileSourceErrors; reads that need no files
// still work.
func TestLazyFilesFetchError(t *testing.T) {
	s, c, src := lazyFixture(t)
	ctx := context.Background()
	cause := errors.New("git fetch: connection reset")
	src.fail[ns+"/blueprints.app.v1"] = cause
	delete(src.files, ns+"/blueprints.db.v1") // the source errs: no such revision

	_, err := c.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, "blueprints.app.v1", metav1.GetOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "ns/blueprints.app.v1") || !strings.Contains(err.Error(), cause.Error()) {
		t.Fatalf("get of resources whose fetch fails: %v, want an internal error naming the revision and the cause", err)
	}
	_, err = c.PorchV1alpha1().PackageRevisions(ns).Create(ctx, newDraft("deploy", "app", "packagevariant-1", cloneTask("blueprints.app.v1")), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), cause.Error()) {
		t.Errorf("clone from a revision whose fetch failed: %v, want the internal error", err)
	}
	if _, err := s.Resources(ns, "blueprints.app.v1"); err == nil || !strings.Contains(err.Error(), cause.Error()) {
		t.Errorf("Resources: %v, want the fetch error", err)
	}
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("list of resources including failing revisions: %v, want an internal error", err)
	}
	// The list stopped at the first failure (app); db fails on its own.
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, "blueprints.db.v1", metav1.GetOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("get of db's resources: %v, want an internal error", err)
	}
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).Get(ctx, "blueprints.app.v1", metav1.GetOptions{}); err != nil {
		t.Errorf("get of the revision itself: %v", err)
	}
	if n := src.callsOf("blueprints.app.v1"); n != 1 {
		t.Errorf("failing revision fetched %d times, want once (failures are not retried)", n)
	}

	errs := s.FileSourceErrors()
	if len(errs) != 2 {
		t.Fatalf("FileSourceErrors() = %v, want one per failing revision (app, db)", errs)
	}
	if !errors.Is(errs[0], cause) || !strings.Contains(errs[0].Error(), "ns/blueprints.app.v1") {
		t.Errorf("first error %v, want blueprints.app.v1's, wrapping the cause", errs[0])
	}
	if !strings.Contains(errs[1].Error(), "ns/blueprints.db.v1") {
		t.Errorf("second error %v, want blueprints.db.v1's", errs[1])
	}
	if got := s.Fetched(); len(got) != 0 {
		t.Errorf("Fetched() = %v, want none fetched", got)
	}
}

// TestLazyFilesBadFiles: files a source returns are checked as Import
// checks them.
func TestLazyFilesBadFiles(t *testing.T) {
	s, _, src := lazyFixture(t)
	src.files[ns+"/blueprints.app.v1"] = map[string]string{"../escape.yaml": "x"}
	if _, err := s.Resources(ns, "blueprints.app.v1"); err == nil || !strings.Contains(err.Error(), "must be relative") {
		t.Errorf("Resources of a revision whose source returns a path outside the package: %v", err)
	}
	if errs := s.FileSourceErrors(); len(errs) != 1 {
		t.Errorf("FileSourceErrors() = %v, want the bad files", errs)
	}
}

// checkFetched checks that the files of exactly the revisions want (as
// namespace/name) were fetched; why ends the error.
func checkFetched(t *testing.T, s *Sim, why string, want ...string) {
	t.Helper()
	if got := s.Fetched(); !cmp.Equal(got, want) {
		t.Errorf("Fetched() = %v, want %v%s", got, want, why)
	}
}
