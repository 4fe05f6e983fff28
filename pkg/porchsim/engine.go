package porchsim

import (
	"context"
	"strings"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
)

// engine makes package content the way Porch's engine does: clone,
// upgrade and render, with kpt's own libraries (kptengine).
type engine struct {
	notBuiltin kptengine.NotBuiltinPolicy
}

// renderOutcome is what a render of a package's pipeline gave.
type renderOutcome struct {
	// files are the rendered files; after a failure, the files Porch
	// stores when asked to push anyway (the input, the Kptfile recording
	// the failure).
	files  map[string]string
	status porchv1alpha1.RenderStatus
	failed bool
	// message is what the pipeline said on failure, as Porch words it
	// after "Details: ".
	message string
	// skipped lists the functions not run (not built into Porch).
	skipped []string
}

func (e engine) clone(upstream map[string]string, pkgPath string, deployment bool, lock gitLock) (map[string]string, error) {
	return kptengine.Clone(upstream, kptengine.CloneOptions{PackagePath: pkgPath, Deployment: deployment, Lock: lock.engine()})
}

func (e engine) upgrade(original, updated, local map[string]string, _ string, lock gitLock) (map[string]string, error) {
	return kptengine.Upgrade(original, updated, local, lock.engine())
}

// render runs the package's pipeline. A render that cannot even start (a
// file outside the package) is a failure like any other: Porch refuses
// such an update too.
func (e engine) render(files map[string]string) renderOutcome {
	res, err := kptengine.Render(context.Background(), files, kptengine.RenderOptions{NotBuiltin: e.notBuiltin})
	if err != nil {
		return renderOutcome{files: files, failed: true, message: err.Error()}
	}
	out := renderOutcome{files: res.Files, failed: res.Failed, message: res.Message, skipped: res.Skipped}
	out.status.Result = res.Results
	if res.Failed {
		out.status.Err = res.Message
	}
	return out
}

func (l gitLock) engine() kptengine.GitLock {
	// kptengine (as kpt) appends .git itself.
	return kptengine.GitLock{Repo: strings.TrimSuffix(l.repo, ".git"), Directory: l.directory, Ref: l.ref, Commit: l.commit}
}

// render renders files with the Sim's engine.
func (s *Sim) render(files map[string]string) renderOutcome {
	return s.engine.render(files)
}

// Option configures a Sim.
type Option func(*Sim)

// SkipFunctionsNotBuiltIn makes the Sim render without the functions only
// Porch's function runner can run (any image but set-namespace,
// apply-replacements and starlark at the versions Porch builds in): they
// pass the resources through unchanged and are recorded
// (SkippedFunctions). Without it the Sim is strict, like Porch with no
// function runner reachable: such a function fails the render.
func SkipFunctionsNotBuiltIn() Option {
	return func(s *Sim) { s.engine.notBuiltin = kptengine.SkipNotBuiltin }
}

// SkippedFunctions lists the images of the functions the last render of a
// revision did not run (see SkipFunctionsNotBuiltIn).
func (s *Sim) SkippedFunctions(namespace, name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.objects[resPackageRevisions][objectKey{namespace, name}]; ok {
		return append([]string(nil), e.skipped...)
	}
	return nil
}
