package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

const (
	examplesFleet   = "../../examples/fleet"
	examplesPackage = "blueprints/app=../../examples/packages/app"
)

type result struct {
	code           int
	stdout, stderr string
}

func variantctl(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func (r result) want(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// documents splits a YAML stream into kind -> names.
func documents(t *testing.T, stream string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	r := utilyaml.NewYAMLReader(bufioReader(stream))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, doc)
		}
		if obj.Kind != "" {
			out[obj.Kind] = append(out[obj.Kind], obj.Metadata.Name)
		}
	}
	return out
}

// TestRenderExamples is the README's first command: the example fleet
// renders to four set variants plus the hand-written one, each with a
// draft holding its region's settings, and exits 0.
func TestRenderExamples(t *testing.T) {
	r := variantctl(t, "render", "-f", examplesFleet, "--package", examplesPackage)
	r.want(t, exitOK)
	docs := documents(t, r.stdout)
	wantVariants := []string{
		"edge-app-prod-ap-south-app", "edge-app-prod-eu-west-app", "edge-app-prod-us-east-app",
		"edge-app-prod-us-east-canary-app", "staging-us-east-app",
	}
	if got := strings.Join(docs["PackageVariant"], " "); got != strings.Join(wantVariants, " ") {
		t.Errorf("variants = %s, want %s", got, strings.Join(wantVariants, " "))
	}
	if n := len(docs["PackageRevisionResources"]); n != 5 {
		t.Errorf("%d PackageRevisionResources, want 5", n)
	}
	for _, want := range []string{
		"kpt.dev/injected-resource: region-ap-south",
		"kpt.dev/injected-resource: region-us-east",
		"PackageVariant.staging-us-east-app.set-namespace.0",
		"message: 'package variants successfully reconciled: 4 desired, 4 exist, 4 Ready'",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(r.stderr, "1 PackageVariantSets and 5 PackageVariants Ready") {
		t.Errorf("stderr lacks the summary:\n%s", r.stderr)
	}
}

// TestRenderOut writes each draft under DIR/<repository>/<package>/<workspace>/
// and prints a table instead of YAML.
func TestRenderOut(t *testing.T) {
	dir := t.TempDir()
	r := variantctl(t, "render", "-f", examplesFleet, "--package", examplesPackage, "--out", dir)
	r.want(t, exitOK)
	if !strings.HasPrefix(r.stdout, "REPOSITORY") || strings.Count(r.stdout, "created") != 5 {
		t.Errorf("summary table:\n%s", r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "prod-eu-west", "app", "packagevariant-1", "region-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "region: eu-west") {
		t.Errorf("prod-eu-west region-config.yaml:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "staging-eu-west")); !os.IsNotExist(err) {
		t.Errorf("staging-eu-west has no variant but was written (%v)", err)
	}
}

// TestRenderNotReady exits 1 and prints the variant's conditions when its
// upstream does not exist.
func TestRenderNotReady(t *testing.T) {
	r := variantctl(t, "render", "-f", "testdata/missing-upstream.yaml")
	r.want(t, exitNotReady)
	if !strings.Contains(r.stderr, "PackageVariant team/lost is not Ready") ||
		!strings.Contains(r.stderr, `could not find upstream package "nosuchpackage" in repository "blueprints"`) {
		t.Errorf("stderr does not say why:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "name: lost") {
		t.Errorf("the variant is not in the output:\n%s", r.stdout)
	}
}

// TestRenderBadInput exits 2 naming the file, document, object and field.
func TestRenderBadInput(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown field": {
			args: []string{"-f", "testdata/typo.yaml"},
			want: `testdata/typo.yaml (document 1): PackageVariant team/typo: unknown field "spec.injector"`,
		},
		"missing file": {
			args: []string{"-f", "testdata/nosuchfile.yaml"},
			want: "testdata/nosuchfile.yaml: no such file or directory",
		},
		"bad --package": {
			args: []string{"-f", examplesFleet, "--package", "blueprints=../../examples/packages/app"},
			want: `--package "blueprints=../../examples/packages/app": no REPO/PACKAGE`,
		},
		"--package without a Kptfile": {
			args: []string{"-f", examplesFleet, "--package", "blueprints/app=testdata"},
			want: "testdata is not a kpt package: it has no Kptfile",
		},
		"no input": {
			args: []string{},
			want: "no input; give at least one -f FILE_OR_DIR",
		},
		"no variants": {
			args: []string{"-f", examplesFleet + "/repositories.yaml"},
			want: "no PackageVariant or PackageVariantSet; nothing to render",
		},
		"unknown flag": {
			args: []string{"--nosuchflag"},
			want: "variantctl render: unknown flag: --nosuchflag",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := variantctl(t, append([]string{"render"}, tc.args...)...)
			r.want(t, exitBadInput)
			if !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, r.stderr)
			}
		})
	}
}

