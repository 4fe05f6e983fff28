package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/porch-variants/variant-controller/pkg/metrics"
)

// Users of the fake API server's TokenReviews.
const (
	readerToken   = "token-of-prometheus"
	readerUser    = "system:serviceaccount:monitoring:prometheus"
	strangerToken = "token-of-stranger"
	strangerUser  = "system:serviceaccount:monitoring:stranger"
	// brokenToken makes the TokenReview itself fail: the API server refuses
	// the controller.
	brokenToken = "token-the-api-server-cannot-review"
)

// fakeReviews is an API server that answers TokenReviews and
// SubjectAccessReviews through a fake clientset's reactors: readerUser may
// get /metrics, nobody else may get anything. It counts the reviews and
// keeps the SubjectAccessReviews it was asked.
type fakeReviews struct {
	clientset *fake.Clientset

	mu           sync.Mutex
	tokenReviews int
	accessAsked  []authorizationv1.SubjectAccessReviewSpec
}

func newFakeReviews() *fakeReviews {
	f := &fakeReviews{clientset: fake.NewClientset()}
	f.clientset.PrependReactor("create", "tokenreviews", func(a core.Action) (bool, runtime.Object, error) {
		review := a.(core.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		f.mu.Lock()
		f.tokenReviews++
		f.mu.Unlock()
		switch review.Spec.Token {
		case readerToken:
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: readerUser, Groups: []string{"system:serviceaccounts"}}}
		case strangerToken:
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: strangerUser}}
		case brokenToken:
			return true, nil, apierrors.NewForbidden(authenticationv1.Resource("tokenreviews"), "",
				fmt.Errorf(`User "system:serviceaccount:variant-controller-system:variant-controller" cannot create resource "tokenreviews"`))
		default:
			review.Status = authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}
		}
		return true, review, nil
	})
	f.clientset.PrependReactor("create", "subjectaccessreviews", func(a core.Action) (bool, runtime.Object, error) {
		review := a.(core.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.mu.Lock()
		f.accessAsked = append(f.accessAsked, review.Spec)
		f.mu.Unlock()
		nr := review.Spec.NonResourceAttributes
		review.Status.Allowed = review.Spec.User == readerUser && review.Spec.ResourceAttributes == nil &&
			nr != nil && nr.Path == "/metrics" && nr.Verb == "get"
		return true, review, nil
	})
	return f
}

// client is a real clientset whose requests the fake clientset answers:
// the delegating authenticator and authorizer send their reviews through
// the REST client, which a fake clientset does not have.
func (f *fakeReviews) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: "https://api.invalid", Transport: f})
	if err != nil {
		t.Fatal(err)
	}
	return kube
}

// RoundTrip decodes a review, asks the fake clientset and encodes its
// answer, or its error as a Status.
func (f *fakeReviews) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("fake API server: decode %s %s: %w", req.Method, req.URL.Path, err)
	}
	var out runtime.Object
	switch o := obj.(type) {
	case *authenticationv1.TokenReview:
		out, err = f.clientset.AuthenticationV1().TokenReviews().Create(req.Context(), o, metav1.CreateOptions{})
	case *authorizationv1.SubjectAccessReview:
		out, err = f.clientset.AuthorizationV1().SubjectAccessReviews().Create(req.Context(), o, metav1.CreateOptions{})
	default:
		return nil, fmt.Errorf("fake API server: unexpected %T at %s", obj, req.URL.Path)
	}
	code := http.StatusCreated
	if err != nil {
		status := err.(apierrors.APIStatus).Status()
		status.APIVersion, status.Kind = "v1", "Status"
		out, code = &status, int(status.Code)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(data)),
		Request:    req,
	}, nil
}

func (f *fakeReviews) counts() (int, []authorizationv1.SubjectAccessReviewSpec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenReviews, append([]authorizationv1.SubjectAccessReviewSpec(nil), f.accessAsked...)
}

