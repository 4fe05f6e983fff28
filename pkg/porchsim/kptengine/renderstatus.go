package kptengine

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	fnresult "github.com/kptdev/kpt/pkg/api/fnresult/v1"
	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	kpterrors "github.com/kptdev/kpt/pkg/lib/errors"
	"github.com/kptdev/kpt/pkg/lib/runneroptions"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
)

// Operation names in kpt's render errors: the whole render, the hydration
// of one package, and the run of one package's pipeline.
const (
	opRender      kpterrors.Op = "fn.render"
	opPackage     kpterrors.Op = "pkg.render"
	opPipelineRun kpterrors.Op = "pipeline.run"
)

// execNotAllowed is kpt's refusal of an exec function; Porch never allows
// them.
const execNotAllowed = "must run with `--allow-exec` option to allow running function binaries"

// plannedFunction is one function of a render, in the order kpt runs them.
type plannedFunction struct {
	// pkg is the package directory whose pipeline holds the function.
	pkg        string
	validation bool
	fn         kptapi.Function
}

// planPipeline lists the functions of the package and its subpackages in
// the order kpt beta.61 runs them: depth first, subpackages (in path order)
// before their parent, or parent first level by level when the root
// Kptfile asks for kpt.dev/bfs-rendering; within a package the mutators,
// then the validators. kpt returns one result per function run, in that
// order; the plan tells which function each result belongs to.
//
// The plan stops at the first Kptfile that does not decode: kpt stops there
// too.
func planPipeline(ctx context.Context, files map[string]string, pkgDir string, opts runneroptions.RunnerOptions) []plannedFunction {
	kptfiles := map[string]*kptfileDoc{}
	var dirs []string
	for _, p := range sortedPaths(files) {
		if !isKptfile(p) {
			continue
		}
		d := path.Clean("/" + path.Dir(p))
		if d != pkgDir && !strings.HasPrefix(d, strings.TrimSuffix(pkgDir, "/")+"/") {
			continue
		}
		dirs = append(dirs, d)
		if doc, err := decodeKptfile(files[p]); err == nil {
			kptfiles[d] = doc
		}
	}
	children := func(parent string) []string {
		var out []string
		for _, d := range dirs {
			if d != parent && isDirectSubpackage(parent, d, dirs) {
				out = append(out, d)
			}
		}
		sort.Strings(out)
		return out
	}

	var order []string
	root := kptfiles[pkgDir]
	if root != nil && kptapi.ToCondition(root.Annotations[kptapi.BFSRenderAnnotation]) == kptapi.ConditionTrue {
		queue := []string{pkgDir}
		for len(queue) > 0 {
			d := queue[0]
			queue = queue[1:]
			order = append(order, d)
			queue = append(queue, children(d)...)
		}
	} else {
		var visit func(string)
		visit = func(d string) {
			for _, c := range children(d) {
				visit(c)
			}
			order = append(order, d)
		}
		visit(pkgDir)
	}

	var plan []plannedFunction
	for _, d := range order {
		doc, ok := kptfiles[d]
		if !ok {
			break
		}
		if doc.Pipeline == nil {
			continue
		}
		for _, f := range doc.Pipeline.Mutators {
			plan = append(plan, plannedFunction{pkg: d, fn: resolveImage(ctx, f, opts)})
		}
		for _, f := range doc.Pipeline.Validators {
			plan = append(plan, plannedFunction{pkg: d, validation: true, fn: resolveImage(ctx, f, opts)})
		}
	}
	return plan
}

// resolveImage gives an image without a registry the catalog's prefix, as
// kpt does before it runs the function and records its result.
func resolveImage(ctx context.Context, f kptapi.Function, opts runneroptions.RunnerOptions) kptapi.Function {
	if f.Image != "" && opts.ResolveToImage != nil {
		if img, err := opts.ResolveToImage(ctx, f.Image); err == nil {
			f.Image = img
		}
	}
	return f
}

// isDirectSubpackage tells whether child is a subpackage of parent with no
// other package between them.
func isDirectSubpackage(parent, child string, dirs []string) bool {
	prefix := strings.TrimSuffix(parent, "/") + "/"
	if !strings.HasPrefix(child, prefix) {
		return false
	}
	for _, d := range dirs {
		if d != parent && d != child && strings.HasPrefix(d, prefix) && strings.HasPrefix(child, d+"/") {
			return false
		}
	}
	return true
}

