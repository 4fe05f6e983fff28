package kptengine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	kptapi "github.com/kptdev/kpt/pkg/api/kptfile/v1"
	"github.com/kptdev/kpt/pkg/fn"
	"github.com/kptdev/kpt/pkg/lib/runneroptions"
	"github.com/kptdev/krm-functions-catalog/functions/go/apply-replacements/replacements"
	setnamespace "github.com/kptdev/krm-functions-catalog/functions/go/set-namespace/transformer"
	"github.com/kptdev/krm-functions-catalog/functions/go/starlark/starlark"
	fnsdk "github.com/kptdev/krm-functions-sdk/go/fn"
)

// builtinFunctions are the functions Porch runs in its own process, by
// image: the goExecutor entries of Porch's FunctionConfigs (set-namespace
// v0.4 and v0.4.5, apply-replacements v0.1 and v0.1.5, starlark v0.5 and
// v0.5.5), each with no prefix and with the catalog's prefix, exactly the
// image strings Porch's function config store maps. Any other image needs
// Porch's function runner.
var builtinFunctions = func() map[string]fnsdk.ResourceListProcessor {
	m := map[string]fnsdk.ResourceListProcessor{}
	add := func(name string, p fnsdk.ResourceListProcessorFunc, tags ...string) {
		for _, tag := range tags {
			image := name + ":" + tag
			m[image] = p
			m[runneroptions.GHCRImagePrefix+image] = p
		}
	}
	add("apply-replacements", replacements.ApplyReplacements, "v0.1", "v0.1.5")
	add("set-namespace", setnamespace.Run, "v0.4", "v0.4.5")
	add("starlark", oneAtATime(starlark.Process), "v0.5", "v0.5.5")
	return m
}()

// oneAtATime runs p for one render at a time. The starlark function sets
// package-level options of the Starlark interpreter (go.starlark.net's
// resolve.AllowSet and others) on every run, which races with another run
// reading them; renders run concurrently outside porchsim's lock.
func oneAtATime(p fnsdk.ResourceListProcessorFunc) fnsdk.ResourceListProcessorFunc {
	var mu sync.Mutex
	return func(rl *fnsdk.ResourceList) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return p(rl)
	}
}

// IsBuiltin tells whether Porch runs the function image itself, without a
// function runner. The image is compared as Porch compares it: exactly, so
// another registry or another tag of the same function is not built in.
// (In a Kptfile pipeline an image without a registry is first given the
// catalog's prefix, as Porch does, before this question is asked.)
func IsBuiltin(image string) bool {
	_, ok := builtinFunctions[image]
	return ok
}

// noFunctionRunner is why a function that is not built in fails under
// FailNotBuiltin; Porch says why its function runner could not be reached
// at the same place of the message.
const noFunctionRunner = "no function runner: only Porch's built-in functions (set-namespace, apply-replacements, starlark) can run"

// functionRuntime gives kpt's renderer a runner for each function of a
// pipeline, as Porch's runtime does: the built-in functions run in process,
// any other image is refused or skipped according to the policy.
type functionRuntime struct {
	// builtins are the functions that run in process, by image.
	builtins map[string]fnsdk.ResourceListProcessor
	policy   NotBuiltinPolicy

	mu      sync.Mutex
	skipped []string
}

var _ fn.FunctionRuntime = &functionRuntime{}

// GetRunner implements fn.FunctionRuntime.
func (rt *functionRuntime) GetRunner(_ context.Context, f *kptapi.Function) (fn.FunctionRunner, error) {
	if p, ok := rt.builtins[f.Image]; ok {
		return &builtinRunner{processor: p}, nil
	}
	if rt.policy == SkipNotBuiltin {
		return &skippingRunner{runtime: rt, image: f.Image}, nil
	}
	return &unavailableRunner{image: f.Image}, nil
}

// skippedImages returns the images skipped so far, each once, in the order
// they were first skipped.
func (rt *functionRuntime) skippedImages() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.skipped...)
}

func (rt *functionRuntime) recordSkipped(image string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !slices.Contains(rt.skipped, image) {
		rt.skipped = append(rt.skipped, image)
	}
}

// builtinRunner runs a catalog function in process, as Porch's builtin
// runtime does.
type builtinRunner struct {
	processor fnsdk.ResourceListProcessor
}

// Run implements fn.FunctionRunner. Catalog functions panic on some bad
// input; like Porch, the panic becomes the function's error.
func (r *builtinRunner) Run(in io.Reader, out io.Writer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("KRM function panicked with: %v", p)
		}
	}()
	return fnsdk.Execute(r.processor, in, out)
}

// unavailableRunner is a function Porch would hand to its function runner,
// where there is none: it fails the way a Porch whose function runner
// cannot be reached fails it.
type unavailableRunner struct {
	image string
}

// Run implements fn.FunctionRunner.
func (r *unavailableRunner) Run(io.Reader, io.Writer) error {
	return fmt.Errorf("func eval %q failed: %s", r.image, noFunctionRunner)
}

// skippingRunner stands for a function that cannot run here: the resources
// pass through unchanged and the image is recorded as skipped.
type skippingRunner struct {
	runtime *functionRuntime
	image   string
}

// Run implements fn.FunctionRunner.
func (r *skippingRunner) Run(in io.Reader, out io.Writer) error {
	r.runtime.recordSkipped(r.image)
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("pass resources through skipped function %q: %w", r.image, err)
	}
	return nil
}