// TestValidate: valid input exits 0; every problem of every object is
// printed and exits 1; undecodable input exits 2.
func TestValidate(t *testing.T) {
	r := variantctl(t, "validate", "-f", examplesFleet)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "1 PackageVariants and 1 PackageVariantSets are valid") {
		t.Errorf("stdout:\n%s", r.stdout)
	}

	r = variantctl(t, "validate", "-f", "testdata/invalid.yaml")
	r.want(t, exitNotReady)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`invalid.yaml \(document 1\): PackageVariant team/no-downstream: missing required field spec.downstream`),
		regexp.MustCompile(`invalid.yaml \(document 1\): PackageVariant team/no-downstream: spec.adoptionPolicy field can only be "adoptNone" or "adoptExisting"`),
		regexp.MustCompile(`invalid.yaml \(document 2\): PackageVariantSet team/broken-cel: .*spec.targets\[0\].template.labelExprs\[0\].valueExpr`),
		regexp.MustCompile(`invalid.yaml \(document 2\): PackageVariantSet team/broken-cel: .*spec.targets\[0\].template.annotationExprs\[0\].valueExpr.*nosuchvariable`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("output does not match %s:\n%s", want, r.stdout)
		}
	}

	r = variantctl(t, "validate", "-f", "testdata/typo.yaml")
	r.want(t, exitBadInput)
}

