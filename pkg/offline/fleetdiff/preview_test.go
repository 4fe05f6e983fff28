package fleetdiff

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit"
)

// The live fleet of the preview tests: blueprints/app revision 1 (and
// blueprints/checked, whose next revision fails to render); a set
// following the latest revision over the prod repositories, rolled out in
// a canary wave and then the rest; a hand-written variant following the
// latest revision; one pinned to revision 1; every draft published.
func previewFleet(tb testing.TB) string {
	return edgeSet(tb, true) + "---\n" + testdataFile(tb, "preview-variants.yaml")
}

// edgeSet is a set following blueprints/app over the prod repositories,
// its variants labelled with their repository's tier; withRollout rolls a
// change out to the canary tier first, then the rest.
func edgeSet(tb testing.TB, withRollout bool) string {
	set := testdataFile(tb, "edge-set.yaml")
	if withRollout {
		set += `  rollout:
    waves:
    - name: canary
      selector: {matchLabels: {tier: canary}}
    - name: rest
`
	}
	return set
}

// failingKptfile is a Kptfile whose pipeline fails to render.
const failingKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: checked
pipeline:
  validators:
  - name: refuse
    image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5
    configPath: refuse.yaml
`

const refuseConfig = `apiVersion: fn.kpt.dev/v1alpha1
kind: StarlarkRun
metadata:
  name: refuse
  annotations:
    config.kubernetes.io/local-config: "true"
source: |
  fail("replicas must be set per site")
`

func previewLive(t *testing.T, ctx context.Context) (*input.Input, map[string]string) {
	t.Helper()
	var in input.Input
	fleet := strings.Join([]string{
		repositoryWithLabels("prod-a", "env: prod, tier: canary"),
		repositoryWithLabels("prod-b", "env: prod, tier: main"),
		repositoryWithLabels("dev-a", "env: dev"),
		repositoryWithLabels("dev-b", "env: dev"),
		previewFleet(t),
	}, "---\n")
	if errs := in.Read("fleet.yaml", []byte(fleet)); len(errs) > 0 {
		t.Fatal(errs)
	}
	files := testApp(t)
	in.AddPublished("fleet", "blueprints", "app", 1, files, input.Source{File: "../testdata/app"})
	checked := copyMap(files)
	checked["Kptfile"] = strings.ReplaceAll(checked["Kptfile"], "name: app", "name: checked")
	in.AddPublished("fleet", "blueprints", "checked", 1, checked, input.Source{File: "../testdata/app"})

	return settledAndPublished(t, ctx, &in), files
}

// settledAndPublished runs the controllers on in until they settle, has
// people publish every draft, and returns the fleet read as diff reads a
// cluster (in's in-cluster objects included).
func settledAndPublished(tb testing.TB, ctx context.Context, in *input.Input) *input.Input {
	tb.Helper()
	sim := porchsim.New(porchsim.SkipFunctionsNotBuiltIn())
	r := kit.Settled(tb, ctx, sim, in, "fleet")
	publishDrafts(tb, ctx, sim)
	return readSettled(tb, ctx, sim, r, in)
}

// readSettled waits for the controllers to settle, stops them and reads
// the fleet as diff reads a live one, with in's in-cluster objects: the
// objects listed (saved as a snapshot without files and read back), each
// revision's files fetched from the Sim when a run first needs them.
func readSettled(tb testing.TB, ctx context.Context, sim *porchsim.Sim, r *offline.Runner, in *input.Input) *input.Input {
	tb.Helper()
	if err := r.WaitIdle(ctx, 5*time.Minute); err != nil {
		tb.Fatal(err)
	}
	r.Stop()
	var b bytes.Buffer
	if err := input.WriteSnapshot(ctx, sim.Clientset(), "fleet", nil, false, &b); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	live, err := input.ReadSnapshot([]string{path})
	if err != nil {
		tb.Fatal(err)
	}
	live.FileSource = func(ctx context.Context, ns, name string) (map[string]string, error) {
		prr, err := sim.Clientset().PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if prr.Spec.Resources == nil {
			return map[string]string{}, nil
		}
		return prr.Spec.Resources, nil
	}
	live.Objects = in.Objects
	return live
}

// testdataFile is testdata/name, the YAML of a fleet the tests read.
func testdataFile(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func repositoryWithLabels(name, labels string) string {
	return `
apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata: {name: ` + name + `, namespace: fleet, labels: {` + labels + `}}
spec: {type: git, content: Package, deployment: true, git: {repo: "https://git.example.com/` + name + `.git", branch: main}}
`
}

// publishDrafts proposes and publishes every draft of the fleet's
// deployment repositories, as people would.
func publishDrafts(t testing.TB, ctx context.Context, sim *porchsim.Sim) {
	t.Helper()
	st, err := CaptureState(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range st.Revisions {
		if pr.Spec.RepositoryName == "blueprints" || pr.Spec.Lifecycle != "Draft" {
			continue
		}
		if err := sim.Propose(pr.Namespace, pr.Name); err != nil {
			t.Fatal(err)
		}
		if err := sim.Publish(pr.Namespace, pr.Name); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPreviewOfAnUpgrade: publishing blueprints/app revision 2 upgrades
// the hand-written variant and the set's canary variant now, holds the
// set's other variant back for the rest wave, and leaves the pinned
// variant alone; publishing blueprints/checked revision 2, whose pipeline
// fails, is a render failure naming the pipeline's function (Porch's answer
// to a create that fails to render does not say which function failed or
// what it said).
func TestPreviewOfAnUpgrade(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	live, files := previewLive(t, ctx)
	v2 := copyMap(files)
	v2["deployment.yaml"] = strings.Replace(v2["deployment.yaml"], "replicas: 1", "replicas: 2", 1)
	broken := copyMap(files)
	broken["Kptfile"] = failingKptfile
	broken["refuse.yaml"] = refuseConfig
	d, _ := diffWith(t, ctx, live, "", Options{Upgrades: []Upgrade{
		{Repo: "blueprints", Package: "app", Files: v2, Dir: "v2"},
		{Repo: "blueprints", Package: "checked", Revision: 2, Files: broken, Dir: "broken"},
	}})
	if len(d.Previews) != 2 {
		t.Fatalf("%d previews, want 2: %+v", len(d.Previews), d.Previews)
	}

	app := d.Previews[0]
	if app.Package != "blueprints/app" || app.Revision != 2 {
		t.Errorf("first preview is of %s revision %d, want blueprints/app revision 2", app.Package, app.Revision)
	}
	var now []string
	for _, v := range app.Now {
		if v.Draft == "" {
			t.Errorf("%s is upgraded now without a draft", v.Name)
		}
		now = append(now, v.Name+" "+v.Set)
	}
	if len(now) != 2 || now[0] != "fleet/dev-app " || !strings.HasSuffix(now[1], " edge") {
		t.Errorf("upgraded now: %q, want fleet/dev-app and the set edge's canary variant", now)
	}
	if len(app.Later) != 1 || app.Later[0].Set != "edge" || app.Later[0].Wave != "rest" || app.Later[0].Pinned != 1 {
		t.Fatalf("later: %+v, want the set edge's other variant, in wave rest, on revision 1", app.Later)
	}
	// What the held-back variant gets when its wave opens: the upgrade
	// draft, with the new revision's change in its files.
	later := app.Later[0]
	if later.Draft != "prod-b.app.packagevariant-2" || later.Task != "upgrade" || len(later.Revisions) != 1 ||
		!strings.Contains(later.Revisions[0].Diff, "+  replicas: 2") {
		t.Errorf("later's draft when its wave opens: %s (%s), revisions %+v; want upgrade draft prod-b.app.packagevariant-2 with replicas: 2", later.Draft, later.Task, later.Revisions)
	}
	// WriteDrafts writes the drafts made now and the one the held-back
	// variant gets when its wave opens, with the new revision's change.
	out := t.TempDir()
	written, err := d.WriteDrafts(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, draft := range []string{"dev-a/app/packagevariant-2", "prod-a/app/packagevariant-2", "prod-b/app/packagevariant-2"} {
		dir := filepath.Join(out, "fleet", filepath.FromSlash(draft))
		b, err := os.ReadFile(filepath.Join(dir, "deployment.yaml"))
		if !slices.Contains(written, dir) || err != nil || !strings.Contains(string(b), "replicas: 2") {
			t.Errorf("WriteDrafts wrote %q; want %s among them, its deployment with replicas: 2 (%v)\n%s", written, dir, err, b)
		}
	}
	if diff := cmp.Diff([]PreviewVariant{{Name: "fleet/dev-pinned", Pinned: 1}}, app.NotAffected); diff != "" {
		t.Errorf("not affected (-want +got):\n%s", diff)
	}
	if len(app.RenderFailures) != 0 {
		t.Errorf("render failures of blueprints/app: %+v, want none", app.RenderFailures)
	}
	canary := app.Now[1].Name
	if later := app.Later[0].Name; !strings.Contains(canary, "prod-a") || !strings.Contains(later, "prod-b") {
		t.Errorf("now %s and later %s: the canary wave is prod-a's", canary, later)
	}

	checked := d.Previews[1]
	if len(checked.RenderFailures) != 1 || checked.RenderFailures[0].Name != "fleet/dev-checked" ||
		!strings.Contains(checked.RenderFailures[0].Reason, "refuse (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5)") {
		t.Errorf("render failures of blueprints/checked: %+v, want fleet/dev-checked naming the pipeline's function", checked.RenderFailures)
	} else if got, want := checked.RenderFailures[0].FailedFunctions, []string{"refuse (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5): fail: replicas must be set per site"}; !slices.Equal(got, want) {
		t.Errorf("the failed functions of fleet/dev-checked are %q, want %q", got, want)
	}
	if len(checked.Now)+len(checked.Later)+len(checked.NotAffected) != 0 {
		t.Errorf("blueprints/checked: %+v, want only the render failure", checked)
	}

	text := textOf(t, d)
	for _, want := range []string{
		"Publishing blueprints/app revision 2 (namespace fleet):",
		"blueprints/app revision 2: 2 variants upgraded now, 1 later, 1 not affected, 0 failing to render, 0 with collisions",
		`wave "rest", stays on revision 1 until its wave opens it; then gets draft prod-b.app.packagevariant-2 (upgrade):`,
		"fleet/dev-pinned: pinned to revision 1",
		"blueprints/checked revision 2: 0 variants upgraded now, 0 later, 0 not affected, 1 failing to render, 0 with collisions",
		"fleet/dev-checked: refuse (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5): fail: replicas must be set per site\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
}

// TestPreviewRenderFailuresNameTheFunction: each render failure names the
// function that failed and what it said, which Porch's answer to a failed
// create does not: for a variant whose upgrade draft does not render now,
// for one a rollout holds back (what its wave's draft will meet), and for
// one whose upgrade draft is made but does not render once the variant's
// own function is prepended to it.
func TestPreviewRenderFailuresNameTheFunction(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	live, files := previewLive(t, ctx)
	const said = "refuse (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5): fail: replicas must be set per site"

	t.Run("the new revision's own pipeline fails", func(t *testing.T) {
		broken := copyMap(files)
		broken["Kptfile"] = strings.ReplaceAll(failingKptfile, "name: checked", "name: app")
		broken["refuse.yaml"] = refuseConfig
		d, _ := diffWith(t, ctx, live, "", Options{Upgrades: []Upgrade{{Repo: "blueprints", Package: "app", Files: broken, Dir: "broken"}}})
		app := d.Previews[0]
		var failing []string
		for _, v := range app.RenderFailures {
			failing = append(failing, v.Name)
			if !slices.Equal(v.FailedFunctions, []string{said}) {
				t.Errorf("%s: failed functions %q, want %q", v.Name, v.FailedFunctions, said)
			}
		}
		if len(failing) != 2 || failing[0] != "fleet/dev-app" || !strings.Contains(failing[1], "prod-a") {
			t.Errorf("failing to render: %q, want fleet/dev-app and the canary variant", failing)
		}
		if len(app.Later) != 1 || !slices.Equal(app.Later[0].FailedFunctions, []string{said}) || app.Later[0].Draft != "" {
			t.Errorf("later: %+v, want the rest wave's variant, no draft, failing with %q when its wave opens", app.Later, said)
		}
		text := textOf(t, d)
		if want := `wave "rest", stays on revision 1 until its wave opens it; when its wave opens, its draft fails to render: ` + said + "\n"; !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	})

	t.Run("the variant's prepended function fails on the upgrade", func(t *testing.T) {
		v2 := copyMap(files)
		v2["deployment.yaml"] = strings.Replace(v2["deployment.yaml"], "replicas: 1", "replicas: 2", 1)
		change := `apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata: {name: dev-app, namespace: fleet}
