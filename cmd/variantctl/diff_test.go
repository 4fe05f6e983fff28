package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2/ktesting"

	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit"
)

// exampleSnapshot settles the example fleet offline and saves it as
// `kubectl get ... -o yaml` would: the snapshot variantctl diff --from
// reads. files says whether the PackageRevisionResources are in it.
func exampleSnapshot(t *testing.T, files bool) string {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	in, err := input.ReadPaths([]string{examplesFleet})
	if err != nil {
		t.Fatal(err)
	}
	flag, err := input.ParsePackageFlag(examplesPackage)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.AddPackages("platform", []input.PackageFlag{flag}); err != nil {
		t.Fatal(err)
	}
	sim := porchsim.New(porchsim.SkipFunctionsNotBuiltIn())
	kit.Settled(t, ctx, sim, in, "platform").Stop()
	var b bytes.Buffer
	if err := input.WriteSnapshot(ctx, sim.Clientset(), "", in.ObjectList(), files, &b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// changedSet writes the example set with the team of its package context
// changed.
func changedSet(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesFleet, "edge-set.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "team: edge", "team: edge-platform", 1)
	if changed == string(b) {
		t.Fatal("the example set has no team: edge to change")
	}
	path := filepath.Join(t.TempDir(), "edge-set.yaml")
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDiffFromSnapshot(t *testing.T) {
	snap := exampleSnapshot(t, true)

	t.Run("the fleet's own manifests: no difference, exit 0", func(t *testing.T) {
		r := variantctl(t, "diff", "--from", snap, "-f", examplesFleet)
		r.want(t, exitOK)
		mustContain(t, "stdout", r.stdout, "No difference", "PackageVariants: 0 added, 0 changed, 0 removed")
	})

	set := changedSet(t)
	t.Run("a package context change: exit 1, each variant's draft shows it", func(t *testing.T) {
		r := variantctl(t, "diff", "--from", snap, "-f", set)
		r.want(t, exitDifferent)
		mustContain(t, "stdout", r.stdout, "~ PackageVariantSet platform/edge-app: changed (spec)",
			"-        team: edge\n", "+        team: edge-platform\n", "-    team: edge\n",
			"~ PackageRevision platform/prod-us-east.app.packagevariant-1: changed (files)",
			"~ PackageVariant platform/edge-app-prod-us-east-app (set edge-app): changed (spec)",
			"-  team: edge\n", "+  team: edge-platform\n",
			"PackageVariants: 0 added, 4 changed, 0 removed")
		mustContain(t, "stderr", r.stderr, "read from the snapshot")
	})

	t.Run("-o json", func(t *testing.T) {
		r := variantctl(t, "diff", "--from", snap, "-f", set, "-o", "json")
		r.want(t, exitDifferent)
		var d fleetdiff.Diff
		if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if d.Summary.VariantsChanged != 4 || len(d.Variants) != 4 {
			t.Errorf("summary %+v, %d variants; want 4 changed", d.Summary, len(d.Variants))
		}
	})
}

// TestDiffPackage: --package previews publishing a new revision of the
// example blueprint over the snapshot: every variant gets a draft from it
// now (exit 1; the snapshot's drafts are unpublished, so each is replaced
// by a clone of the new revision), -f is optional, -o json carries the preview, and a
// revision out of turn or a directory without a Kptfile exits 2.
func TestDiffPackage(t *testing.T) {
	snap := exampleSnapshot(t, true)
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.CopyFS(dir, os.DirFS("../../examples/packages/app")); err != nil {
		t.Fatal(err)
	}
	deployment := filepath.Join(dir, "deployment.yaml")
	b, err := os.ReadFile(deployment)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deployment, []byte(strings.Replace(string(b), "image: ghcr.io/example-org/app:1.4.2", "image: ghcr.io/example-org/app:1.5.0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	r := variantctl(t, "diff", "--from", snap, "--package", "blueprints/app="+dir)
	r.want(t, exitDifferent)
	mustContain(t, "stdout", r.stdout, "Publishing blueprints/app revision 2 (namespace platform):",
		"platform/edge-app-prod-us-east-app (set edge-app): draft prod-us-east.app.packagevariant-2, a clone of the new revision in place of its unpublished draft",
		"-        image: ghcr.io/example-org/app:1.4.2", "+        image: ghcr.io/example-org/app:1.5.0",
		"blueprints/app revision 2: 5 variants upgraded now, 0 later, 0 not affected, 0 failing to render")

	// --out writes each draft's files, as the draft holds them.
	out := t.TempDir()
	r = variantctl(t, "diff", "--from", snap, "--package", "blueprints/app="+dir, "--brief", "--out", out)
	r.want(t, exitDifferent)
	mustContain(t, "stderr", r.stderr, "wrote the files of 5 drafts under "+out)
	written, err := os.ReadFile(filepath.Join(out, "platform", "prod-us-east", "app", "packagevariant-2", "deployment.yaml"))
	if err != nil || !strings.Contains(string(written), "image: ghcr.io/example-org/app:1.5.0") {
		t.Errorf("the draft prod-us-east.app.packagevariant-2 written by --out: %v\n%s", err, written)
	}

	r = variantctl(t, "diff", "--from", snap, "--package", "blueprints/app@2="+dir, "-o", "json")
	r.want(t, exitDifferent)
	var d fleetdiff.Diff
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if len(d.Previews) != 1 || len(d.Previews[0].Now) != 5 || d.Previews[0].Revision != 2 {
		t.Errorf("previews %+v; want one, of revision 2, with 5 variants now", d.Previews)
	}

	// The example's second revision drops the region-config injection
	// point every variant fills.
	r = variantctl(t, "diff", "--from", snap, "--package", "blueprints/app=../../examples/upgrade/app")
	r.want(t, exitDifferent)
	mustContain(t, "stdout", r.stdout, "+  replicas: 3 # the blueprint's default; prod variants keep it",
		`collision (injectionPoint config.injection.ConfigMap.region-config): the variant fills injection point ConfigMap.region-config (injected resource "region-eu-west" from cluster), which the new revision no longer has`,
		"blueprints/app revision 2: 5 variants upgraded now, 0 later, 0 not affected, 0 failing to render, 5 with collisions")

	// The live set adopts the example rollout and the next revision is
	// published: only the canary (and the variant of no set) take it now;
	// the others, which follow the latest revision, stay on the one they
	// carry until their waves open them.
	r = variantctl(t, "diff", "--from", snap, "-f", "../../examples/rollout/edge-set.yaml", "--package", "blueprints/app=../../examples/upgrade/app", "--brief")
	r.want(t, exitDifferent)
	mustContain(t, "stdout", r.stdout,
		"platform/edge-app-prod-us-east-canary-app (set edge-app): draft prod-us-east-canary.app.packagevariant-2",
		`platform/edge-app-prod-ap-south-app (set edge-app): wave "eu-and-ap", stays on revision 1 until its wave opens it; then gets draft prod-ap-south.app.packagevariant-2 (clone):`,
		"blueprints/app revision 2: 2 variants upgraded now, 3 later, 0 not affected, 0 failing to render, 5 with collisions")

	r = variantctl(t, "diff", "--from", snap, "--package", "blueprints/app@3="+dir)
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "the latest revision of blueprints/app is 1; the preview publishes the next one, 2")
	r = variantctl(t, "diff", "--from", snap, "--package", "blueprints/app="+t.TempDir())
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "is not a kpt package: it has no Kptfile")
}

// TestDiffSnapshotWithoutFiles: a snapshot without PackageRevisionResources
// serves an unchanged fleet; a change that needs a package's files names
// the one to add and exits 2.
func TestDiffSnapshotWithoutFiles(t *testing.T) {
	snap := exampleSnapshot(t, false)
	variantctl(t, "diff", "--from", snap, "-f", examplesFleet).want(t, exitOK)
	r := variantctl(t, "diff", "--from", snap, "-f", changedSet(t))
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "the snapshot holds no PackageRevisionResources platform/", "kubectl get packagerevisionresources -n platform")
	if r.stdout != "" {
		t.Errorf("a failed diff printed a difference:\n%s", r.stdout)
	}
}

func TestDiffBadInput(t *testing.T) {
	snap := exampleSnapshot(t, false)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown kind", []string{"-f", write("kind.yaml", "apiVersion: config.porch.kpt.dev/v1alpha2\nkind: PackageVariantSett\nmetadata: {name: x, namespace: platform}\n")},
			[]string{"kind.yaml", "PackageVariantSett", "is not served"}},
		{"invalid set", []string{"-f", write("invalid.yaml", "apiVersion: config.porch.kpt.dev/v1alpha2\nkind: PackageVariantSet\nmetadata: {name: x, namespace: platform}\nspec:\n  targets:\n  - repositories: [{name: prod-us-east}]\n")},
			[]string{"invalid.yaml", "PackageVariantSet platform/x", "spec.upstream"}},
		{"bad output", []string{"-o", "xml", "-f", examplesFleet}, []string{`-o "xml"`}},
		{"no input", []string{}, []string{"no input"}},
		{"a snapshot and a cluster", []string{"--kubeconfig", "k", "--as", "me", "-f", examplesFleet}, []string{"--from reads a snapshot, not a cluster; drop --as, --kubeconfig"}},
		{"delete what does not exist", []string{"--delete", "-f", write("gone.yaml", "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata: {name: nowhere, namespace: platform}\nspec:\n  upstream: {repo: blueprints, package: app}\n  downstream: {repo: prod-us-east, package: other}\n")},
			[]string{"PackageVariant platform/nowhere", "does not exist"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"diff", "--from", snap}, c.args...)
			r := variantctl(t, args...)
			r.want(t, exitBadInput)
			mustContain(t, "stderr", r.stderr, c.want...)
		})
	}
}