// TestExpand prints only the variants the set would make, without drafts;
// a broken set exits 1; input without a set exits 2.
func TestExpand(t *testing.T) {
	r := variantctl(t, "expand", "-f", examplesFleet)
	r.want(t, exitOK)
	docs := documents(t, r.stdout)
	if len(docs) != 1 || len(docs["PackageVariant"]) != 4 {
		t.Errorf("want 4 PackageVariants only, got %v", docs)
	}
	if strings.Contains(r.stdout, "staging-us-east-app") {
		t.Error("expand printed the hand-written variant")
	}
	if strings.Contains(r.stdout, "status:") {
		t.Error("expand printed variant status")
	}
	// The variants decode as PackageVariants and carry the rendered CEL.
	var pv configv1alpha1.PackageVariant
	first := strings.Split(r.stdout, "\n---\n")[0]
	if err := yaml.UnmarshalStrict([]byte(first), &pv); err != nil {
		t.Fatalf("first variant: %v", err)
	}
	if pv.Name != "edge-app-prod-ap-south-app" || pv.Spec.Labels["region"] != "ap-south" || pv.Spec.Injectors[0].Name != "region-ap-south" {
		t.Errorf("first variant = %s labels %v injectors %+v", pv.Name, pv.Spec.Labels, pv.Spec.Injectors)
	}
	if !strings.Contains(r.stderr, "using a stand-in revision 1") {
		t.Errorf("stderr does not mention the stand-in upstream:\n%s", r.stderr)
	}

	// Refused before anything is expanded, in validate's words.
	r = variantctl(t, "expand", "-f", "testdata/invalid.yaml")
	r.want(t, exitNotReady)
	if !strings.Contains(r.stderr, "invalid.yaml (document 2): PackageVariantSet team/broken-cel: spec.targets[0].template.annotationExprs[0].valueExpr") ||
		r.stdout != "" {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	r = variantctl(t, "expand", "-f", "testdata/missing-upstream.yaml")
	r.want(t, exitBadInput)
}

// TestValidateAndExpandRefuseWhatRenderRefuses: validate and expand refuse
// every input render (or a cluster) refuses, with the same exit status and
// the same message naming the file, the object, the field and why.
// Metadata a cluster's API server refuses makes the input unusable (2); a
// spec the controllers refuse, CEL expressions included, is invalid (1).
func TestValidateAndExpandRefuseWhatRenderRefuses(t *testing.T) {
	// Every input also holds a valid set, so that expand has one to expand.
	const base = `apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata: {name: edge, namespace: team, labels: {env: prod}}
spec: {type: git, deployment: true, git: {repo: "https://git.example.com/edge.git", branch: main}}
---
apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: fine, namespace: team}
spec:
  upstream: {repo: blueprints, package: app}
  targets:
  - repositorySelector: {matchLabels: {env: prod}}
`
	variant := func(ns, name string) string {
		return fmt.Sprintf(`---
apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageVariant
metadata: {name: %q, namespace: %q}
spec:
  upstream: {repo: blueprints, package: app}
  downstream: {repo: edge, package: app}
`, name, ns)
	}
	set := func(ns, name, template string) string {
		return fmt.Sprintf(`---
apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata: {name: %q, namespace: %q}
spec:
  upstream: {repo: blueprints, package: app}
  targets:
  - repositorySelector: {matchLabels: {env: prod}}
    template:
%s`, name, ns, template)
	}
	annotation := func(expr string) string {
		return fmt.Sprintf("      annotationExprs:\n      - {key: x, valueExpr: %q}\n", expr)
	}
	long := strings.Repeat("a", 300)
	cases := map[string]struct {
		input string
		code  int
		want  string
	}{
		"variant name with a slash": {
			input: variant("team", "a/b"),
			code:  exitBadInput,
			want:  `input.yaml (document 3): PackageVariant team/a/b: metadata.name: Invalid value: "a/b": a lowercase RFC 1123 subdomain`,
		},
		"upper-case set name": {
			input: set("team", "Upper", annotation("'x'")),
			code:  exitBadInput,
			want:  `input.yaml (document 3): PackageVariantSet team/Upper: metadata.name: Invalid value: "Upper": a lowercase RFC 1123 subdomain`,
		},
		"empty variant name": {
			input: variant("team", ""),
			code:  exitBadInput,
			want:  `input.yaml (document 3): PackageVariant team/(no name): metadata.name: Required value: name or generateName is required`,
		},
		"300-character set name": {
			input: set("team", long, annotation("'x'")),
			code:  exitBadInput,
			want:  `input.yaml (document 3): PackageVariantSet team/` + long + `: metadata.name: Invalid value: "` + long + `": must be no more than 253 characters`,
		},
		"namespace that is not a DNS label": {
			input: variant("Team_A", "app"),
			code:  exitBadInput,
			want:  `input.yaml (document 3): PackageVariant Team_A/app: metadata.namespace: Invalid value: "Team_A": a lowercase RFC 1123 label`,
		},
		"variant given twice": {
			input: variant("team", "dup") + variant("team", "dup"),
			code:  exitBadInput,
			want:  `input.yaml (document 4): PackageVariant team/dup: metadata.name: Duplicate value: "dup": a PackageVariant of that name is also given in `,
		},
		"set given twice": {
			input: set("team", "fine", annotation("'x'")),
			code:  exitBadInput,
			want:  `input.yaml (document 3): PackageVariantSet team/fine: metadata.name: Duplicate value: "fine": a PackageVariantSet of that name is also given in `,
		},
		"CEL reads a field the sandbox does not expose": {
			input: set("team", "cel", annotation("repository.spec.secret")),
			code:  exitNotReady,
			want:  `input.yaml (document 3): PackageVariantSet team/cel: spec.targets[0].template.annotationExprs[0].valueExpr: ERROR: <input>:1:11: undefined field 'spec'`,
		},
		"CEL reads a target field that does not exist": {
			input: set("team", "cel", "      downstream: {packageExpr: \"target.foo\"}\n"),
			code:  exitNotReady,
			want:  `input.yaml (document 3): PackageVariantSet team/cel: spec.targets[0].template.downstream.packageExpr: ERROR: <input>:1:7: undefined field 'foo'`,
		},
		"CEL returns a map": {
			input: set("team", "cel", annotation("repository.labels")),
			code:  exitNotReady,
			want:  `input.yaml (document 3): PackageVariantSet team/cel: spec.targets[0].template.annotationExprs[0].valueExpr: must evaluate to a string, got map(string, string)`,
		},
		"CEL divides by zero": {
			input: set("team", "cel", "      labelExprs:\n      - {keyExpr: \"string(1/0)\", value: v}\n"),
			code:  exitNotReady,
			want:  `input.yaml (document 3): PackageVariantSet team/cel: spec.targets[0].template.labelExprs[0].keyExpr: fails for every target: division by zero`,
		},
		"CEL exceeds the cost limit": {
			input: set("team", "cel", annotation("repository.labels.all(a, repository.labels.all(b, a != b)) ? 'y' : 'n'")),
			code:  exitNotReady,
			want:  `input.yaml (document 3): PackageVariantSet team/cel: spec.targets[0].template.annotationExprs[0].valueExpr: estimated cost `,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "input.yaml")
			if err := os.WriteFile(file, []byte(base+tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"validate", "expand"} {
				r := variantctl(t, cmd, "-f", file)
				if r.code != tc.code {
					t.Errorf("variantctl %s: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", cmd, r.code, tc.code, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stdout+r.stderr, tc.want) {
					t.Errorf("variantctl %s: output lacks %q\nstdout:\n%s\nstderr:\n%s", cmd, tc.want, r.stdout, r.stderr)
				}
			}
		})
	}
}

// TestCommands: no command or an unknown one exits 2 with the usage; help
// exits 0.
func TestCommands(t *testing.T) {
	variantctl(t).want(t, exitBadInput)
	r := variantctl(t, "frobnicate")
	r.want(t, exitBadInput)
	if !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	r = variantctl(t, "help")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "variantctl render") {
		t.Errorf("help:\n%s", r.stdout)
	}
	variantctl(t, "render", "-h").want(t, exitOK)
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// TestRenderRunsPorchsBuiltinFunctions: the example pipeline's functions
// are those Porch runs built in, and variantctl runs them as Porch does:
// the staging variant's prepended set-namespace moved its resources, the
// blueprint's starlark set-labels labelled them, and the Kptfile records a
// successful render.
func TestRenderRunsPorchsBuiltinFunctions(t *testing.T) {
	dir := t.TempDir()
	r := variantctl(t, "render", "-f", examplesFleet, "--package", examplesPackage, "--out", dir)
	r.want(t, exitOK)
	if strings.Contains(r.stdout, "NOT RUN OFFLINE") || strings.Contains(r.stderr, "not run offline") {
		t.Errorf("every example function runs offline:\n%s\n%s", r.stdout, r.stderr)
	}
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{dir}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	deployment := read("staging-us-east", "app", "packagevariant-1", "deployment.yaml")
	for _, want := range []string{"namespace: app-staging", "app.kubernetes.io/managed-by: kpt"} {
		if !strings.Contains(deployment, want) {
			t.Errorf("staging deployment.yaml lacks %q:\n%s", want, deployment)
		}
	}
	if prod := read("prod-eu-west", "app", "packagevariant-1", "deployment.yaml"); strings.Contains(prod, "namespace: app-staging") ||
		!strings.Contains(prod, "app.kubernetes.io/managed-by: kpt") {
		t.Errorf("prod deployment.yaml: labelled, not moved:\n%s", prod)
	}
	if kf := read("staging-us-east", "app", "packagevariant-1", "Kptfile"); !strings.Contains(kf, "reason: RenderSuccess") {
		t.Errorf("Kptfile does not record the render:\n%s", kf)
	}
}

// TestRenderFunctionNotRunOffline: a function only Porch's function runner
// can run is not run offline: the variant's changes are still applied, the
// draft is marked (annotation in YAML, a column with --out) and stderr says
// so, and that alone does not fail the run.
func TestRenderFunctionNotRunOffline(t *testing.T) {
	const image = "gcr.io/kpt-fn/set-annotations:v0.1.4"
	r := variantctl(t, "render", "-f", "testdata/functions.yaml", "--package", examplesPackage)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "variantctl.porch.kpt.dev/functions-not-run: "+image) {
		t.Errorf("the draft is not marked in the YAML output:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "kpt.dev/injected-resource: region-config") {
		t.Errorf("the variant's injection is missing from the draft:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "not run offline, only Porch's function runner can run "+image) {
		t.Errorf("stderr does not warn:\n%s", r.stderr)
	}
	// The draft's Kptfile, in the YAML stream and as written with --out,
	// says what happened: no step claims the function ran and passed, and
	// Rendered is not True.
	checkKptfile := func(where, kf string) {
		t.Helper()
		status := kf[strings.Index(kf, "\nstatus:")+1:]
		for _, want := range []string{"status: Unknown", "reason: NotRunOffline", image} {
			if !strings.Contains(status, want) {
				t.Errorf("%s: the Kptfile's status lacks %q:\n%s", where, want, status)
			}
		}
		if strings.Contains(status, "RenderSuccess") || strings.Contains(status, "- image: "+image) {
			t.Errorf("%s: the Kptfile's status says the function ran:\n%s", where, status)
		}
	}
	if !strings.Contains(r.stdout, "reason: NotRunOffline") || strings.Contains(r.stdout, "reason: RenderSuccess") {
		t.Errorf("the YAML stream's Kptfile does not say the function did not run:\n%s", r.stdout)
	}
	if at := strings.Index(r.stdout, "renderStatus:\n          mutationSteps:"); at < 0 {
		t.Errorf("the YAML stream holds no Kptfile renderStatus:\n%s", r.stdout)
	} else if steps, _, _ := strings.Cut(r.stdout[at:], "workspaceName:"); strings.Contains(steps, image) {
		t.Errorf("the Kptfile's renderStatus lists the function that did not run:\n%s", steps)
	}
	dir := t.TempDir()
	r = variantctl(t, "render", "-f", "testdata/functions.yaml", "--package", examplesPackage, "--out", dir)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "NOT RUN OFFLINE") || !strings.Contains(r.stdout, image) {
		t.Errorf("the table does not show the function not run:\n%s", r.stdout)
	}
	kptfiles, err := filepath.Glob(filepath.Join(dir, "*", "*", "*", "Kptfile"))
	if err != nil || len(kptfiles) != 1 {
		t.Fatalf("drafts written: %v (%v), want one", kptfiles, err)
	}
	b, err := os.ReadFile(kptfiles[0])
	if err != nil {
		t.Fatal(err)
	}
	checkKptfile(kptfiles[0], string(b))
}

// TestRenderFailureOnCreate: a blueprint whose own pipeline fails cannot
// even be cloned (Porch refuses the create with the renderer's message):
// the run ends at once with exit status 1 and the variant's RenderFailed
// condition naming the blueprint's functions, not with a timeout.
func TestRenderFailureOnCreate(t *testing.T) {
	r := variantctl(t, "render", "-f", "testdata/broken-blueprint.yaml", "--package", "blueprints/broken=testdata/broken-blueprint", "--timeout", "60s")
	r.want(t, exitNotReady)
	for _, want := range []string{"PackageVariant team/copy is not Ready", "Ready=False (RenderFailed)",
		"Porch could not create draft edge.copy.packagevariant-1 (clone of blueprints.broken.v1)",
		"blueprints.broken.v1: broken-script (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "did not settle") {
		t.Errorf("the run waited for its timeout:\n%s", r.stderr)
	}
}

// TestRenderFailure: a function that runs and fails fails the render, as on
// Porch: the variant is not Ready (RenderFailed, naming the function and
// what it said) and the exit status is 1.
func TestRenderFailure(t *testing.T) {
	r := variantctl(t, "render", "-f", "testdata/broken-function.yaml", "--package", examplesPackage)
	r.want(t, exitNotReady)
	for _, want := range []string{"PackageVariant team/broken is not Ready", "Ready=False (RenderFailed)",
		"PackageVariant.broken.broken-script.0 (ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.5): ", "want ')'"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}
