package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/porch-variants/variant-controller/cmd/variantctl/internal/live"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// fleet is the live fleet a diff starts from, read from a cluster or a
// snapshot.
type fleet struct {
	input *input.Input
	// objects serves the cluster's in-cluster objects (nil for a
	// snapshot, which holds them in input).
	objects offline.ClusterObjects
	// namespace is for objects of the change that name none.
	namespace string
	// requests counts what was sent to the cluster (nil for a snapshot).
	requests *live.Requests
}

// report prints what reading the fleet cost.
func (f *fleet) report(stderr io.Writer, stats *fleetdiff.Stats, start time.Time) {
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	source := "read from the snapshot"
	if f.requests != nil {
		source = fmt.Sprintf("%d requests to the cluster", f.requests.Sent())
	}
	fmt.Fprintf(stderr, "read %d PackageVariantSets, %d PackageVariants, %d PackageRevisions and the files of %d (%s) in %s; peak heap %d MiB\n",
		len(f.input.Sets), len(f.input.Variants), len(f.input.Revisions), len(stats.FilesRead), source,
		time.Since(start).Round(time.Millisecond), mem.HeapSys>>20)
}

// readSnapshot reads a saved fleet, printing notes on stderr.
func readSnapshot(paths []string, ns string, stderr io.Writer) (*fleet, error) {
	in, err := input.ReadSnapshot(paths)
	for _, n := range in.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if err != nil {
		return nil, err
	}
	if ns == "" {
		if ns, err = in.Namespace(""); err != nil {
			ns = input.DefaultNamespace
		}
	}
	return &fleet{input: in, namespace: ns}, nil
}

// readCluster reads the fleet in the namespaces the change names, and in
// ns (the namespace of objects that name none, else the kubeconfig
// context's) when upgrading is set (diff --package publishes the new
// revisions there), through a client that cannot write.
func readCluster(ctx context.Context, flags *genericclioptions.ConfigFlags, change *input.Input, ns string, upgrading bool) (*fleet, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot use the kubeconfig: %w", err)
	}
	if ns == "" {
		if ns, _, err = flags.ToRawKubeConfigLoader().Namespace(); err != nil || ns == "" {
			ns = input.DefaultNamespace
		}
	}
	// client-go's default of 5 requests a second would make a change
	// touching a thousand packages wait minutes for its reads; kubectl
	// allows 50.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	f := &fleet{namespace: ns, requests: &live.Requests{}}
	readOnly := live.ReadOnlyConfig(cfg, f.requests)
	client, err := versioned.NewForConfig(readOnly)
	if err != nil {
		return nil, err
	}
	namespaces := change.Namespaces(ns)
	if upgrading && !slices.Contains(namespaces, ns) {
		namespaces = append(namespaces, ns)
	}
	if f.input, err = live.ReadFleet(ctx, client, namespaces); err != nil {
		return nil, err
	}
	objects, err := live.NewObjects(readOnly, namespaces)
	if err != nil {
		return nil, err
	}
	f.objects = objects
	return f, nil
}
