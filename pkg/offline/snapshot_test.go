package offline

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// snapshot writes what the Sim holds as `kubectl get -o yaml` prints it,
// plus the input's in-cluster objects.
func snapshot(t *testing.T, ctx context.Context, sim *porchsim.Sim, in *input.Input) string {
	t.Helper()
	var b bytes.Buffer
	if err := input.WriteSnapshot(ctx, sim.Clientset(), "", in.ObjectList(), true, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReplaySnapshot: the state a run leaves, dumped as kubectl prints it
// and read back, is a settled fleet: replaying it creates and changes
// nothing, and every variant is Ready. A new upstream revision on top of
// the snapshot moves every variant to it without a second draft anywhere.
func TestReplaySnapshot(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	in := readTestInput(t, "fleet.yaml", "variant.yaml")
	sim := porchsim.New()
	// The cluster's uids are not the ones a fresh Sim would hand out: the
	// replay must keep them, not make them anew.
	sim.AddRepository("elsewhere", "unrelated", false, nil)
	if err := sim.Clientset().ConfigV1alpha1().Repositories("elsewhere").Delete(ctx, "unrelated", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := in.Load(ctx, sim, "fleet"); err != nil {
		t.Fatal(err)
	}
	r, err := Start(ctx, sim, Options{Objects: in.ObjectList()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitIdle(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := os.WriteFile(path, []byte(snapshot(t, ctx, sim, in)), 0o644); err != nil {
		t.Fatal(err)
	}

	replayed, err := input.ReadPaths([]string{path})
	if err != nil {
		t.Fatalf("the snapshot cannot be read back: %v", err)
	}
	out := render(t, replayed, RunOptions{})
	if lines := out.NotReady(); len(lines) > 0 {
		t.Errorf("not Ready after replay: %v", lines)
	}
	if len(out.Variants) != 3 {
		t.Errorf("%d variants after replay, want 3", len(out.Variants))
	}
	// Identities survive the replay: the set still owns its variants.
	uids := map[string]string{}
	for _, pv := range sim.PackageVariants("fleet") {
		uids[pv.Name] = string(pv.UID)
	}
	for _, pv := range out.Variants {
		if string(pv.UID) != uids[pv.Name] {
			t.Errorf("variant %s has uid %s after replay, the snapshot says %s", pv.Name, pv.UID, uids[pv.Name])
		}
	}
	for _, set := range out.Sets {
		ready := meta.FindStatusCondition(set.Status.Conditions, "Ready")
		if ready == nil || ready.Status != metav1.ConditionTrue || set.Status.ExistingVariants != 2 {
			t.Errorf("set %s after replay: Ready %+v, %d variants exist; want Ready and its 2 variants its own", set.Name, ready, set.Status.ExistingVariants)
		}
	}
	for _, rev := range out.Revisions {
		t.Errorf("replaying a settled fleet %s %s", rev.Action, rev.PR.Name)
	}

	// input.Revision 2 of the blueprint, on top of the snapshot.
	bumped, err := input.ReadPaths([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	flag, err := input.ParsePackageFlag("blueprints/app@2=" + filepath.Join("testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bumped.AddPackages("fleet", []input.PackageFlag{flag}); err != nil {
		t.Fatal(err)
	}
	out = render(t, bumped, RunOptions{})
	if lines := out.NotReady(); len(lines) > 0 {
		t.Errorf("not Ready after the bump: %v", lines)
	}
	for _, v := range out.Variants {
		if v.Status.Applied == nil || v.Status.Applied.Upstream != "blueprints.app.v2" {
			t.Errorf("variant %s applied %+v, want upstream blueprints.app.v2", v.Name, v.Status.Applied)
		}
		if !meta.IsStatusConditionTrue(v.Status.Conditions, "Ready") {
			t.Errorf("variant %s not Ready", v.Name)
		}
	}
	drafts := map[string]int{}
	var stream bytes.Buffer
	if err := out.WriteYAML(&stream); err != nil {
		t.Fatal(err)
	}
	for _, rev := range out.Revisions {
		if rev.Action != ActionDeleted && rev.PR.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft {
			drafts[rev.PR.Spec.RepositoryName]++
		}
	}
	for _, repo := range []string{"prod-a", "prod-b", "dev-a"} {
		if drafts[repo] != 1 {
			t.Errorf("%s has %d drafts touched by the bump, want exactly 1\n%s", repo, drafts[repo], stream.String())
		}
	}
}
