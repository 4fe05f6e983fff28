// Package metrics holds the Prometheus metrics of the controllers: the
// client-go workqueue metrics, client-go request metrics, and per-controller
// sync counters and durations. Everything is registered on one Registry so
// the binary, tests and variantctl can each have their own.
package metrics

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// Namespace prefixes every metric of this project.
const Namespace = "variant_controller"

// Sync results, the values of the "result" label of the sync metrics.
const (
	// ResultSuccess: the sync finished and the key was forgotten.
	ResultSuccess = "success"
	// ResultConflict: an optimistic-concurrency conflict; requeued silently.
	ResultConflict = "conflict"
	// ResultError: any other error; requeued with backoff.
	ResultError = "error"
)

// Metrics is the set of collectors of one controller manager.
type Metrics struct {
	// Registry holds every collector below plus the Go and process collectors.
	Registry *prometheus.Registry

	syncTotal    *prometheus.CounterVec
	syncDuration *prometheus.HistogramVec

	queueDepth          *prometheus.GaugeVec
	queueAdds           *prometheus.CounterVec
	queueLatency        *prometheus.HistogramVec
	queueWorkDuration   *prometheus.HistogramVec
	queueUnfinished     *prometheus.GaugeVec
	queueLongestRunning *prometheus.GaugeVec
	queueRetries        *prometheus.CounterVec

	requestLatency *prometheus.HistogramVec
	requestResult  *prometheus.CounterVec

	rolloutVariants *prometheus.GaugeVec
}

// States of a variant in a rollout's wave, the values of the "state" label
// of rollout_wave_variants.
const (
	// WaveVariantPending: the variant does not carry the change yet.
	WaveVariantPending = "pending"
	// WaveVariantOpen: it carries the change and has not published it.
	WaveVariantOpen = "open"
	// WaveVariantFinished: it published the change.
	WaveVariantFinished = "finished"
	// WaveVariantFailed: it failed (a person must act).
	WaveVariantFailed = "failed"
	// WaveVariantSkipped: the rollout passes it over (skip-variants).
	WaveVariantSkipped = "skipped"
)

// WaveVariants are the variants of one wave of a set's rollout by state.
type WaveVariants struct {
	Wave                                     string
	Pending, Open, Finished, Failed, Skipped int
}

// New makes a Metrics with a fresh registry.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.syncTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "sync_total",
		Help: "Syncs run by each controller, by result (success, conflict, error).",
	}, []string{"controller", "result"})
	m.syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "sync_duration_seconds",
		Help:    "Time one sync took, by controller and result.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"controller", "result"})

	// The workqueue metrics keep the names client-go's own provider uses
	// (workqueue_*), so existing dashboards work unchanged.
	m.queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth", Help: "Current depth of the workqueue.",
	}, []string{"name"})
	m.queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "adds_total", Help: "Adds handled by the workqueue.",
	}, []string{"name"})
	m.queueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help:    "How long an item stays in the workqueue before being requested.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	m.queueWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "work_duration_seconds",
		Help:    "How long processing an item from the workqueue takes.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	m.queueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration; large values suggest stuck workers.",
	}, []string{"name"})
	m.queueLongestRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "How long the longest running processor has been running.",
	}, []string{"name"})
	m.queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "retries_total", Help: "Retries handled by the workqueue.",
	}, []string{"name"})

	m.requestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "rest_client", Name: "request_duration_seconds",
		Help:    "Latency of API requests, by verb and host.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"verb", "host"})
	m.requestResult = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "rest_client", Name: "requests_total",
		Help: "API requests, by status code, method and host.",
	}, []string{"code", "method", "host"})

	m.rolloutVariants = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "rollout_wave_variants",
		Help: "Variants of each wave of a PackageVariantSet's rollout, by state (pending, open, finished, failed, skipped).",
	}, []string{"namespace", "set", "wave", "state"})

	m.Registry.MustRegister(m.rolloutVariants, m.syncTotal, m.syncDuration,
		m.queueDepth, m.queueAdds, m.queueLatency, m.queueWorkDuration,
		m.queueUnfinished, m.queueLongestRunning, m.queueRetries,
		m.requestLatency, m.requestResult)
	return m
}

// ObserveSync records one sync of a controller.
func (m *Metrics) ObserveSync(controller, result string, d time.Duration) {
	if m == nil {
		return
	}
	m.syncTotal.WithLabelValues(controller, result).Inc()
	m.syncDuration.WithLabelValues(controller, result).Observe(d.Seconds())
}

// SetRollout records the waves of a set's rollout, replacing what was
// recorded for the set before (none: the set has no rollout, or is gone).
func (m *Metrics) SetRollout(namespace, set string, waves []WaveVariants) {
	if m == nil {
		return
	}
	m.rolloutVariants.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "set": set})
	for _, w := range waves {
		for state, n := range map[string]int{WaveVariantPending: w.Pending, WaveVariantOpen: w.Open, WaveVariantFinished: w.Finished, WaveVariantFailed: w.Failed, WaveVariantSkipped: w.Skipped} {
			m.rolloutVariants.WithLabelValues(namespace, set, w.Wave, state).Set(float64(n))
		}
	}
}

// QueueMetricsProvider returns a workqueue.MetricsProvider that records on
// this registry; pass it in the workqueue's config.
func (m *Metrics) QueueMetricsProvider() workqueue.MetricsProvider {
	return queueProvider{m}
}

type queueProvider struct{ m *Metrics }

func (p queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.m.queueDepth.WithLabelValues(name)
}
func (p queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.m.queueAdds.WithLabelValues(name)
}
func (p queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.m.queueLatency.WithLabelValues(name)
}
func (p queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.m.queueWorkDuration.WithLabelValues(name)
}
func (p queueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.queueUnfinished.WithLabelValues(name)
}
func (p queueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.queueLongestRunning.WithLabelValues(name)
}
func (p queueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.m.queueRetries.WithLabelValues(name)
}

var registerClientMetrics sync.Once

// RegisterClientMetrics makes client-go report request latencies and results
// to this registry. client-go accepts one registration per process, so only
// the first call has an effect.
func (m *Metrics) RegisterClientMetrics() {
	registerClientMetrics.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency: latencyAdapter{m.requestLatency},
			RequestResult:  resultAdapter{m.requestResult},
		})
	})
}

type latencyAdapter struct{ h *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	a.h.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ c *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.c.WithLabelValues(code, method, host).Inc()
}