// buildRenderStatus is status.renderStatus as kpt beta.62.1 writes it:
// one step per function that ran (or failed to start), from kpt's results;
// on failure, an error summary naming each failed step. It is nil when no
// function ran.
//
// pipelineErr is the error the failing function's run ended with, when the
// render failed inside a pipeline: a function that failed before kpt
// recorded a result for it gets a step carrying that error.
func buildRenderStatus(plan []plannedFunction, results *fnresult.ResultList, pipelineErr error, failed bool) *renderStatus {
	var items []fnresult.Result
	if results != nil {
		items = results.Items
	}
	var steps []plannedStep
	for i, item := range items {
		if i >= len(plan) {
			break
		}
		steps = append(steps, plannedStep{plannedFunction: plan[i], step: stepFromResult(plan[i].fn, item)})
	}
	unrecorded := len(items) == 0 || items[len(items)-1].ExitCode == 0
	if pipelineErr != nil && unrecorded && len(items) < len(plan) {
		idx := len(items)
		if pipelineErr.Error() == execNotAllowed && !plan[idx].validation {
			// kpt prepares all the mutators of a package before it runs
			// any, and stops at the first exec function.
			for j := idx; j < len(plan) && plan[j].pkg == plan[idx].pkg && !plan[j].validation; j++ {
				if plan[j].fn.Exec != "" {
					idx = j
					break
				}
			}
		}
		f := plan[idx].fn
		steps = append(steps, plannedStep{plannedFunction: plan[idx], step: stepResult{
			Name:           f.Name,
			Image:          f.Image,
			ExecPath:       f.Exec,
			ExitCode:       1,
			ExecutionError: pipelineErr.Error(),
		}})
	}
	if len(steps) == 0 {
		return nil
	}
	rs := &renderStatus{}
	var summary []string
	for _, s := range steps {
		if s.validation {
			rs.ValidationSteps = append(rs.ValidationSteps, s.step)
		} else {
			rs.MutationSteps = append(rs.MutationSteps, s.step)
		}
	}
	if failed {
		for _, group := range [][]stepResult{rs.MutationSteps, rs.ValidationSteps} {
			for _, s := range group {
				switch {
				case s.ExecutionError != "":
					summary = append(summary, fmt.Sprintf("%s: %s", s.displayName(), s.ExecutionError))
				case s.ExitCode != 0:
					summary = append(summary, fmt.Sprintf("%s: exit code %d", s.displayName(), s.ExitCode))
				}
			}
		}
		rs.ErrorSummary = strings.Join(summary, "\n")
	}
	return rs
}

// plannedStep is a step with the function it belongs to.
type plannedStep struct {
	plannedFunction
	step stepResult
}

// stepFromResult is the step of a function kpt recorded a result for.
func stepFromResult(f kptapi.Function, r fnresult.Result) stepResult {
	s := stepResult{
		Name:     f.Name,
		Image:    f.Image,
		ExecPath: f.Exec,
		Stderr:   r.Stderr,
		ExitCode: r.ExitCode,
	}
	for _, fr := range r.Results {
		if fr == nil {
			continue
		}
		item := resultItemFrom(fr)
		s.Results = append(s.Results, item)
		if fr.Severity == framework.Error {
			s.ErrorResults = append(s.ErrorResults, item)
		}
	}
	return s
}

// resultItemFrom reduces a function's structured result to what a Kptfile
// records.
func resultItemFrom(r *framework.Result) resultItem {
	item := resultItem{Message: r.Message, Severity: string(r.Severity)}
	if r.ResourceRef != nil {
		item.ResourceRef = &resourceRef{
			APIVersion: r.ResourceRef.APIVersion,
			Kind:       r.ResourceRef.Kind,
			Name:       r.ResourceRef.Name,
			Namespace:  r.ResourceRef.Namespace,
		}
	}
	if r.Field != nil {
		item.Field = &fieldRef{Path: r.Field.Path}
		if r.Field.CurrentValue != nil {
			item.Field.CurrentValue = fmt.Sprintf("%v", r.Field.CurrentValue)
		}
		if r.Field.ProposedValue != nil {
			item.Field.ProposedValue = fmt.Sprintf("%v", r.Field.ProposedValue)
		}
	}
	if r.File != nil {
		item.File = &fileRef{Path: r.File.Path, Index: r.File.Index}
	}
	return item
}

// hydrationError is, for a render that failed while running the pipelines,
// the error of that stage as kpt beta.62.1 records it in the Rendered
// condition ("pkg.render: pkg /:\n\t..."); nil when the render failed
// before (a Kptfile kpt cannot read, for instance).
func hydrationError(err error) *kpterrors.Error {
	outer, ok := err.(*kpterrors.Error)
	if !ok || outer.Op != opRender {
		return nil
	}
	inner, ok := outer.Err.(*kpterrors.Error)
	if !ok || inner.Op != opPackage {
		return nil
	}
	// kpt leaves out the package of a nested error when it is the same as
	// the outer one's; the condition names it.
	hydrate := *inner
	if hydrate.Path == "" {
		hydrate.Path = outer.Path
	}
	return &hydrate
}

// pipelineError is the error a package's pipeline run failed with (what
// kpt wraps as "pipeline.run"), or nil when the render failed elsewhere.
func pipelineError(err error) error {
	for err != nil {
		e, ok := err.(*kpterrors.Error)
		if !ok {
			return nil
		}
		if e.Op == opPipelineRun {
			return e.Err
		}
		err = e.Err
	}
	return nil
}

// withoutSteps leaves the steps of the images that did not run (a function
// skipped offline) out of a render status: a step records a function that
// ran. nil when no step is left.
func withoutSteps(rs *renderStatus, images []string) *renderStatus {
	if rs == nil || len(images) == 0 {
		return rs
	}
	drop := func(s stepResult) bool { return slices.Contains(images, s.Image) }
	rs.MutationSteps = slices.DeleteFunc(rs.MutationSteps, drop)
	rs.ValidationSteps = slices.DeleteFunc(rs.ValidationSteps, drop)
	if len(rs.MutationSteps) == 0 && len(rs.ValidationSteps) == 0 && rs.ErrorSummary == "" {
		return nil
	}
	return rs
}
