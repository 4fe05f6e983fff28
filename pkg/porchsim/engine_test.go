package porchsim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
)

// TestEngineMemoGivesWhatComputingGives: a remembered clone or render is
// the one computing it again gives, a change to any input is computed
// afresh, and a caller changing what it got changes nothing remembered.
func TestEngineMemoGivesWhatComputingGives(t *testing.T) {
	fresh := engine{notBuiltin: kptengine.FailNotBuiltin}
	memo := engine{notBuiltin: kptengine.FailNotBuiltin, memo: newEngineMemo()}
	lock := gitLock{repo: "http://git/blueprints.git", directory: "app", ref: "app/v1", commit: "abc"}
	up := blueprint(1, "nginx", "readme")

	for i := range 2 {
		got, err := memo.clone(up, "app", true, lock)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.clone(up, "app", true, lock)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("clone %d differs from a fresh clone (-want +got):\n%s", i, d)
		}
		got[kptfileName] = "changed by the caller"
	}
	other, err := memo.clone(up, "app-2", true, lock)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fresh.clone(up, "app-2", true, lock)
	if d := cmp.Diff(want, other); d != "" {
		t.Errorf("clone under another package path differs from a fresh one (-want +got):\n%s", d)
	}
	if len(memo.memo.clones) != 2 {
		t.Errorf("%d clones remembered, want 2", len(memo.memo.clones))
	}

	failing := blueprint(1, "nginx", "readme")
	failing[kptfileName] += failingPipeline
	for _, files := range []map[string]string{up, failing} {
		want := fresh.render(files)
		for i := range 2 {
			got := memo.render(files)
			if d := cmp.Diff(want, got, cmp.AllowUnexported(renderOutcome{})); d != "" {
				t.Fatalf("render %d differs from a fresh render (-want +got):\n%s", i, d)
			}
			got.files[kptfileName] = "changed by the caller"
			got.status.Err = "changed"
		}
	}
	if !memo.render(failing).failed || memo.render(up).failed {
		t.Error("remembered outcomes swapped")
	}
	if len(memo.memo.renders) != 2 {
		t.Errorf("%d renders remembered, want 2", len(memo.memo.renders))
	}
}

// TestFailedRendersNameTheFunction: the Sim keeps, per revision, the last
// write refused because its pipeline failed (a create, which Porch answers
// without naming the function, and a resources update), with the
// function that failed and what it said; a write of the revision that
// renders, or its deletion, drops it.
func TestFailedRendersNameTheFunction(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	bp := blueprint(1, "app:v1", "")
	bp[kptfileName] = strings.Replace(bp[kptfileName], "info:\n", failingPipeline+"info:\n", 1)
	published, err := s.AddPublished(ns, "blueprints", "failing", 1, bp)
	if err != nil {
		t.Fatal(err)
	}
	_, createErr := c.PorchV1alpha1().PackageRevisions(ns).Create(ctx, newDraft("deploy", "foo", "ws", cloneTask(published.Name)), metav1.CreateOptions{})
	if createErr == nil {
		t.Fatal("the clone of a package whose pipeline fails was created")
	}
	draft := create(t, c, newDraft("deploy", "bar", "ws", cloneTask(upstreamV1)))
	if err := updateWithFailingPipeline(t, c, draft.Name); err == nil {
		t.Fatal("an update whose pipeline fails was stored")
	}

	const starlark = "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5: "
	got := s.FailedRenders(ns)
	if len(got) != 2 {
		t.Fatalf("%d failed renders, want the create and the update: %+v", len(got), got)
	}
	for i, want := range []struct{ name, pkg string }{{draft.Name, "bar"}, {"deploy.foo.ws", "foo"}} {
		f := got[i]
		if f.Namespace != ns || f.Name != want.name || f.Repository != "deploy" || f.Package != want.pkg {
			t.Errorf("failed render %d is %s/%s of %s/%s, want %s/%s of deploy/%s", i, f.Namespace, f.Name, f.Repository, f.Package, ns, want.name, want.pkg)
		}
		if fns := f.Functions(); len(fns) != 1 || !strings.HasPrefix(fns[0], starlark) || len(fns[0]) == len(starlark) {
			t.Errorf("%s: failed functions %q, want the starlark function and what it said", f.Name, fns)
		}
		if !strings.Contains(f.Message, "pipeline.run:") {
			t.Errorf("%s: message %q, want the renderer's", f.Name, f.Message)
		}
	}
	if msg := createErr.Error(); !strings.Contains(msg, got[1].Message) {
		t.Errorf("the create's answer %q does not carry the recorded message %q", msg, got[1].Message)
	}

	prr := getPRR(t, c, draft.Name)
	prr.Spec.Resources["extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := s.FailedRenders(ns); len(got) != 1 || got[0].Name != "deploy.foo.ws" {
		t.Errorf("after %s rendered, the failed renders are %+v, want only deploy.foo.ws", draft.Name, got)
	}
	if err := updateWithFailingPipeline(t, c, draft.Name); err == nil {
		t.Fatal("an update whose pipeline fails was stored")
	}
	if err := c.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, draft.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := s.FailedRenders(ns); len(got) != 1 || got[0].Name != "deploy.foo.ws" {
		t.Errorf("after %s was deleted, the failed renders are %+v, want only deploy.foo.ws", draft.Name, got)
	}
}
