package kptengine

import (
	"context"
	"encoding/json"
	"fmt"
	iofs "io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	fnresult "github.com/kptdev/kpt/pkg/api/fnresult/v1"
	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/fn"
	"github.com/kptdev/kpt/pkg/lib/kptops"
	"github.com/kptdev/kpt/pkg/lib/runneroptions"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// NotBuiltinPolicy says what Render does with a pipeline function Porch
// would hand to its function runner (an image IsBuiltin refuses).
type NotBuiltinPolicy int

const (
	// FailNotBuiltin fails the render at such a function, as Porch does when
	// its function runner cannot be reached: the message reads
	// `func eval "<image>" failed: ...` at the place Porch's does.
	FailNotBuiltin NotBuiltinPolicy = iota
	// SkipNotBuiltin passes the resources through such a function unchanged
	// and lists its image in RenderResult.Skipped, so that an offline tool
	// can render what it can and say what it could not. The files say so
	// too: such a function has no step in the Kptfile's renderStatus and
	// no item in Results (nothing claims it ran and passed), and a render
	// that did not fail records Rendered as Unknown, reason
	// NotRunOffline, naming the functions, rather than RenderSuccess.
	SkipNotBuiltin
)

// RenderOptions are the choices a caller makes about a render.
type RenderOptions struct {
	// NotBuiltin is what happens to a function that is not built in.
	NotBuiltin NotBuiltinPolicy
}

// RenderResult is the outcome of rendering a package as Porch renders it.
type RenderResult struct {
	// Files are the package's files after the render. When the render
	// succeeded they are what Porch stores. When it failed they are what
	// Porch stores for a draft annotated porch.kpt.dev/push-on-render-failure
	// (otherwise Porch stores nothing): the files as given, with the root
	// Kptfile carrying the Rendered=False condition and the render status.
	Files map[string]string
	// Failed tells that the pipeline failed: Porch answers such an update
	// with an error (HTTP 500).
	Failed bool
	// Message is, on failure, what Porch writes after "Details: " in that
	// error, e.g. "fn.render: pkg /:\n\tpkg.render:\n\tpipeline.run: error:
	// function failure".
	Message string
	// Results is the list of function results Porch returns as
	// status.renderStatus.result of the PackageRevisionResources: one item
	// per function run, with its image, exit code and structured results.
	Results kptfilev1.ResultList
	// Skipped lists, under SkipNotBuiltin, the images that did not run,
	// each once, in pipeline order.
	Skipped []string
}

// Render runs the package's Kptfile pipeline as Porch does after every
// create and every update of a draft's resources, and records the outcome
// in the root Kptfile as Porch (kpt beta.62.1) does: a Rendered condition
// and status.renderStatus, the Kptfile re-marshalled.
//
// A failing pipeline, a Kptfile kpt refuses or a resource that does not
// parse is a failed render (Failed, Message), not an error: that is how
// Porch reports them. The error is kept for inputs Porch could never hold
// (a file path leaving the package) and for a cancelled context.
func Render(ctx context.Context, files map[string]string, opts RenderOptions) (res *RenderResult, err error) {
	defer recoverPanic(&err, "render package")
	schemaReady()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkPaths(files); err != nil {
		return nil, err
	}
	return render(ctx, files, &functionRuntime{builtins: builtinFunctions, policy: opts.NotBuiltin})
}

// render is Render with the function runtime given.
func render(ctx context.Context, files map[string]string, runtime *functionRuntime) (*RenderResult, error) {
	pkgDir := packageDir(files)
	if pkgDir == "" {
		// Porch skips the render of a package without a Kptfile.
		return &RenderResult{Files: copyFiles(files)}, nil
	}
	rootKptfile := path.Join(strings.TrimPrefix(pkgDir, "/"), kptapi.KptFileName)

	input, taken := stripRenderStatuses(files)
	fsys, err := inMemoryPackage(input)
	if err != nil {
		return nil, err
	}

	var runnerOptions runneroptions.RunnerOptions
	runnerOptions.InitDefaults(runneroptions.GHCRImagePrefix)
	fnResults, renderErr := kptops.NewRenderer(runnerOptions).Render(ctx, fsys, fn.RenderOptions{
		PkgPath: pkgDir,
		Runtime: runtime,
	})

	res := &RenderResult{Skipped: runtime.skippedImages()}
	if res.Results, err = convertResults(fnResults); err != nil {
		return nil, err
	}
	plan := planPipeline(ctx, input, pkgDir, runnerOptions)
	notRun := func(rs *renderStatus) *renderStatus { return withoutSteps(rs, res.Skipped) }
	res.Results.Items = slices.DeleteFunc(res.Results.Items, func(r kptfilev1.Result) bool { return slices.Contains(res.Skipped, r.Image) })

	if renderErr != nil {
		res.Failed = true
		res.Message = renderErr.Error()
		res.Files = copyFiles(files)
		recordRenderFailure(res.Files, pkgDir, rootKptfile, renderErr, func() *renderStatus {
			return notRun(buildRenderStatus(plan, fnResults, pipelineError(renderErr), true))
		})
		return res, nil
	}

	out, err := readPackage(fsys)
	if err != nil {
		return nil, err
	}
	keepSubpackageRenderStatuses(out, files, input, taken, rootKptfile)
	kf, err := recordRender(out[rootKptfile], renderedCondition(res.Skipped), notRun(buildRenderStatus(plan, fnResults, nil, false)))
	if err != nil {
		return nil, fmt.Errorf("record render in %s: %w", rootKptfile, err)
	}
	out[rootKptfile] = kf
	res.Files = out
	return res, nil
}

// recordRenderFailure writes a failed render's condition and status into
// the root Kptfile of files (the package as it was before the render),
// as Porch does; status is the render status to record, made only when
// there is something to record.
func recordRenderFailure(files map[string]string, pkgDir, rootKptfile string, renderErr error, status func() *renderStatus) {
	hydrateErr := hydrationError(renderErr)
	if hydrateErr == nil {
		// Porch (kpt beta.62.1) only records failures of the pipeline
		// itself; a package kpt cannot even read is left as it is.
		return
	}
	// beta.62.1 names the package "." in the condition by replacing
	// its path in the message, which for the root package "/" turns
	// every slash of the message into a dot. Porch stores exactly that.
	cond := kptapi.Condition{
		Type:    conditionTypeRendered,
		Status:  kptapi.ConditionFalse,
		Reason:  reasonRenderFailed,
		Message: strings.ReplaceAll(hydrateErr.Error(), pkgDir, "."),
	}
	// As in kpt, a Kptfile the outcome cannot be written into is left
	// as it is: the render has failed already.
	if kf, err := recordRender(files[rootKptfile], cond, status()); err == nil {
		files[rootKptfile] = kf
	}
}

// keepSubpackageRenderStatuses puts back, into the rendered files out, the
// render status each subpackage's Kptfile had before the render (files;
// input is files without them, taken the statuses taken out): a
// subpackage keeps the render status of its own last render.
func keepSubpackageRenderStatuses(out, files, input map[string]string, taken map[string]*renderStatus, rootKptfile string) {
	for p := range taken {
		rendered, ok := out[p]
		if p == rootKptfile || !ok {
			continue
		}
		if rendered == input[p] {
			out[p] = files[p]
		} else {
			out[p] = restoreRenderStatusNode(rendered, files[p])
		}
	}
}

// renderedCondition is the Rendered condition of a pipeline that ran:
// True, or Unknown when functions were skipped because only Porch's
// function runner can run them.
func renderedCondition(skipped []string) kptapi.Condition {
	if len(skipped) > 0 {
		return kptapi.Condition{
			Type:   conditionTypeRendered,
			Status: kptapi.ConditionUnknown,
			Reason: reasonNotRunOffline,
			Message: "not run offline, only Porch's function runner can run them (the resources passed through unchanged): " +
				strings.Join(skipped, ", "),
		}
	}
	return kptapi.Condition{
		Type:   conditionTypeRendered,
		Status: kptapi.ConditionTrue,
		Reason: reasonRenderSuccess,
	}
}

// recordRender writes the outcome of a render into a Kptfile.
func recordRender(content string, cond kptapi.Condition, rs *renderStatus) (string, error) {
	doc, err := decodeKptfile(content)
	if err != nil {
		return "", err
	}
	doc.setRenderOutcome(cond, rs)
	return encodeKptfile(doc)
}

// packageDir is the directory of the topmost Kptfile, as an absolute path
// in the render's file system, or "" when the package has none.
func packageDir(files map[string]string) string {
	dir := ""
	for _, p := range sortedPaths(files) {
		if !isKptfile(p) {
			continue
		}
		d := "/" + path.Dir(p)
		if d == "/." {
			return "/"
		}
		if dir == "" || strings.HasPrefix(dir, d+"/") {
			dir = d
		}
	}
	return dir
}

// checkPaths refuses file paths that are not inside the package.
func checkPaths(files map[string]string) error {
	for p := range files {
		clean := path.Clean(p)
		if p == "" || clean != p || path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("invalid file path %q: want a clean path inside the package", p)
		}
	}
	return nil
}