spec:
  upstream: {repo: blueprints, package: app}
  downstream: {repo: dev-a, package: app}
  pipeline:
    validators:
    - name: site-check
      image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5
      configMap:
        source: |
          fail("this site takes no upgrade")
`
		d, _ := diffWith(t, ctx, live, change, Options{Upgrades: []Upgrade{{Repo: "blueprints", Package: "app", Files: v2, Dir: "v2"}}})
		app := d.Previews[0]
		if len(app.RenderFailures) != 1 {
			t.Fatalf("failing to render: %+v, want fleet/dev-app", app.RenderFailures)
		}
		f := app.RenderFailures[0]
		want := []string{"PackageVariant.dev-app.site-check.0 (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5): fail: this site takes no upgrade"}
		if f.Name != "fleet/dev-app" || f.Draft != "dev-a.app.packagevariant-2" || !slices.Equal(f.FailedFunctions, want) {
			t.Errorf("render failure %+v, want fleet/dev-app in its upgrade draft dev-a.app.packagevariant-2, failing with %q", f, want)
		}
	})
}

// TestPreviewRefusesAPackageTheFleetLacksOrARevisionOutOfTurn: the
// package must be one the fleet holds, and the revision the next one.
func TestPreviewRefusesAPackageTheFleetLacksOrARevisionOutOfTurn(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	live, files := previewLive(t, ctx)
	for _, tc := range []struct {
		up   Upgrade
		want string
	}{
		{Upgrade{Repo: "blueprints", Package: "ap", Files: files, Dir: "d"}, "the fleet has no revision of package blueprints/ap in namespace fleet"},
		{Upgrade{Repo: "blueprints", Package: "app", Revision: 3, Files: files, Dir: "d"}, "the latest revision of blueprints/app is 1; the preview publishes the next one, 2"},
	} {
		_, _, err := Run(ctx, live, &input.Input{}, Options{Namespace: "fleet", Timeout: 30 * time.Second, Upgrades: []Upgrade{tc.up}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s/%s@%d: got %v, want an error saying %q", tc.up.Repo, tc.up.Package, tc.up.Revision, err, tc.want)
		}
	}
}

// TestPreviewCollisions: the new revision of blueprints/coll changes a
// package context default the variant sets, sets a key the variant sets,
// drops the injection point the variant fills, names a function of its
// pipeline as the variant's prepended one, and adds one named as the
// variant names its own: five collisions, each named.
func TestPreviewCollisions(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var in input.Input
	fleet := repositoryWithLabels("dev-c", "env: dev") + "---\n" + testdataFile(t, "collisions-fleet.yaml")
	if errs := in.Read("fleet.yaml", []byte(fleet)); len(errs) > 0 {
		t.Fatal(errs)
	}
	files := testApp(t)
	v1 := copyMap(files)
	v1["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: coll\n"
	v1["package-context.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: coll\n  tier: basic\n"
	in.AddPublished("fleet", "blueprints", "coll", 1, v1, input.Source{File: "v1"})
	live := settledAndPublished(t, ctx, &in)

	v2 := copyMap(v1)
	delete(v2, "settings.yaml")
	v2["package-context.yaml"] = strings.Replace(v2["package-context.yaml"], "  tier: basic\n", "  tier: standard\n  zone: z0\n", 1)
	v2["Kptfile"] += "pipeline:\n  mutators:\n  - name: add-labels\n    image: ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2.1\n" +
		"  - name: PackageVariant.dev-coll.stamp.3\n    image: ghcr.io/kptdev/krm-functions-catalog/set-annotations:v0.1.4\n"
	d, _ := diffWith(t, ctx, live, "", Options{Upgrades: []Upgrade{{Repo: "blueprints", Package: "coll", Files: v2, Dir: "v2"}}})
	if len(d.Previews) != 1 || len(d.Previews[0].Now) != 1 {
		t.Fatalf("previews %+v, want one with dev-coll upgraded now", d.Previews)
	}
	p := d.Previews[0]
	var got []string
	for _, c := range p.Now[0].Collisions {
		got = append(got, c.Kind+" "+c.Name)
	}
	want := []string{"packageContext tier", "packageContext zone", "injectionPoint config.injection.ConfigMap.settings",
		"pipelineFunction PackageVariant.dev-coll.stamp.3", "pipelineFunction add-labels"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("collisions (-want +got):\n%s", diff)
	}
	if p.WithCollisions != 1 {
		t.Errorf("%d variants with collisions, want 1", p.WithCollisions)
	}
	text := textOf(t, d)
	for _, want := range []string{
		`collision (packageContext tier): the new revision changes the default of package context key "tier" from "basic" to "standard"`,
		`collision (injectionPoint config.injection.ConfigMap.settings): the variant fills injection point ConfigMap.settings`,
		`collision (pipelineFunction PackageVariant.dev-coll.stamp.3): the new revision's pipeline has a function named "PackageVariant.dev-coll.stamp.3" (ghcr.io/kptdev/krm-functions-catalog/set-annotations:v0.1.4), the name the variant gives a function it prepends (PackageVariant.dev-coll.<name>.<position>): the variant's edit takes it for its own and drops it from the package`,
		"1 variants upgraded now, 0 later, 0 not affected, 0 failing to render, 1 with collisions",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q:\n%s", want, text)
		}
	}
}
