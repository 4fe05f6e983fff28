// Command variant-controller runs the PackageVariant and PackageVariantSet
// controllers against a Kubernetes API server with Porch installed.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/cmd/internal/cliflags"
	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/controllers"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/porchwatch"
	versioned "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/scheme"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/metrics"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // could not run or stopped abnormally
	exitUsage = 2 // bad flags or environment
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	klog.Flush()
	os.Exit(code)
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var o options
	fs := pflag.NewFlagSet("variant-controller", pflag.ContinueOnError)
	o.addFlags(fs)
	if code, stop := cliflags.Parse(fs, "variant-controller runs the PackageVariant and PackageVariantSet controllers for Porch.", args, stdout, stderr); stop {
		return code
	}
	enabled, err := enabledReconcilers(o.reconcilers, fs.Changed("reconcilers"), getenv)
	if err != nil {
		fmt.Fprintf(stderr, "variant-controller: %v\n", err)
		return exitUsage
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "variant-controller: %v\n", err)
		return exitUsage
	}
	if o.leaderElect && o.leaderNamespace == "" {
		if o.leaderNamespace = podNamespace(); o.leaderNamespace == "" {
			fmt.Fprintln(stderr, "variant-controller: --leader-election-namespace is required outside a pod (or pass --leader-elect=false)")
			return exitUsage
		}
	}

	logger := klog.FromContext(ctx).WithName("variant-controller")
	ctx = klog.NewContext(ctx, logger)
	if err := runManager(ctx, &o, enabled); err != nil {
		fmt.Fprintf(stderr, "variant-controller: %v\n", err)
		return exitError
	}
	return exitOK
}

func restConfig(o *options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		if o.kubeconfig == "" {
			return nil, fmt.Errorf("load in-cluster configuration (outside a cluster, pass --kubeconfig): %w", err)
		}
		return nil, fmt.Errorf("load kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.QPS = o.qps
	cfg.Burst = o.burst
	cfg.UserAgent = "variant-controller"
	return cfg, nil
}

// runManager builds the clients, informers and controllers, then runs the
// controllers (under leader election when enabled) until ctx is cancelled.
func runManager(ctx context.Context, o *options, enabled []string) error {
	logger := klog.FromContext(ctx)
	cfg, err := restConfig(o)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create Kubernetes client: %w", err)
	}
	m := metrics.New()
	m.RegisterClientMetrics()

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(4)
	// Events stop with the other writes when the Lease is lost.
	fence := &writeFence{}
	broadcaster.StartRecordingToSink(fencedSink{EventSink: &typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")}, fence: fence})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "variant-controller"})

	informerCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	factory, built, err := buildControllers(ctx, informerCtx, o, cfg, kube, controllers.Dependencies{Recorder: recorder, Metrics: m}, enabled)
	if err != nil {
		return err
	}

	var watchdog *leaderelection.HealthzAdaptor
	if o.leaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(o.renewDeadline / 2)
	}
	if err := serveEndpoints(ctx, o, kube, m, watchdog, built); err != nil {
		return err
	}

	// Informers start before (and whatever the outcome of) leader election,
	// so a standby replica is ready and takes over with a warm cache. They
	// stop when runManager returns, whatever the reason (a lost Lease
	// returns while the process context is still live).
	factory.Start(informerCtx.Done())
	defer factory.Shutdown()
	defer stopInformers()

	runAll := func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, b := range built {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.Controller.Run(ctx, o.workers); err != nil {
					logger.Error(err, "Controller stopped")
				}
			}()
		}
		wg.Wait()
	}

	if !o.leaderElect {
		logger.Info("Running without leader election", "reconcilers", enabled)
		return waitWithGrace(ctx, o.shutdownDeadline, runAll)
	}
	e, err := newElection(o, kube, recorder)
	if err != nil {
		return err
	}
	e.watchdog, e.fence = watchdog, fence
	return runLeading(ctx, e, runAll)
}

// buildControllers builds the Porch and config informers and the enabled
// controllers on them; deps brings the recorder and metrics. Informers for
// injected and selected kinds run until informerCtx ends.
func buildControllers(ctx, informerCtx context.Context, o *options, cfg *rest.Config, kube kubernetes.Interface, deps controllers.Dependencies, enabled []string) (informers.SharedInformerFactory, []controllers.Built, error) {
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("create Porch and config clients: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("create dynamic client for config injection: %w", err)
	}
	// Informers list PackageRevisions again after every broken watch: Porch
	// cannot report what was deleted meanwhile (see porchwatch).
	factory := informers.NewSharedInformerFactoryWithOptions(porchwatch.RelistOnResume(client), o.resyncPeriod, informers.WithNamespace(o.namespace))
	// One informer per kind named by injection points and objectSelectors,
	// started on first use and shared by both controllers.
	// Discovery is cached and refreshed when a kind is not known (a CRD
	// installed later).
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	deps.Client = client
	deps.Informers = controllers.InformersOf(factory)
	deps.Objects = ondemand.New(informerCtx, ondemand.Options{
		Dynamic:      dyn,
		Mapper:       mapper,
		Namespace:    o.namespace,
		ResyncPeriod: o.resyncPeriod,
	})
	deps.Access = access.New(access.Options{
		Reviews:               kube.AuthorizationV1().SubjectAccessReviews(),
		Mapper:                mapper,
		DefaultServiceAccount: o.defaultAccount,
	})
	built, err := controllers.Build(ctx, deps, controllers.Options{Enabled: enabled})
	if err != nil {
		return nil, nil, err
	}
	return factory, built, nil
}

// serveEndpoints starts the health probes (liveness follows the Lease's
// watchdog when there is one; readiness the controllers' caches) and the
// metrics endpoint, each when its address is set.
func serveEndpoints(ctx context.Context, o *options, kube kubernetes.Interface, m *metrics.Metrics, watchdog *leaderelection.HealthzAdaptor, built []controllers.Built) error {
	if o.healthAddr != "" {
		var checks []readyCheck
		for _, b := range built {
			checks = append(checks, readyCheck{name: b.Name, ready: b.Controller.HasSynced})
		}
		var alive func(*http.Request) error
		if watchdog != nil {
			alive = watchdog.Check
		}
		if err := serve(ctx, "health probes", o.healthAddr, healthMux(alive, checks), nil); err != nil {
			return err
		}
	}
	if o.metricsAddr != "" {
		ms, err := newMetricsServer(ctx, o, kube, m.Registry)
		if err != nil {
			return err
		}
		if err := serve(ctx, "metrics", o.metricsAddr, ms.handler, ms.tls); err != nil {
			return err
		}
	}
	return nil
}

// newElection is the Lease this replica competes for, under a unique
// identity (host name and a UUID).
func newElection(o *options, kube kubernetes.Interface, recorder record.EventRecorder) (election, error) {
	id, err := os.Hostname()
	if err != nil {
		return election{}, fmt.Errorf("get hostname for the leader election identity: %w", err)
	}
	id = id + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.leaderNamespace, o.leaderID,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		return election{}, fmt.Errorf("create leader election lock: %w", err)
	}
	return election{
		lock: lock, id: id, name: o.leaderID,
		lease: o.leaseDuration, renew: o.renewDeadline, retry: o.retryPeriod,
		grace: o.shutdownDeadline,
	}, nil
}

// waitWithGrace runs fn(ctx) and returns when it has returned, or when ctx
// has been cancelled for longer than grace.
func waitWithGrace(ctx context.Context, grace time.Duration, fn func(context.Context)) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-done:
		return nil
	case <-time.After(grace):
		return fmt.Errorf("syncs still running %s after shutdown began; exiting anyway", grace)
	}
}
