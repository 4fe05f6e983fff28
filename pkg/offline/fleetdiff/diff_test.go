package fleetdiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit"
)

// The live fleet of the diff tests: blueprints/app revisions 1 and 2; a
// set pinned to revision 1 over the prod repositories (prod-a, prod-b),
// deleting what it drops; a staging repository it does not select; the
// hand-written variant dev-app. prod-a's draft was published, prod-b's and
// dev-app's are still drafts.
var diffFleet = strings.Join([]string{
	diffRepository("prod-a", "prod", "a"),
	diffRepository("prod-b", "prod", "b"),
	diffRepository("staging-a", "staging", "a"),
	diffRepository("dev-a", "dev", "a"),
	`
apiVersion: v1
kind: ConfigMap
metadata: {name: settings-a, namespace: fleet}
data: {region: region-a}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings-b, namespace: fleet}
data: {region: region-b}
`}, "---")

// diffRepository is a deployment repository of the live fleet, labelled
// with its env and region.
func diffRepository(name, env, region string) string {
	return fmt.Sprintf(`
apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata: {name: %[1]s, namespace: fleet, labels: {env: %[2]s, region: %[3]s}}
spec: {type: git, content: Package, deployment: true, git: {repo: "https://git.example.com/%[1]s.git", branch: main}}
`, name, env, region)
}

const diffSet = `
apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: prod, namespace: fleet}
spec:
  upstream: {repo: blueprints, package: app, revision: 1}
  targets:
  - repositorySelector:
      matchLabels: {env: prod}
    template:
      deletionPolicy: delete
      injectors:
      - nameExpr: "'settings-' + repository.labels['region']"
`

const diffVariant = `
apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata: {name: dev-app, namespace: fleet}
spec:
  upstream: {repo: blueprints, package: app, revision: 1}
  downstream: {repo: dev-a, package: app}
  injectors:
  - name: settings-a
`

// liveFleet makes the live fleet in a Sim, as a cluster would hold it
// once the controllers settled, and returns it read as variantctl diff
// reads a live fleet (readSettled), with the in-cluster objects.
func liveFleet(t *testing.T, ctx context.Context) (*porchsim.Sim, *input.Input) {
	t.Helper()
	var in input.Input
	if errs := in.Read("fleet.yaml", []byte(diffFleet+"---"+diffSet+"---"+diffVariant)); len(errs) > 0 {
		t.Fatal(errs)
	}
	files := testApp(t)
	in.AddPublished("fleet", "blueprints", "app", 1, files, input.Source{File: "../testdata/app"})
	v2 := copyMap(files)
	v2["deployment.yaml"] = strings.Replace(v2["deployment.yaml"], "replicas: 1", "replicas: 2", 1)
	in.AddPublished("fleet", "blueprints", "app", 2, v2, input.Source{File: "../testdata/app"})

	sim := porchsim.New(porchsim.SkipFunctionsNotBuiltIn())
	r := kit.Settled(t, ctx, sim, &in, "fleet")
	if err := sim.Propose("fleet", "prod-a.app.packagevariant-1"); err != nil {
		t.Fatal(err)
	}
	if err := sim.Publish("fleet", "prod-a.app.packagevariant-1"); err != nil {
		t.Fatal(err)
	}
	return sim, readSettled(t, ctx, sim, r, &in)
}

// diffLive runs a diff of the change (YAML, with del deleted) against a
// live fleet made for the test, and returns it with its text.
func diffLive(t *testing.T, change string, del bool) (*Diff, *Stats, string) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	_, live := liveFleet(t, ctx)
	d, stats := diffOf(t, ctx, live, change, del)
	return d, stats, textOf(t, d)
}

// diffOf runs a diff of the change (YAML) against the live fleet.
func diffOf(t *testing.T, ctx context.Context, live *input.Input, change string, del bool) (*Diff, *Stats) {
	t.Helper()
	return diffWith(t, ctx, live, change, Options{Delete: del})
}