// TestDiffClusterErrors: an unreachable cluster and a forbidden read exit 2
// with a message saying what to do, and nothing but reads reaches the
// cluster.
func TestDiffClusterErrors(t *testing.T) {
	var mu sync.Mutex
	var methods, callers []string
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method)
		callers = append(callers, r.Header.Get("Impersonate-User"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
			`"message":"repositories.config.porch.kpt.dev is forbidden: User \"ci\" cannot list resource \"repositories\" in the namespace \"platform\""}`))
	}))
	defer forbidden.Close()
	unreachable := httptest.NewServer(http.NotFoundHandler())
	unreachable.Close() // nothing listens there any more

	kubeconfig := func(server string) string {
		p := filepath.Join(t.TempDir(), "kubeconfig")
		cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + server + "}\n" +
			"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: ctx\n  context: {cluster: c, user: u, namespace: platform}\ncurrent-context: ctx\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	r := variantctl(t, "diff", "--kubeconfig", kubeconfig(forbidden.URL), "-f", examplesFleet, "--timeout", "5s")
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "the cluster refused to list Repositories in namespace platform", "needs get and list on")
	mu.Lock()
	for _, m := range methods {
		if m != http.MethodGet {
			t.Errorf("the diff sent %s to the cluster", m)
		}
	}
	mu.Unlock()

	r = variantctl(t, "diff", "--kubeconfig", kubeconfig(unreachable.URL), "-f", examplesFleet)
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "cannot list Repositories in namespace platform", "cannot be reached", "--kubeconfig")

	r = variantctl(t, "diff", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "-f", examplesFleet)
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "cannot use the kubeconfig")

	// kubectl's client flags (cli-runtime's) reach the cluster without a
	// kubeconfig. (A token is sent over TLS only, as kubectl does.)
	mu.Lock()
	callers = nil
	mu.Unlock()
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = variantctl(t, "diff", "--kubeconfig", empty, "-s", forbidden.URL, "--as", "system:serviceaccount:platform:reader", "-n", "platform", "-f", examplesFleet)
	r.want(t, exitBadInput)
	mustContain(t, "stderr", r.stderr, "the cluster refused to list Repositories in namespace platform")
	mu.Lock()
	if len(callers) == 0 || callers[0] != "system:serviceaccount:platform:reader" {
		t.Errorf("requests impersonated %q, want the account of --as", callers)
	}
	mu.Unlock()
}