// inMemoryPackage writes the files into a file system rooted at "/", as
// Porch hands a package to kpt.
func inMemoryPackage(files map[string]string) (filesys.FileSystem, error) {
	fsys := filesys.MakeFsInMemory()
	for _, p := range sortedPaths(files) {
		full := "/" + p
		if err := fsys.MkdirAll(path.Dir(full)); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
		if err := fsys.WriteFile(full, []byte(files[p])); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
	}
	return fsys, nil
}

// readPackage reads every file back from the render's file system.
func readPackage(fsys filesys.FileSystem) (map[string]string, error) {
	out := map[string]string{}
	err := fsys.Walk("/", func(p string, info iofs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		b, err := fsys.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, "/")] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rendered package: %w", err)
	}
	return out, nil
}

// convertResults turns kpt's result list into the API's, through JSON as
// Porch converts it (kpt's type has no JSON tags; field names match the
// API's regardless of case).
func convertResults(in *fnresult.ResultList) (kptfilev1.ResultList, error) {
	var out kptfilev1.ResultList
	if in == nil {
		return out, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return out, fmt.Errorf("convert function results: %w", err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("convert function results: %w", err)
	}
	return out, nil
}

// copyFiles returns a copy of a package's files (never nil).
func copyFiles(files map[string]string) map[string]string {
	if files == nil {
		return map[string]string{}
	}
	return maps.Clone(files)
}

// recoverPanic turns a panic inside the kpt or kyaml libraries into an
// error: bad input must not bring down porchsim or variantctl.
func recoverPanic(err *error, what string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: unexpected panic: %v", what, p)
	}
}