// diffWith is diffOf with options (namespace and timeout set here).
func diffWith(t *testing.T, ctx context.Context, live *input.Input, change string, opts Options) (*Diff, *Stats) {
	t.Helper()
	var in input.Input
	if errs := in.Read("change.yaml", []byte(change)); len(errs) > 0 {
		t.Fatal(errs)
	}
	opts.Namespace, opts.Timeout = "fleet", 30*time.Second
	d, stats, err := Run(ctx, live, &in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.NotSettled != "" {
		t.Fatalf("not settled: %s", d.NotSettled)
	}
	return d, stats
}

// testApp is the files of the test blueprint, ../testdata/app.
func testApp(tb testing.TB) map[string]string {
	tb.Helper()
	files, err := input.ReadPackageDir("../testdata/app")
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

func textOf(t *testing.T, d *Diff) string {
	t.Helper()
	var b bytes.Buffer
	if err := d.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDiffOfTheFleetsOwnManifestsIsEmpty(t *testing.T) {
	d, stats, text := diffLive(t, diffSet+"---"+diffVariant, false)
	if !d.Empty() {
		t.Errorf("the fleet's own manifests make a difference:\n%s", text)
	}
	if len(stats.FilesRead) != 0 {
		t.Errorf("an unchanged fleet read package files %v, want none", stats.FilesRead)
	}
	if !strings.Contains(text, "No difference") {
		t.Errorf("the text does not say there is no difference:\n%s", text)
	}
}

// TestDiffShowInjected: asked for, the injected values are shown.
func TestDiffShowInjected(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	_, live := liveFleet(t, ctx)
	change := strings.Replace(diffSet, "matchLabels: {env: prod}", "matchExpressions: [{key: env, operator: In, values: [prod, staging]}]", 1)
	d, _ := diffWith(t, ctx, live, change, Options{ShowInjected: true})
	if len(d.Variants) != 1 || len(d.Variants[0].Revisions) != 1 {
		t.Fatalf("want the new variant's clone:\n%s", textOf(t, d))
	}
	kit.MustContain(t, "the clone's diff", d.Variants[0].Revisions[0].Diff, "+  region: region-a")
}

func TestDiffSelectorGainsARepository(t *testing.T) {
	change := strings.Replace(diffSet, "matchLabels: {env: prod}", "matchExpressions: [{key: env, operator: In, values: [prod, staging]}]", 1)
	d, stats, text := diffLive(t, change, false)
	if len(d.Sets) != 1 || d.Sets[0].Action != DiffChanged || !strings.Contains(d.Sets[0].SpecDiff, "+      - staging") {
		t.Errorf("the set's change is not shown:\n%s", text)
	}
	if len(d.Variants) != 1 {
		t.Fatalf("%d variants differ, want exactly the new one:\n%s", len(d.Variants), text)
	}
	v := d.Variants[0]
	if v.Action != DiffAdded || v.Name != "prod-staging-a-app" || v.Set != "prod" {
		t.Errorf("variant diff %s %s (set %q), want prod-staging-a-app added by set prod:\n%s", v.Name, v.Action, v.Set, text)
	}
	if len(v.Revisions) != 1 {
		t.Fatalf("the new variant has %d revision changes, want its clone:\n%s", len(v.Revisions), text)
	}
	r := v.Revisions[0]
	if r.Action != RevisionCreated || r.Task != "clone" || r.Lifecycle != "Draft" || r.Repository != "staging-a" ||
		!strings.HasPrefix(r.ComparedWith, "blueprints.app.v1 ") {
		t.Errorf("revision diff %+v, want a clone Draft in staging-a compared with blueprints.app.v1", r)
	}
	// The clone's files against its upstream: the injected ConfigMap,
	// its values masked.
	kit.MustContain(t, "the clone's diff", r.Diff, "--- blueprints/app/settings.yaml", "+++ staging-a/app/settings.yaml", "+  region: '*** (after)'")
	if strings.Contains(r.Diff, "region-a") {
		t.Errorf("the diff shows an injected value without --show-injected:\n%s", r.Diff)
	}
	if s := d.Summary; s.VariantsAdded != 1 || s.RevisionsCreated != 1 || s.Clones != 1 || s.SetsChanged != 1 {
		t.Errorf("summary %+v", s)
	}
	// Bounded: the upstream the clone compares with, nothing of the
	// fleet's downstreams.
	if strings.Join(stats.FilesRead, ",") != "fleet/blueprints.app.v1" {
		t.Errorf("files read: %v, want only the upstream's", stats.FilesRead)
	}
	kit.MustContain(t, "the text", text, "+ PackageVariant fleet/prod-staging-a-app (set prod): added",
		"+ PackageRevision fleet/staging-a.app.packagevariant-1: created Draft (clone)",
		"PackageVariants: 1 added, 0 changed, 0 removed")
}

func TestDiffPackageContextChange(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	_, live := liveFleet(t, ctx)
	// Each package's files are read from the cluster once, however many
	// times the run and the comparison need them.
	var mu sync.Mutex
	reads := map[string]int{}
	source := live.FileSource
	live.FileSource = func(ctx context.Context, ns, name string) (map[string]string, error) {
		mu.Lock()
		reads[ns+"/"+name]++
		mu.Unlock()
		return source(ctx, ns, name)
	}
	defer func() {
		for name, n := range reads {
			if n > 1 {
				t.Errorf("the files of %s were read %d times from the cluster, want once", name, n)
			}
		}
		if len(reads) == 0 {
			t.Error("no files were read from the cluster")
		}
	}()
	change := strings.Replace(diffSet, "      deletionPolicy: delete\n",
		"      deletionPolicy: delete\n      packageContext:\n        dataExprs:\n        - key: region\n          valueExpr: repository.labels['region']\n", 1)
	d, _ := diffOf(t, ctx, live, change, false)
	text := textOf(t, d)
	regions := map[string]string{"prod-prod-a-app": "a", "prod-prod-b-app": "b"}
	for _, v := range d.Variants {
		region, ok := regions[v.Name]
		if !ok {
			t.Errorf("variant %s differs, want only the set's:\n%s", v.Name, text)
			continue
		}
		delete(regions, v.Name)
		if v.Action != DiffChanged || !strings.Contains(v.SpecDiff, "+    region: "+region) {
			t.Errorf("variant %s: %s, spec diff:\n%s", v.Name, v.Action, v.SpecDiff)
		}
		if len(v.Revisions) != 1 || !strings.Contains(v.Revisions[0].Diff, "+  region: "+region) ||
			!strings.Contains(v.Revisions[0].Diff, "package-context.yaml") {
			t.Errorf("variant %s: the draft does not show the new package context:\n%s", v.Name, text)
		}
	}
	if len(regions) > 0 {
		t.Errorf("variants not shown: %v\n%s", regions, text)
	}
}

func TestDiffUpstreamPinMoved(t *testing.T) {
	d, _, text := diffLive(t, strings.Replace(diffSet, "revision: 1", "revision: 2", 1), false)
	got := map[string]RevisionDiff{}
	for _, v := range d.Variants {
		for _, r := range v.Revisions {
			got[v.Name] = r
		}
	}
	// prod-a is published: an upgrade draft, with the new replicas.
	if r := got["prod-prod-a-app"]; r.Task != "upgrade" || r.Action != RevisionCreated || !strings.Contains(r.Diff, "+  replicas: 2") ||
		!strings.HasPrefix(r.ComparedWith, "prod-a.app.packagevariant-1 (Published 1)") {
		t.Errorf("prod-a: %+v\n%s", r, text)
	}
	// prod-b's untouched draft is replaced by a clone of revision 2.
	if r := got["prod-prod-b-app"]; r.Action != RevisionReplaced || r.Replaces == "" || !strings.Contains(r.Diff, "+  replicas: 2") {
		t.Errorf("prod-b: %+v\n%s", r, text)
	}
	if _, ok := got["dev-app"]; ok {
		t.Errorf("dev-app (pinned on its own) changed:\n%s", text)
	}
}

func TestDiffDeleteSet(t *testing.T) {
	d, _, text := diffLive(t, diffSet, true)
	if len(d.Sets) != 1 || d.Sets[0].Action != DiffRemoved {
		t.Errorf("the set is not shown removed:\n%s", text)
	}
	actions := map[string]string{}
	for _, v := range d.Variants {
		if v.Action != DiffRemoved {
			t.Errorf("variant %s: %s, want removed", v.Name, v.Action)
		}
		for _, r := range v.Revisions {
			actions[r.Name] = r.Action
		}
	}
	want := map[string]string{
		"prod-a.app.packagevariant-1": RevisionProposedForDeletion,
		"prod-b.app.packagevariant-1": RevisionDeleted,
	}
	for name, a := range want {
		if actions[name] != a {
			t.Errorf("%s: %q, want %q\n%s", name, actions[name], a, text)
		}
	}
	kit.MustContain(t, "the text", text, "! PackageRevision fleet/prod-a.app.packagevariant-1: proposed for deletion (Published 1",
		"- PackageRevision fleet/prod-b.app.packagevariant-1: deleted (was Draft)")
}

func TestDiffInjectorOfAMissingObject(t *testing.T) {
	d, _, text := diffLive(t, strings.Replace(diffVariant, "- name: settings-a", "- name: settings-missing", 1), false)
	if len(d.Variants) != 1 || d.Variants[0].Name != "dev-app" {
		t.Fatalf("want dev-app alone:\n%s", text)
	}
	// The variant itself stays Ready (an unfulfilled injection point does
	// not touch the variant's conditions, as the design says): the diff
	// shows its condition and that its draft cannot be published.
	v := d.Variants[0]
	if v.Ready == nil || v.Ready.Status != "True" {
		t.Errorf("dev-app's Ready is not shown: %+v\n%s", v.Ready, text)
	}
	if len(v.Revisions) != 1 || len(v.Revisions[0].Blocking) != 1 ||
		v.Revisions[0].Blocking[0].Type != "config.injection.ConfigMap.settings" ||
		!strings.Contains(v.Revisions[0].Blocking[0].Message, `"settings-missing"`) {
		t.Errorf("the draft's unfulfilled injection point is not shown:\n%s", text)
	}
	kit.MustContain(t, "the text", text, "    Ready: True NoErrors",
		`blocks publishing: config.injection.ConfigMap.settings: False NoResourceSelected`)
}

func TestDiffMachineReadable(t *testing.T) {
	d, _, _ := diffLive(t, strings.Replace(diffSet, "revision: 1", "revision: 2", 1), false)
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Diff
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("the JSON does not read back: %v\n%s", err, b.String())
	}
	if back.Summary != d.Summary || len(back.Variants) != len(d.Variants) || back.Variants[0].Name != d.Variants[0].Name {
		t.Errorf("the JSON lost something:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `"name": "prod-prod-a-app"`) {
		t.Errorf("the variant's fields are not inline:\n%s", b.String())
	}
}

// TestDiffNeverWritesTheSource: the live fleet is read, never changed.
func TestDiffNeverWritesTheSource(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	sim, live := liveFleet(t, ctx)
	sim.ResetRequests()
	before, err := CaptureState(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	diffOf(t, ctx, live, diffSet, true)
	for req := range sim.Requests() {
		switch verb, _, _ := strings.Cut(req, " "); verb {
		case "list", "get", "watch":
		default:
			t.Errorf("the diff sent %q to the live fleet", req)
		}
	}
	after, err := CaptureState(ctx, sim)
	if err != nil {
		t.Fatal(err)
	}
	for k, pr := range before.Revisions {
		if a := after.Revisions[k]; a == nil || a.ResourceVersion != pr.ResourceVersion {
			t.Errorf("revision %s changed in the live fleet", k)
		}
	}
}