func mustContain(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}

var writeSnapshot = flag.Bool("write-example-snapshot", false, "write examples/diff/live-snapshot.yaml from the example fleet settled offline")

const (
	exampleSnapshotFile = "../../examples/diff/live-snapshot.yaml"
	exampleChange       = "../../examples/diff/edge-set.yaml"
)

// TestExampleSnapshot keeps examples/diff/live-snapshot.yaml, the "live"
// fleet of the README's diff example: -write-example-snapshot rewrites it;
// otherwise the committed one must read back as a settled fleet (its own
// manifests make no difference).
func TestExampleSnapshot(t *testing.T) {
	if *writeSnapshot {
		b, err := os.ReadFile(exampleSnapshot(t, true))
		if err != nil {
			t.Fatal(err)
		}
		header := "# The example fleet (examples/fleet) as a cluster would hold it once the\n" +
			"# controllers settled, saved as kubectl get -o yaml prints it; the \"live\"\n" +
			"# fleet of the README's variantctl diff example. Regenerate with\n" +
			"#   go test ./cmd/variantctl -run TestExampleSnapshot -write-example-snapshot\n"
		if err := os.WriteFile(exampleSnapshotFile, append([]byte(header), b...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	variantctl(t, "diff", "--from", exampleSnapshotFile, "-f", examplesFleet).want(t, exitOK)
}

// TestREADMEExamples: the README shows what its diff and rollout examples
// print.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rollout := []string{"-f", "../../examples/fleet/repositories.yaml", "-f", "../../examples/fleet/region-configs.yaml", "-f", "../../examples/rollout",
		"--package", "blueprints/app=../../examples/packages/app", "--out", t.TempDir()}
	for _, tc := range []struct {
		marker string
		args   []string
		exit   int
		stderr bool
	}{
		{"output of: variantctl diff --from examples/diff/live-snapshot.yaml -f examples/diff/edge-set.yaml",
			[]string{"diff", "--from", exampleSnapshotFile, "-f", exampleChange}, exitDifferent, false},
		{"output of: variantctl diff --brief --from examples/diff/live-snapshot.yaml --package blueprints/app=examples/upgrade/app",
			[]string{"diff", "--brief", "--from", exampleSnapshotFile, "--package", "blueprints/app=../../examples/upgrade/app"}, exitDifferent, false},
		{"output of: variantctl diff --from examples/diff/live-snapshot.yaml -f examples/rollout/edge-set.yaml",
			[]string{"diff", "--from", exampleSnapshotFile, "-f", "../../examples/rollout/edge-set.yaml"}, exitDifferent, false},
		{"stderr of: variantctl render -f examples/fleet/repositories.yaml -f examples/fleet/region-configs.yaml -f examples/rollout --package blueprints/app=examples/packages/app --out out/",
			append([]string{"render"}, rollout...), exitOK, true},
	} {
		r := variantctl(t, tc.args...)
		r.want(t, tc.exit)
		marker := "<!-- " + tc.marker + " -->\n```\n"
		i := bytes.Index(readme, []byte(marker))
		if i < 0 {
			t.Fatalf("README.md has no block after %q", marker)
		}
		block := readme[i+len(marker):]
		block = block[:bytes.Index(block, []byte("```\n"))]
		got := r.stdout
		if tc.stderr {
			got = r.stderr
		}
		if string(block) != got {
			t.Errorf("README.md's example %q is not what the command prints; put this in it:\n%s", tc.marker, got)
		}
	}
}
