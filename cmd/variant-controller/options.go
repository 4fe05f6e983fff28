package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
)

// knownReconcilers are the names accepted by --reconcilers, each with the
// environment variable that enables it when the flag is not given.
var knownReconcilers = map[string]string{
	packagevariant.ControllerName:    "ENABLE_PACKAGEVARIANTS",
	packagevariantset.ControllerName: "ENABLE_PACKAGEVARIANTSETS",
}

// options are the command-line settings of the controller manager.
type options struct {
	reconcilers      string
	kubeconfig       string
	namespace        string
	workers          int
	qps              float32
	burst            int
	resyncPeriod     time.Duration
	leaderElect      bool
	leaderNamespace  string
	leaderID         string
	leaseDuration    time.Duration
	renewDeadline    time.Duration
	retryPeriod      time.Duration
	healthAddr       string
	metricsAddr      string
	metricsSecure    bool
	metricsCertDir   string
	shutdownDeadline time.Duration
	defaultAccount   string
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.reconcilers, "reconcilers", "",
		"Comma-separated control loops to run: packagevariants, packagevariantsets, or * for all. "+
			"When not given, ENABLE_PACKAGEVARIANTS and ENABLE_PACKAGEVARIANTSETS (true, 1 or yes) decide.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig file. Empty: the in-cluster configuration.")
	fs.StringVar(&o.namespace, "namespace", "", "Watch only this namespace. Empty: all namespaces.")
	fs.IntVar(&o.workers, "workers", 4, "Concurrent syncs per control loop.")
	fs.Float32Var(&o.qps, "kube-api-qps", 50, "Sustained queries per second to the API server (client-side rate limit).")
	fs.IntVar(&o.burst, "kube-api-burst", 100, "Burst of queries allowed above --kube-api-qps.")
	fs.DurationVar(&o.resyncPeriod, "resync-period", time.Hour,
		"How often every object is queued again even without changes (0 disables). An up-to-date variant costs no API call.")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "Run the control loops only while holding a coordination.k8s.io Lease, so replicas never write concurrently.")
	fs.StringVar(&o.leaderNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease. Empty: the namespace the pod runs in.")
	fs.StringVar(&o.leaderID, "leader-election-id", "variant-controller", "Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second, "How long standby replicas wait before taking over a Lease that is not renewed.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps retrying to renew before giving up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second, "How often replicas try to acquire or renew the Lease.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address serving /healthz and /readyz (ready once the informer caches have synced). Empty disables.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address serving Prometheus /metrics (HTTPS unless --metrics-secure=false). Empty disables.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve /metrics over HTTPS to Kubernetes users allowed to get it (bearer token checked with a TokenReview, permission with a SubjectAccessReview). "+
			"false: plain HTTP to anyone who reaches the port, for local development only.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory holding tls.crt and tls.key for /metrics (a mounted kubernetes.io/tls Secret), read again when they change. Empty: a self-signed certificate made at start.")
	fs.StringVar(&o.defaultAccount, "default-service-account", "",
		"ServiceAccount, in each variant's namespace, whose permissions bound what a variant (or a set's target) that names no spec.serviceAccountName may inject or select. "+
			"Empty: those reads use the controller's own permissions (any object of the kinds its RBAC grants, in any namespace it watches).")
	fs.DurationVar(&o.shutdownDeadline, "shutdown-grace-period", 25*time.Second,
		"On SIGTERM, how long syncs in progress may run before the process exits anyway.")
}

