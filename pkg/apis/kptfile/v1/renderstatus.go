package v1

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// RenderStatusOf reads status.renderStatus from a Kptfile's text: nil when
// the Kptfile has none or does not parse.
func RenderStatusOf(kptfile string) *RenderStatus {
	var kf KptFile
	if err := yaml.Unmarshal([]byte(kptfile), &kf); err != nil || kf.Status == nil {
		return nil
	}
	return kf.Status.RenderStatus
}

// Steps are the functions that ran, mutators then validators, each as a
// function result.
func (s *RenderStatus) Steps() []Result {
	if s == nil {
		return nil
	}
	var out []Result
	for _, step := range append(append([]PipelineStepResult{}, s.MutationSteps...), s.ValidationSteps...) {
		out = append(out, Result{Image: step.Image, ExecPath: step.ExecPath, Stderr: step.Stderr, ExitCode: step.ExitCode, Results: step.Results})
	}
	return out
}

// Failures names each function that failed and what it said, one line
// each: "name (image): message" (the image alone for a function without a
// name). What it said is its error results, else why it could not run,
// else its standard error, else its exit code.
func (s *RenderStatus) Failures() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, step := range append(append([]PipelineStepResult{}, s.MutationSteps...), s.ValidationSteps...) {
		if step.ExitCode == 0 && step.ExecutionError == "" {
			continue
		}
		who := step.Name
		if img := step.Image + step.ExecPath; who == "" {
			who = img
		} else if img != "" {
			who += " (" + img + ")"
		}
		var said []string
		for _, r := range step.ErrorResults {
			said = append(said, r.Message)
		}
		if step.ExecutionError != "" {
			said = append(said, step.ExecutionError)
		}
		if len(said) == 0 && step.Stderr != "" {
			said = append(said, strings.TrimSpace(step.Stderr))
		}
		if len(said) == 0 {
			said = append(said, fmt.Sprintf("exit code %d", step.ExitCode))
		}
		out = append(out, fmt.Sprintf("%s: %s", who, strings.Join(said, "; ")))
	}
	return out
}
