package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// readyCheck reports whether one part of the manager is ready.
type readyCheck struct {
	name  string
	ready func() bool
}

// healthMux serves /healthz and /readyz.
//
// /healthz fails only when the process should be restarted: alive returns an
// error (the leader election watchdog, when this replica leads but has not
// renewed its Lease in time).
//
// /readyz answers 200 once every check is ready (the informer caches have
// synced); a standby replica with warm caches is ready, so a rollout does not
// wait for leadership.
func healthMux(alive func(*http.Request) error, checks []readyCheck) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if alive != nil {
			if err := alive(r); err != nil {
				http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		var notReady []string
		for _, c := range checks {
			if !c.ready() {
				notReady = append(notReady, c.name)
			}
		}
		if len(notReady) > 0 {
			sort.Strings(notReady)
			http.Error(w, "not ready: informer caches not yet synced for "+strings.Join(notReady, ", "), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// metricsMux serves the registry's metrics on /metrics.
func metricsMux(reg *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(metricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// metricsServer is what serves /metrics: the handler and, unless
// --metrics-secure=false, its TLS configuration.
type metricsServer struct {
	handler http.Handler
	tls     *tls.Config // nil: plain HTTP
}

// newMetricsServer serves reg's metrics as o says: over HTTPS to the users
// kube's API server says may get /metrics (delegatedAuth), or, with
// --metrics-secure=false, over plain HTTP to anyone, with a warning in the
// log.
func newMetricsServer(ctx context.Context, o *options, kube kubernetes.Interface, reg *prometheus.Registry) (*metricsServer, error) {
	if !o.metricsSecure {
		klog.FromContext(ctx).Info("WARNING: serving /metrics over plain HTTP without authentication or authorization (--metrics-secure=false): "+
			"anyone who reaches the port reads the metrics; use it for local development only", "address", o.metricsAddr)
		return &metricsServer{handler: metricsMux(reg)}, nil
	}
	tlsConfig, err := metricsTLSConfig(ctx, o.metricsCertDir)
	if err != nil {
		return nil, err
	}
	auth, err := newDelegatedAuth(kube)
	if err != nil {
		return nil, err
	}
	return &metricsServer{handler: auth.wrap(metricsMux(reg)), tls: tlsConfig}, nil
}

// serve listens on addr before returning, so a port already in use is
// reported at startup, then serves until ctx is cancelled, over TLS when
// tlsConfig is set.
func serve(ctx context.Context, what, addr string, handler http.Handler, tlsConfig *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for %s on %s: %w", what, addr, err)
	}
	serveOn(ctx, what, ln, handler, tlsConfig)
	return nil
}

// serveOn serves on ln until ctx is cancelled.
func serveOn(ctx context.Context, what string, ln net.Listener, handler http.Handler, tlsConfig *tls.Config) {
	scheme := "http"
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
		scheme = "https"
	}
	logger := klog.FromContext(ctx)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests carry ctx's logger; one in progress at shutdown is
		// not cut off (Shutdown waits for it).
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	go func() {
		logger.Info("Serving", "what", what, "address", ln.Addr().String(), "scheme", scheme)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Server stopped", "what", what)
		}
	}()
}
