package kptengine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fnsdk "github.com/kptdev/krm-functions-sdk/go/fn"
)

// TestRenderAsPorch proves, against what real Porch stored and answered,
// the files a render stores, the function results it returns and, on
// failure, its message.
func TestRenderAsPorch(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason string
		// The testdata directories of the input and the files wanted, and
		// the testdata file of the results wanted.
		input, wantFiles, wantResults string
		wantFailed                    bool
		wantMessage                   string
	}{
		"SetNamespace": {
			reason:      "transcript 04: resources rendered, Kptfile re-indented with the Rendered condition and renderStatus, FunctionResultList items",
			input:       "render-set-namespace/input",
			wantFiles:   "render-set-namespace/want",
			wantResults: "render-set-namespace/want-results.json",
		},
		"RerenderOfAClone": {
			reason:      "transcript 19: a Kptfile already carrying renderStatus (which kpt beta.61 cannot read) renders; merge comments and identifiers survive",
			input:       "render-cloned-deployment/input",
			wantFiles:   "render-cloned-deployment/want",
			wantResults: "render-cloned-deployment/want-results.json",
		},
		"StarlarkSyntaxError": {
			reason: "transcripts 05 and 07: the message after \"Details: \", and the files stored with push-on-render-failure: the input unrendered, " +
				"the Kptfile with Rendered=False, both functions' steps, errorResults and errorSummary",
			input:       "render-starlark-syntax-error/input",
			wantFiles:   "render-starlark-syntax-error/want",
			wantFailed:  true,
			wantMessage: readTestdataFile(t, "render-starlark-syntax-error/want-message.txt"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := Render(context.Background(), readPackageDir(t, tc.input), RenderOptions{})
			if err != nil {
				t.Fatalf("%s\nRender(...): %v", tc.reason, err)
			}
			if res.Failed != tc.wantFailed || res.Message != tc.wantMessage {
				t.Errorf("%s\nRender(...): failed %v, message %q; want %v, %q", tc.reason, res.Failed, res.Message, tc.wantFailed, tc.wantMessage)
			}
			if diff := diffFiles(readPackageDir(t, tc.wantFiles), res.Files, false); diff != "" {
				t.Errorf("%s\nRender(...).Files: -want +got:\n%s", tc.reason, diff)
			}
			if tc.wantResults != "" {
				if diff := cmp.Diff(readResults(t, tc.wantResults), res.Results); diff != "" {
					t.Errorf("%s\nRender(...).Results: -want +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

// TestRenderNotBuiltin covers functions Porch hands to its function runner
// (transcript 06: an image from another registry, and a catalog tag Porch
// does not build in), under both policies.
func TestRenderNotBuiltin(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason string
		input  string
		image  string
		policy NotBuiltinPolicy
	}{
		"OtherRegistryFails": {
			reason: "gcr.io/kpt-fn/set-labels:v0.2.0 is not built in",
			input:  "render-not-builtin-set-labels",
			image:  "gcr.io/kpt-fn/set-labels:v0.2.0",
			policy: FailNotBuiltin,
		},
		"OtherTagFails": {
			reason: "set-namespace:v0.4.1 is a podExecutor tag, not built in",
			input:  "render-not-builtin-set-namespace-v0.4.1",
			image:  "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1",
			policy: FailNotBuiltin,
		},
		"OtherRegistrySkipped": {
			reason: "offline, the function is skipped and reported",
			input:  "render-not-builtin-set-labels",
			image:  "gcr.io/kpt-fn/set-labels:v0.2.0",
			policy: SkipNotBuiltin,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			input := readPackageDir(t, tc.input+"/input")
			res, err := Render(context.Background(), input, RenderOptions{NotBuiltin: tc.policy})
			if err != nil {
				t.Fatalf("%s\nRender(...): %v", tc.reason, err)
			}
			if tc.policy == SkipNotBuiltin {
				if res.Failed {
					t.Fatalf("%s\nRender(...): failed: %s", tc.reason, res.Message)
				}
				if diff := cmp.Diff([]string{tc.image}, res.Skipped); diff != "" {
					t.Errorf("%s\nRender(...).Skipped: -want +got:\n%s", tc.reason, diff)
				}
				for p, content := range input {
					if p != "Kptfile" && res.Files[p] != content {
						t.Errorf("%s\nRender(...): %s changed by a skipped function:\n%s", tc.reason, p, res.Files[p])
					}
				}
				// The files say the function did not run: no step or
				// result claims it passed, and Rendered is not True.
				kf := res.Files["Kptfile"]
				status := kf[strings.Index(kf, "\nstatus:"):]
				for _, want := range []string{"type: Rendered", "status: Unknown", "reason: NotRunOffline", "function runner can run them", tc.image} {
					if !strings.Contains(status, want) {
						t.Errorf("%s\nRender(...): the Kptfile's status lacks %q:\n%s", tc.reason, want, status)
					}
				}
				if strings.Contains(status, "exitCode") || strings.Contains(status, "RenderSuccess") {
					t.Errorf("%s\nRender(...): the Kptfile's status claims the skipped function ran:\n%s", tc.reason, status)
				}
				for _, item := range res.Results.Items {
					if item.Image == tc.image {
						t.Errorf("%s\nRender(...).Results lists the skipped function as run: %+v", tc.reason, item)
					}
				}
				return
			}

			// Porch's message names the unreachable function runner where
			// this one says there is none; up to there they are the same.
			porch := readTestdataFile(t, tc.input+"/porch-message.txt")
			prefix, _, ok := strings.Cut(porch, " failed: ")
			if !ok {
				t.Fatalf("porch-message.txt: no ' failed: ' in %q", porch)
			}
			wantMessage := prefix + " failed: " + noFunctionRunner
			if !res.Failed || res.Message != wantMessage {
				t.Errorf("%s\nRender(...): failed %v, message %q; want true, %q", tc.reason, res.Failed, res.Message, wantMessage)
			}
			if len(res.Skipped) != 0 {
				t.Errorf("%s\nRender(...).Skipped = %v, want none", tc.reason, res.Skipped)
			}
			// Not measured (Porch stored nothing here); what kpt beta.62.1
			// writes, by its source: the condition message with every "/"
			// of the package path "/" turned into ".", one step with exit
			// code 1, the summary naming it.
			dotted := strings.ReplaceAll(tc.image, "/", ".")
			wantStatus := "status:\n  conditions:\n    - type: Rendered\n      status: \"False\"\n      reason: RenderFailed\n" +
				"      message: |-\n        pkg.render: pkg .:\n        \tpipeline.run: func eval \"" + dotted + "\" failed: " + noFunctionRunner + "\n" +
				"  renderStatus:\n    mutationSteps:\n      - image: " + tc.image + "\n        exitCode: 1\n" +
				"    errorSummary: '" + tc.image + ": exit code 1'\n"
			if !strings.HasSuffix(res.Files["Kptfile"], wantStatus) {
				t.Errorf("%s\nRender(...): Kptfile:\n%s\nwant it to end with:\n%s", tc.reason, res.Files["Kptfile"], wantStatus)
			}
			if diff := cmp.Diff(input["configmap.yaml"], res.Files["configmap.yaml"]); diff != "" {
				t.Errorf("%s\nRender(...): a failed render stores the resources as given: -want +got:\n%s", tc.reason, diff)
			}
			if n := len(res.Results.Items); n != 1 || res.Results.Items[0].Image != tc.image || res.Results.Items[0].ExitCode != 1 {
				t.Errorf("%s\nRender(...).Results.Items = %+v, want one item for %s with exit code 1", tc.reason, res.Results.Items, tc.image)
			}
		})
	}
}

// TestRenderBadInput proves that packages kpt cannot render fail the render
// with kpt's message, like Porch, and never panic; and that inputs no Porch
// package could hold are errors.
func TestRenderBadInput(t *testing.T) {
	t.Parallel()
	withFile := func(p, content string) func(t *testing.T) map[string]string {
		return func(t *testing.T) map[string]string {
			f := readPackageDir(t, "render-set-namespace/input")
			f[p] = content
			return f
		}
	}
	cases := map[string]struct {
		reason      string
		files       func(t *testing.T) map[string]string
		wantErr     string
		wantMessage string
		// wantCondition: the failure is the pipeline's, recorded in the Kptfile.
		wantCondition bool
	}{
		"KptfileNotYAML": {
			reason:      "a Kptfile that does not parse",
			files:       withFile("Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: [\n"),
			wantMessage: "fn.render: pkg /:",
		},
		"KptfileUnknownField": {
			reason:      "kpt refuses unknown Kptfile fields",
			files:       withFile("Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\nspec: {}\n"),
			wantMessage: "field spec not found",
		},
		"ResourceNotYAML": {
			reason:        "a resource file that does not parse fails the pipeline",
			files:         withFile("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n"),
			wantMessage:   "fn.render: pkg /:\n\tpkg.render:",
			wantCondition: true,
		},
		"ExecFunction": {
			reason:        "Porch never runs exec functions",
			files:         withFile("Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: set-namespace:v0.4.5\n    configMap:\n      namespace: foo\n  - exec: ./fn\n"),
			wantMessage:   "fn.render: pkg /:\n\tpkg.render:\n\tpipeline.run: " + execNotAllowed,
			wantCondition: true,
		},
		"PathOutsideThePackage": {
			reason:  "no package holds such a path",
			files:   withFile("../x.yaml", "a: b\n"),
			wantErr: "invalid file path",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := tc.files(t)
			res, err := Render(context.Background(), files, RenderOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s\nRender(...): error %v, want one containing %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nRender(...): %v", tc.reason, err)
			}
			if !res.Failed || !strings.Contains(res.Message, tc.wantMessage) {
				t.Errorf("%s\nRender(...): failed %v, message %q; want a failure containing %q", tc.reason, res.Failed, res.Message, tc.wantMessage)
			}
			recorded := strings.Contains(res.Files["Kptfile"], "reason: RenderFailed")
			if recorded != tc.wantCondition {
				t.Errorf("%s\nRender(...): Rendered=False recorded in the Kptfile: %v, want %v:\n%s", tc.reason, recorded, tc.wantCondition, res.Files["Kptfile"])
			}
			if !tc.wantCondition && res.Files["Kptfile"] != files["Kptfile"] {
				t.Errorf("%s\nRender(...): Kptfile changed:\n%s", tc.reason, res.Files["Kptfile"])
			}
		})
	}
}

// TestRenderExecFunctionStep checks the step kpt beta.62.1 records for a
// function that fails before it runs: kpt prepares every mutator of a
// package before running any, so the exec function is the failed step and
// the mutator before it never ran.
func TestRenderExecFunctionStep(t *testing.T) {
	t.Parallel()
	res := mustRender(t, setNamespaceInput(t, map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: set-namespace:v0.4.5\n    configMap:\n      namespace: foo\n  - exec: ./fn\n    name: local\n",
	}))
	checkKptfileEnds(t, res, "  renderStatus:\n    mutationSteps:\n      - name: local\n        exec: ./fn\n        executionError: must run with `--allow-exec` option to allow running function binaries\n        exitCode: 1\n"+
		"    errorSummary: 'local: must run with `--allow-exec` option to allow running function binaries'\n")
}

// TestRenderPanickingFunction proves that a built-in function that panics
// fails the render with the panic as its error, as Porch's builtin runner
// recovers it, instead of bringing the process down.
func TestRenderPanickingFunction(t *testing.T) {
	t.Parallel()
	const image = "example.com/panics:v1"
	runtime := &functionRuntime{builtins: map[string]fnsdk.ResourceListProcessor{
		image: fnsdk.ResourceListProcessorFunc(func(*fnsdk.ResourceList) (bool, error) {
			panic(errors.New("boom"))
		}),
	}}
	files := setNamespaceInput(t, map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: " + image + "\n    configMap:\n      k: v\n",
	})
	res, err := render(context.Background(), files, runtime)
	if err != nil {
		t.Fatalf("render(...): %v", err)
	}
	checkFailed(t, res, "fn.render: pkg /:\n\tpkg.render:\n\tpipeline.run: KRM function panicked with: boom")
	if !strings.Contains(res.Files["Kptfile"], "      - image: "+image+"\n        exitCode: 1\n") {
		t.Errorf("render(...): Kptfile does not record the failed step:\n%s", res.Files["Kptfile"])
	}
}

// TestRenderBuiltinWithoutConfig: the SDK Porch runs built-in functions
// with refuses a function without config (no configMap, no configPath),
// so Porch fails such a render, with the SDK's words.
func TestRenderBuiltinWithoutConfig(t *testing.T) {
	t.Parallel()
	res := mustRender(t, setNamespaceInput(t, map[string]string{
		"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: set-namespace:v0.4.5\n",
	}))
	checkFailed(t, res, "fn.render: pkg /:\n\tpkg.render:\n\tpipeline.run: failed to read ResourceList input: expected exactly one object, got 0")
}

// TestRenderWithoutKptfile: Porch skips the render of a package that has no
// Kptfile and stores the files as they are.
func TestRenderWithoutKptfile(t *testing.T) {
	t.Parallel()
	files := map[string]string{"README.md": "# x\n", "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"}
	res, err := Render(context.Background(), files, RenderOptions{})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	if res.Failed || len(res.Results.Items) != 0 {
		t.Errorf("Render(...): failed %v, results %v; want a skipped render", res.Failed, res.Results.Items)
	}
	if diff := cmp.Diff(files, res.Files); diff != "" {
		t.Errorf("Render(...).Files: -want +got:\n%s", diff)
	}
}

// TestRenderCancelled: a cancelled context is an error, not a render.
func TestRenderCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Render(ctx, readPackageDir(t, "render-set-namespace/input"), RenderOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Render(cancelled): error %v, want context.Canceled", err)
	}
}

