package offline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2/ktesting"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

func readTestInput(t *testing.T, files ...string) *input.Input {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join("testdata", f))
	}
	in, err := input.ReadPaths(paths)
	if err != nil {
		t.Fatalf("ReadPaths: %v", err)
	}
	ns, err := in.Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	flag, err := input.ParsePackageFlag("blueprints/app=" + filepath.Join("testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	if err := in.AddPackages(ns, []input.PackageFlag{flag}); err != nil {
		t.Fatal(err)
	}
	return in
}

func render(t *testing.T, in *input.Input, opts RunOptions) *Outcome {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	out, err := Run(ctx, in, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.Settled != "" {
		t.Fatalf("did not settle: %s", out.Settled)
	}
	return out
}

// TestRunFleet: a set over two prod repositories and a single variant give
// three Ready variants and three drafts with injected data and the
// prepended function; the YAML stream is identical from run to run.
func TestRunFleet(t *testing.T) {
	out := render(t, readTestInput(t, "fleet.yaml", "variant.yaml"), RunOptions{})
	if lines := out.NotReady(); len(lines) > 0 {
		t.Fatalf("not Ready:\n%s", strings.Join(lines, "\n"))
	}
	if len(out.Sets) != 1 || len(out.Variants) != 3 {
		t.Fatalf("got %d sets and %d variants, want 1 and 3", len(out.Sets), len(out.Variants))
	}
	if !meta.IsStatusConditionTrue(out.Sets[0].Status.Conditions, "Ready") || out.Sets[0].Status.ReadyVariants != 2 {
		t.Errorf("set status = %+v, want Ready with 2 ready variants", out.Sets[0].Status)
	}
	drafts := map[string]RevisionOutcome{}
	for _, r := range out.Revisions {
		if r.Action != ActionCreated || r.PR.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
			t.Errorf("unexpected revision outcome %s %s (%s)", r.Action, r.PR.Name, r.PR.Spec.Lifecycle)
			continue
		}
		drafts[r.PR.Spec.RepositoryName] = r
	}
	for repo, region := range map[string]string{"prod-a": "region-a", "prod-b": "region-b", "dev-a": "region-a"} {
		d, ok := drafts[repo]
		if !ok {
			t.Errorf("no draft in %s", repo)
			continue
		}
		if !strings.Contains(d.Files["settings.yaml"], "region: "+region) {
			t.Errorf("%s settings.yaml not injected with %s:\n%s", repo, region, d.Files["settings.yaml"])
		}
		if !strings.Contains(d.Files["deployment.yaml"], "# overridden per region") {
			t.Errorf("%s deployment.yaml lost its comment:\n%s", repo, d.Files["deployment.yaml"])
		}
	}
	if !strings.Contains(drafts["dev-a"].Files["Kptfile"], "set-namespace") {
		t.Errorf("dev-a Kptfile has no prepended function:\n%s", drafts["dev-a"].Files["Kptfile"])
	}

	var first, second bytes.Buffer
	if err := out.WriteYAML(&first); err != nil {
		t.Fatal(err)
	}
	again := render(t, readTestInput(t, "fleet.yaml", "variant.yaml"), RunOptions{})
	if err := again.WriteYAML(&second); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("the YAML stream differs between runs:\n%s\n----\n%s", first.String(), second.String())
	}
	for _, unwanted := range []string{"uid:", "resourceVersion:", "creationTimestamp:", "lastTransitionTime:"} {
		if strings.Contains(first.String(), unwanted) {
			t.Errorf("the YAML stream holds run-specific %q", unwanted)
		}
	}
	if n := strings.Count(first.String(), "kind: PackageRevisionResources"); n != 3 {
		t.Errorf("YAML stream has %d PackageRevisionResources, want 3", n)
	}
}

// TestRunWriteDir writes each draft under repository/package/workspace and
// prints a table naming them.
func TestRunWriteDir(t *testing.T) {
	out := render(t, readTestInput(t, "fleet.yaml"), RunOptions{})
	dir := t.TempDir()
	var table bytes.Buffer
	if err := out.WriteDir(dir, &table); err != nil {
		t.Fatal(err)
	}
	for _, repo := range []string{"prod-a", "prod-b"} {
		b, err := os.ReadFile(filepath.Join(dir, repo, "app", "packagevariant-1", "settings.yaml"))
		if err != nil {
			t.Fatalf("draft files of %s: %v", repo, err)
		}
		if !strings.Contains(string(b), "region: region-"+strings.TrimPrefix(repo, "prod-")) {
			t.Errorf("%s settings.yaml:\n%s", repo, b)
		}
		if !strings.Contains(table.String(), repo) {
			t.Errorf("summary table does not list %s:\n%s", repo, table.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dev-a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dev-a written although no variant targets it (stat: %v)", err)
	}
}

// TestRunSetsOnly creates the variants and no drafts.
func TestRunSetsOnly(t *testing.T) {
	out := render(t, readTestInput(t, "fleet.yaml"), RunOptions{SetsOnly: true})
	if len(out.Variants) != 2 {
		t.Errorf("got %d variants, want 2", len(out.Variants))
	}
	if len(out.Revisions) != 0 {
		t.Errorf("got %d revisions, want none", len(out.Revisions))
	}
}