func (o *options) validate() error {
	var errs []string
	if o.workers < 1 {
		errs = append(errs, fmt.Sprintf("--workers must be at least 1, got %d", o.workers))
	}
	if o.qps <= 0 {
		errs = append(errs, fmt.Sprintf("--kube-api-qps must be positive, got %v", o.qps))
	}
	if o.burst < 1 {
		errs = append(errs, fmt.Sprintf("--kube-api-burst must be at least 1, got %d", o.burst))
	}
	if o.resyncPeriod < 0 {
		errs = append(errs, fmt.Sprintf("--resync-period must not be negative, got %s", o.resyncPeriod))
	}
	if o.shutdownDeadline < 0 {
		errs = append(errs, fmt.Sprintf("--shutdown-grace-period must not be negative, got %s", o.shutdownDeadline))
	}
	if o.leaderElect {
		errs = append(errs, o.leaseTimingErrors()...)
	}
	if a := o.defaultAccount; a != "" {
		for _, msg := range validation.IsDNS1123Subdomain(a) {
			errs = append(errs, fmt.Sprintf("--default-service-account %q is not a ServiceAccount name: %s", a, msg))
		}
	}
	if o.metricsCertDir != "" && !o.metricsSecure {
		errs = append(errs, fmt.Sprintf("--metrics-cert-dir (%s) is for HTTPS, but --metrics-secure=false serves plain HTTP; drop one of them", o.metricsCertDir))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// leaseTimingErrors are client-go's rules for the leader election's
// durations, in the flags' names: the lease outlasts the renew deadline,
// which outlasts a retry period and its jitter, which is above 0.
func (o *options) leaseTimingErrors() []string {
	var errs []string
	if o.retryPeriod <= 0 {
		errs = append(errs, fmt.Sprintf("--leader-election-retry-period must be positive, got %s", o.retryPeriod))
	}
	if o.leaseDuration <= o.renewDeadline {
		errs = append(errs, fmt.Sprintf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s)", o.leaseDuration, o.renewDeadline))
	}
	if withJitter := time.Duration(leaderelection.JitterFactor * float64(o.retryPeriod)); o.retryPeriod > 0 && o.renewDeadline <= withJitter {
		errs = append(errs, fmt.Sprintf("--leader-election-renew-deadline (%s) must be longer than --leader-election-retry-period (%s) times %.1f, client-go's jitter: %s",
			o.renewDeadline, o.retryPeriod, leaderelection.JitterFactor, withJitter))
	}
	return errs
}

// enabledReconcilers decides which control loops run. The flag wins when it
// was given (flagSet); otherwise each loop's environment variable decides.
// Unknown names and unreadable values are errors naming what is accepted.
func enabledReconcilers(flagValue string, flagSet bool, getenv func(string) string) ([]string, error) {
	valid := validReconcilerNames()
	enabled := map[string]bool{}
	if flagSet {
		for _, name := range strings.Split(flagValue, ",") {
			name = strings.TrimSpace(name)
			switch {
			case name == "":
				continue
			case name == "*":
				for n := range knownReconcilers {
					enabled[n] = true
				}
			case knownReconcilers[name] != "":
				enabled[name] = true
			default:
				return nil, fmt.Errorf("--reconcilers: unknown reconciler %q; valid names are %s, or * for all", name, strings.Join(valid, ", "))
			}
		}
		if len(enabled) == 0 {
			return nil, fmt.Errorf("--reconcilers is empty; give %s, or * for all", strings.Join(valid, ", "))
		}
	} else {
		for name, env := range knownReconcilers {
			raw := getenv(env)
			on, err := parseBoolEnv(raw)
			if err != nil {
				return nil, fmt.Errorf("%s=%q: %w", env, raw, err)
			}
			if on {
				enabled[name] = true
			}
		}
		if len(enabled) == 0 {
			return nil, fmt.Errorf("no reconciler enabled: pass --reconcilers=%s (or *), or set %s",
				strings.Join(valid, ","), strings.Join(envNames(), " or ")+" to true")
		}
	}
	var out []string
	for n := range enabled {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func parseBoolEnv(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "y", "on":
		return true, nil
	case "", "false", "0", "no", "n", "off":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean; use true, 1 or yes to enable, false, 0 or no to disable")
}

func validReconcilerNames() []string {
	var names []string
	for n := range knownReconcilers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func envNames() []string {
	var names []string
	for _, n := range validReconcilerNames() {
		names = append(names, knownReconcilers[n])
	}
	return names
}

// podNamespace is the namespace the process runs in, from POD_NAMESPACE or
// the service account mount; empty outside a cluster.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}
