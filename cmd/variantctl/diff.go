package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
)

// diff exit statuses, as kubectl diff's: 0 no difference, 1 differences,
// 2 an error (exitBadInput).
const exitDifferent = 1

func diff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	var from stringList
	fs.Var(&from, "from", "read the fleet from a saved snapshot (kubectl get ... -o yaml; a file or directory, repeatable) instead of a cluster")
	kubeconfig := fs.String("kubeconfig", "", "path to the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
	kubeContext := fs.String("context", "", "the kubeconfig context to use (default: its current context)")
	fs.StringVar(&c.namespace, "n", "", "same as --namespace")
	del := fs.Bool("delete", false, "show what deleting the objects of the files would do, instead of applying them")
	output := fs.String("o", "", "output format: yaml or json (default: text for people)")
	showInjected := fs.Bool("show-injected", false, "show the values injected from in-cluster objects (ConfigMap data, other kinds' spec) in the files' diffs; by default they are masked as *** (*** (before) / *** (after) when they changed), as kubectl diff masks Secrets, so a CI log does not print the cluster's configuration")
	if code, ok := parse(fs, &c, args, stderr); !ok {
		return code
	}
	switch *output {
	case "", "text", "yaml", "json":
	default:
		fmt.Fprintf(stderr, "variantctl diff: -o %q is not an output format; want yaml or json\n", *output)
		return exitBadInput
	}
	change, ok := readInput("diff", c.files, stderr)
	if !ok {
		return exitBadInput
	}
	if len(change.Variants) == 0 && len(change.Sets) == 0 && len(change.Repositories) == 0 && len(change.Objects) == 0 {
		fmt.Fprintln(stderr, "variantctl diff: the files hold no PackageVariantSet, PackageVariant, Repository or in-cluster object; nothing to diff")
		return exitBadInput
	}
	if !*del && !checkSpecs(change, stderr, stderr) {
		return exitBadInput
	}

	start := time.Now()
	var live *offline.Input
	var liveObjects *offline.LiveObjects
	var requests offline.Requests
	ns := c.namespace
	var err error
	if len(from) > 0 {
		if *kubeconfig != "" || *kubeContext != "" {
			fmt.Fprintln(stderr, "variantctl diff: --from reads a snapshot, not a cluster; drop --kubeconfig and --context")
			return exitBadInput
		}
		live, err = offline.ReadSnapshot(from)
		for _, n := range live.Notes {
			fmt.Fprintf(stderr, "note: %s\n", n)
		}
		if err != nil {
			printInputError("diff", err, stderr)
			return exitBadInput
		}
		if ns == "" {
			if ns, err = live.Namespace(""); err != nil {
				ns = offline.DefaultNamespace
			}
		}
	} else {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = *kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *kubeContext})
		cfg, err := cc.ClientConfig()
		if err != nil {
			fmt.Fprintf(stderr, "variantctl diff: cannot use the kubeconfig: %v\n", err)
			return exitBadInput
		}
		if ns == "" {
			if ns, _, err = cc.Namespace(); err != nil || ns == "" {
				ns = offline.DefaultNamespace
			}
		}
		// client-go's default of 5 requests a second would make a change
		// touching a thousand packages wait minutes for its reads; kubectl
		// allows 50.
		if cfg.QPS == 0 {
			cfg.QPS, cfg.Burst = 50, 100
		}
		readOnly := offline.ReadOnlyConfig(cfg, &requests)
		client, err := versioned.NewForConfig(readOnly)
		if err != nil {
			fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
			return exitBadInput
		}
		namespaces := namespacesOf(change, ns)
		live, err = offline.ReadCluster(ctx, client, namespaces)
		if err != nil {
			fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
			return exitBadInput
		}
		if liveObjects, err = offline.NewLiveObjects(readOnly, namespaces); err != nil {
			fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
			return exitBadInput
		}
	}

	d, stats, err := offline.Diff(ctx, live, change, offline.DiffOptions{Namespace: ns, Delete: *del, Timeout: c.timeout, Live: liveObjects, ShowInjected: *showInjected})
	if err != nil {
		var inputErrs offline.InputErrors
		if errors.As(err, &inputErrs) {
			printInputError("diff", err, stderr)
		} else {
			fmt.Fprintf(stderr, "variantctl diff: %v\n", err)
		}
		return exitBadInput
	}
	switch *output {
	case "yaml":
		err = d.WriteYAML(stdout)
	case "json":
		err = d.WriteJSON(stdout)
	default:
		err = d.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "variantctl diff: write the output: %v\n", err)
		return exitBadInput
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	source := fmt.Sprintf("%d requests to the cluster", requests.Sent())
	if len(from) > 0 {
		source = "read from the snapshot"
	}
	fmt.Fprintf(stderr, "read %d PackageVariantSets, %d PackageVariants, %d PackageRevisions and the files of %d (%s) in %s; peak heap %d MiB\n",
		len(live.Sets), len(live.Variants), len(live.Revisions), len(stats.FilesRead), source,
		time.Since(start).Round(time.Millisecond), mem.HeapSys>>20)
	if d.NotSettled != "" {
		fmt.Fprintf(stderr, "variantctl diff: the controllers did not settle: %s; the difference is incomplete\n", d.NotSettled)
		return exitBadInput
	}
	if d.Empty() {
		return exitOK
	}
	return exitDifferent
}

// namespacesOf are the namespaces the change touches, sorted.
func namespacesOf(in *offline.Input, ns string) []string {
	seen := map[string]bool{}
	add := func(n string) {
		if n == "" {
			n = ns
		}
		seen[n] = true
	}
	for _, o := range in.Sets {
		add(o.Obj.Namespace)
	}
	for _, o := range in.Variants {
		add(o.Obj.Namespace)
	}
	for _, o := range in.Repositories {
		add(o.Obj.Namespace)
	}
	for _, o := range in.Objects {
		add(o.Obj.GetNamespace())
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
