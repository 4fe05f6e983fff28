package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/porch-variants/variant-controller/pkg/metrics"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestHealthEndpoints(t *testing.T) {
	var synced atomic.Bool
	var aliveErr atomic.Pointer[error]
	srv := httptest.NewServer(healthMux(
		func(*http.Request) error {
			if p := aliveErr.Load(); p != nil {
				return *p
			}
			return nil
		},
		[]readyCheck{{name: "packagevariants", ready: synced.Load}, {name: "packagevariantsets", ready: func() bool { return true }}},
	))
	defer srv.Close()

	if code, body := get(t, srv, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	code, body := get(t, srv, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "not yet synced for packagevariants") || strings.Contains(body, "packagevariantsets") {
		t.Errorf("/readyz before sync = %d %q, want 503 naming only packagevariants", code, body)
	}
	synced.Store(true)
	if code, body := get(t, srv, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after sync = %d %q, want 200", code, body)
	}
	stuck := errors.New("failed election to renew leadership on lease variant-controller")
	aliveErr.Store(&stuck)
	if code, body := get(t, srv, "/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "renew leadership") {
		t.Errorf("/healthz with a stuck leader = %d %q, want 500 with the reason", code, body)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	m := metrics.New()
	q := workloop.NewQueue("packagevariants", m)
	defer q.ShutDown()
	q.Add(keyFor("ns", "a"))
	m.ObserveSync("packagevariants", metrics.ResultSuccess, 3*time.Millisecond)

	srv := httptest.NewServer(metricsMux(m.Registry))
	defer srv.Close()
	code, body := get(t, srv, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`variant_controller_sync_total{controller="packagevariants",result="success"} 1`,
		`variant_controller_sync_duration_seconds_count{controller="packagevariants",result="success"} 1`,
		`workqueue_depth{name="packagevariants"} 1`,
		`workqueue_adds_total{name="packagevariants"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func keyFor(ns, name string) cache.ObjectName { return cache.ObjectName{Namespace: ns, Name: name} }
