// Command porchsim-apiserver serves an in-memory Porch (pkg/porchsim) as a
// Kubernetes aggregated API server for porch.kpt.dev/v1alpha1
// packagerevisions and packagerevisionresources. With an APIService for
// v1alpha1.porch.kpt.dev pointing at it (hack/e2e/porch-apiservice.yaml), a
// kube-apiserver serves Porch's API from the Sim, with Porch's rules: the
// controllers and kubectl talk to it as they would to Porch.
//
// It mirrors the cluster's Repositories into the Sim and delegates
// authentication and authorization to the cluster. With --standalone it
// serves anyone without a cluster, for tests and local use.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/cmd/internal/cliflags"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // could not start or stopped abnormally
	exitUsage = 2 // bad flags
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	klog.Flush()
	os.Exit(code)
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := newOptions()
	fs := pflag.NewFlagSet("porchsim-apiserver", pflag.ContinueOnError)
	o.addFlags(fs)
	if code, stop := cliflags.Parse(fs, "porchsim-apiserver serves an in-memory Porch as the porch.kpt.dev aggregated API.", args, stdout, stderr); stop {
		return code
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "porchsim-apiserver: %v\n", err)
		return exitUsage
	}

	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("porchsim-apiserver"))
	if err := serve(ctx, o); err != nil {
		fmt.Fprintf(stderr, "porchsim-apiserver: %v\n", err)
		return exitError
	}
	return exitOK
}

// serve fills a Sim (Repositories, then packages) and serves it until ctx
// is cancelled.
func serve(ctx context.Context, o *options) error {
	sim := porchsim.New()
	// Real Porch can lose one of two overlapping writes into a repository;
	// a client that makes them is broken. Say so where its author looks.
	sim.OnOverlap(func(ov porchsim.Overlap) {
		klog.FromContext(ctx).Error(nil, "Overlapping writes into one repository; real Porch can lose one of them",
			"overlap", ov.String())
	})
	if o.repositoriesFrom != "" {
		repos, err := readRepositories(o.repositoriesFrom)
		if err != nil {
			return err
		}
		for _, r := range repos {
			sim.AddRepository(r.Namespace, r.Name, r.Spec.Deployment, r.Labels)
		}
	}
	cfg, err := o.server.Config(sim)
	if err != nil {
		return err
	}
	srv, err := cfg.New()
	if err != nil {
		return err
	}
	// Packages go into Repositories, which may come from the cluster.
	if err := srv.SyncRepositories(ctx); err != nil {
		return err
	}
	if err := addPackages(sim, o.packageNamespace, o.packages); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Serving", "revisions", len(sim.PackageRevisions("")))
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// The generic API server's graceful shutdown waits up to its request
	// timeout (60s) for open connections, and a watch proxied by the
	// kube-apiserver keeps one open: an in-memory Porch has nothing to
	// save, so it gives in-flight requests a short grace and exits.
	select {
	case err := <-done:
		return err
	case <-time.After(shutdownGrace):
		klog.FromContext(ctx).Info("Exiting with connections still open (watches)", "after", shutdownGrace)
		return nil
	}
}

// shutdownGrace is how long in-flight requests get once asked to stop.
const shutdownGrace = 5 * time.Second
