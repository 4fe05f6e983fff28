package offline

import (
	"context"
	"fmt"
	"time"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// DefaultTimeout bounds a run: how long the controllers may take to
// settle.
const DefaultTimeout = 60 * time.Second

// RunOptions tune Run.
type RunOptions struct {
	// Namespace for objects that name none (see Input.Namespace).
	Namespace string
	// Timeout bounds the wait for the controllers to settle; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// SetsOnly runs only the PackageVariantSet controller.
	SetsOnly bool
}

// Run loads the input into a fresh Sim, runs the controllers until they
// settle and returns what they did. A settle timeout is not an error: the
// outcome is returned with Settled set to the reason, so a person sees how
// far things got. Errors in the input are Errors.
func Run(ctx context.Context, in *input.Input, opts RunOptions) (*Outcome, error) {
	ns, err := in.Namespace(opts.Namespace)
	if err != nil {
		return nil, input.Errors{{Msg: err.Error()}}
	}
	// Offline there is no function runner: functions Porch runs built in
	// run, any other is skipped and reported (Outcome.Revisions[].NotRun).
	sim := porchsim.New(porchsim.SkipFunctionsNotBuiltIn())
	if err := in.Load(ctx, sim, ns); err != nil {
		return nil, err
	}
	before, err := TakeSnapshot(ctx, sim)
	if err != nil {
		return nil, err
	}
	runner, err := Start(ctx, sim, Options{Objects: in.ObjectList(), SetsOnly: opts.SetsOnly})
	if err != nil {
		return nil, input.Errors{{Msg: err.Error()}}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	settleErr := runner.WaitIdle(ctx, timeout)
	runner.Stop()
	out, err := Collect(ctx, sim, before, runner.Events())
	if err != nil {
		return nil, fmt.Errorf("read the outcome: %w", err)
	}
	if settleErr != nil {
		out.Settled = settleErr.Error()
	}
	return out, nil
}
