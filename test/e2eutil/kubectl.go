package e2eutil

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// Kubectl runs kubectl as the cluster admin, the way a person would: the
// tests check what kubectl shows (printer columns, apply -k of deploy/), not
// only what the API returns.
type Kubectl struct {
	// Path is the kubectl binary; empty: kubectl on PATH.
	Path string
	// Kubeconfig, when set, is passed as --kubeconfig; empty: kubectl's own
	// default ($KUBECONFIG).
	Kubeconfig string
}

// Run runs kubectl with args and returns its standard output. Standard error
// is not mixed in, so `-o json` output parses even when kubectl warns (it
// does while an aggregated API is unavailable); the error carries both.
func (k Kubectl) Run(args ...string) (string, error) {
	return k.RunInput("", args...)
}

// RunInput is Run with stdin as kubectl's standard input (`apply -f -`).
func (k Kubectl) RunInput(stdin string, args ...string) (string, error) {
	path := k.Path
	if path == "" {
		path = "kubectl"
	}
	full := args
	if k.Kubeconfig != "" {
		full = append([]string{"--kubeconfig", k.Kubeconfig}, args...)
	}
	cmd := exec.Command(path, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}
