package porchsim

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