// TestRenderValidatorFailure checks the render status of a pipeline with
// named and unnamed mutators of two built-in functions and a failing
// validator (not measured; kpt beta.62.1's rules, by its source): steps
// carry the name when there is one and the image as kpt resolved it,
// mutators and validators are listed apart, the summary names the failed
// step. A failed render stores the resources as given.
func TestRenderValidatorFailure(t *testing.T) {
	t.Parallel()
	files := readPackageDir(t, "render-set-namespace/input")
	files["Kptfile"] = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
pipeline:
  mutators:
  - image: set-namespace:v0.4.5
    name: ns
    configMap:
      namespace: foo
  - image: apply-replacements:v0.1.5
    configPath: replacements.yaml
  validators:
  - image: starlark:v0.5
    configPath: check.yaml
`
	files["replacements.yaml"] = `apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: region-label
  annotations:
    config.kubernetes.io/local-config: "true"
replacements:
- source:
    kind: ConfigMap
    name: region-config
    fieldPath: data.region
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - spec.template.metadata.labels.region
    options:
      create: true
`
	files["check.yaml"] = `apiVersion: fn.kpt.dev/v1alpha1
kind: StarlarkRun
metadata:
  name: check
  annotations:
    config.kubernetes.io/local-config: "true"
source: |
  fail("replicas must be 2")
`
	res := mustRender(t, files)
	checkFailed(t, res, "fn.render: pkg /:\n\tpkg.render:\n\tpipeline.run: error: function failure")
	checkKptfileEnds(t, res, readTestdataFile(t, "render-validator-failure/want-kptfile-status.yaml"))
	for _, p := range []string{"configmap.yaml", "deployment.yaml"} {
		if res.Files[p] != files[p] {
			t.Errorf("Render(...): %s changed by a failed render:\n%s", p, res.Files[p])
		}
	}
	if n := len(res.Results.Items); n != 3 {
		t.Errorf("Render(...).Results.Items: %d items, want 3 (one per function run)", n)
	}
}

// TestRenderSubpackage checks a package with a subpackage (not measured;
// kpt's rules): the subpackage's pipeline runs first, the root Kptfile
// lists the steps of both, and the subpackage's Kptfile keeps the status of
// its own last render, which kpt beta.61 could not even read.
func TestRenderSubpackage(t *testing.T) {
	t.Parallel()
	subKptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\npipeline:\n  mutators:\n    - image: set-namespace:v0.4.5\n      name: sub-namespace\n      configMap:\n        namespace: low\n" +
		"status:\n  conditions:\n    - type: Rendered\n      status: \"True\"\n      reason: RenderSuccess\n  renderStatus:\n    mutationSteps:\n      - image: ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5\n        exitCode: 0\n"
	files := map[string]string{
		"Kptfile":     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: root\npipeline:\n  mutators:\n  - image: set-namespace:v0.4.5\n    configMap:\n      namespace: top\n",
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
		"sub/Kptfile": subKptfile,
		"sub/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  k: v\n",
	}
	res, err := Render(context.Background(), files, RenderOptions{})
	if err != nil || res.Failed {
		t.Fatalf("Render(...): %v %s", err, res.Message)
	}
	checkKptfileEnds(t, res, readTestdataFile(t, "render-subpackage/want-kptfile-tail.yaml"))
	if diff := cmp.Diff(subKptfile, res.Files["sub/Kptfile"]); diff != "" {
		t.Errorf("Render(...): sub/Kptfile: -want +got:\n%s", diff)
	}
	if !strings.Contains(res.Files["sub/cm.yaml"], "namespace: top") {
		t.Errorf("Render(...): sub/cm.yaml not rendered by the root pipeline:\n%s", res.Files["sub/cm.yaml"])
	}
}

// setNamespaceInput is the package of render-set-namespace/input with the
// files of changed replaced or added.
func setNamespaceInput(t *testing.T, changed map[string]string) map[string]string {
	t.Helper()
	files := readPackageDir(t, "render-set-namespace/input")
	for p, content := range changed {
		files[p] = content
	}
	return files
}

// mustRender renders files as Porch does, failing the test on an error
// (a failed render is a result, not an error).
func mustRender(t *testing.T, files map[string]string) *RenderResult {
	t.Helper()
	res, err := Render(context.Background(), files, RenderOptions{})
	if err != nil {
		t.Fatalf("Render(...): %v", err)
	}
	return res
}

// checkFailed checks that the render failed with exactly want.
func checkFailed(t *testing.T, res *RenderResult, want string) {
	t.Helper()
	if !res.Failed || res.Message != want {
		t.Errorf("Render(...): failed %v, message %q; want true, %q", res.Failed, res.Message, want)
	}
}

// checkKptfileEnds checks that the rendered Kptfile ends with want, its
// status as kpt writes it.
func checkKptfileEnds(t *testing.T, res *RenderResult, want string) {
	t.Helper()
	if !strings.HasSuffix(res.Files["Kptfile"], want) {
		t.Errorf("Render(...): Kptfile:\n%s\nwant it to end with:\n%s", res.Files["Kptfile"], want)
	}
}