// startMetrics serves metrics as run does, on a free port of 127.0.0.1, and
// returns its address; it stops when the test ends.
func startMetrics(t *testing.T, ctx context.Context, o *options, kube kubernetes.Interface) (string, *metricsServer) {
	t.Helper()
	m := metrics.New()
	m.ObserveSync("packagevariants", metrics.ResultSuccess, 0)
	ms, err := newMetricsServer(ctx, o, kube, m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	serveOn(ctx, "metrics", ln, ms.handler, ms.tls)
	return ln.Addr().String(), ms
}

// trustServedCertificate is a client that trusts the CA the server's
// certificate chain ends with (the self-signed pair is a certificate and
// the CA made for it).
func trustServedCertificate(t *testing.T, ms *metricsServer) *http.Client {
	t.Helper()
	if len(ms.tls.Certificates) != 1 || len(ms.tls.Certificates[0].Certificate) != 2 {
		t.Fatalf("the self-signed configuration holds %d certificates, want one pair of a certificate and its CA", len(ms.tls.Certificates))
	}
	ca, err := x509.ParseCertificate(ms.tls.Certificates[0].Certificate[1])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
}

// TestSecureMetrics: /metrics over a real TLS listener with the
// self-signed certificate, each request's token reviewed and its
// permission asked of the (fake) API server: nothing without a token, 401
// for a token the API server does not accept, 403 naming the permission
// for a user who may not get /metrics, the metrics for one who may, 500
// naming the controller's missing permission when the API server refuses
// the review itself.
func TestSecureMetrics(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	reviews := newFakeReviews()
	addr, ms := startMetrics(t, ctx, &options{metricsSecure: true, metricsAddr: "127.0.0.1:0"}, reviews.client(t))
	client := trustServedCertificate(t, ms)

	cases := map[string]struct {
		method, path, token string
		wantCode            int
		wantBody            []string
		wantAuthenticate    bool
	}{
		"no token is 401 saying what to send": {
			path: "/metrics", wantCode: http.StatusUnauthorized, wantAuthenticate: true,
			wantBody: []string{"no bearer token", "Authorization: Bearer <token>", "ClusterRole variant-controller-metrics-reader"},
		},
		"a token the API server does not accept is 401": {
			path: "/metrics", token: "forged", wantCode: http.StatusUnauthorized, wantAuthenticate: true,
			wantBody: []string{"did not accept the bearer token", "kubectl create token"},
		},
		"a user without the permission is 403 naming it": {
			path: "/metrics", token: strangerToken, wantCode: http.StatusForbidden,
			wantBody: []string{`user "system:serviceaccount:monitoring:stranger" may not get /metrics`, `verb "get" on the non-resource URL "/metrics"`, "ClusterRole variant-controller-metrics-reader"},
		},
		"the reader gets the metrics": {
			path: "/metrics", token: readerToken, wantCode: http.StatusOK,
			wantBody: []string{`variant_controller_sync_total{controller="packagevariants",result="success"} 1`, "go_goroutines"},
		},
		"another path is 404, and no permission is asked for it": {
			path: "/debug/pprof/", token: readerToken, wantCode: http.StatusNotFound,
			wantBody: []string{"serves /metrics only"},
		},
		"a write is 405 even for the reader": {
			method: http.MethodPost, path: "/metrics", token: readerToken, wantCode: http.StatusMethodNotAllowed,
			wantBody: []string{"answers GET and HEAD, not POST"},
		},
		"a review the API server refuses is 500 naming the controller's permission": {
			path: "/metrics", token: brokenToken, wantCode: http.StatusInternalServerError,
			wantBody: []string{"could not check the bearer token", "needs create on tokenreviews.authentication.k8s.io"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, "https://"+addr+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, tc.path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("%s %s = %d, want %d:\n%s", method, tc.path, resp.StatusCode, tc.wantCode, body)
			}
			for _, want := range tc.wantBody {
				if !strings.Contains(string(body), want) {
					t.Errorf("the answer lacks %q:\n%s", want, body)
				}
			}
			if got := resp.Header.Get("WWW-Authenticate") != ""; got != tc.wantAuthenticate {
				t.Errorf("WWW-Authenticate set = %v, want %v", got, tc.wantAuthenticate)
			}
		})
	}

	// Every permission asked was the one the answers name, for the user
	// the token is.
	_, asked := reviews.counts()
	for _, spec := range asked {
		if nr := spec.NonResourceAttributes; spec.ResourceAttributes != nil || nr == nil || nr.Verb != "get" || nr.Path != "/metrics" {
			t.Errorf("asked the API server %+v, want get on the non-resource URL /metrics", spec)
		}
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		User: readerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}
	found := false
	for _, spec := range asked {
		found = found || cmp.Equal(spec, want)
	}
	if !found {
		t.Errorf("no SubjectAccessReview asked %+v; asked:\n%+v", want, asked)
	}
}

// TestSecureMetricsCachesReviews: a scraper's token and permission are
// asked of the API server once, not on every scrape.
func TestSecureMetricsCachesReviews(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	reviews := newFakeReviews()
	addr, ms := startMetrics(t, ctx, &options{metricsSecure: true, metricsAddr: "127.0.0.1:0"}, reviews.client(t))
	client := trustServedCertificate(t, ms)
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+readerToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("scrape %d = %d, want 200", i+1, resp.StatusCode)
		}
	}
	if tokens, access := reviews.counts(); tokens != 1 || len(access) != 1 {
		t.Errorf("3 scrapes made %d TokenReviews and %d SubjectAccessReviews, want 1 of each (cached for %s)", tokens, len(access), tokenReviewTTL)
	}
}

// TestInsecureMetrics: --metrics-secure=false serves plain HTTP to anyone
// and says so in the log.
func TestInsecureMetrics(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	addr, _ := startMetrics(t, ctx, &options{metricsSecure: false, metricsAddr: "127.0.0.1:0"}, nil)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "variant_controller_sync_total") {
		t.Fatalf("plain GET /metrics = %d, want 200 with the metrics:\n%s", resp.StatusCode, body)
	}
	logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	for _, want := range []string{"WARNING: serving /metrics over plain HTTP without authentication or authorization (--metrics-secure=false)", "local development only"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}
}
