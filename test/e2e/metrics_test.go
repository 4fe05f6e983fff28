//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// The controllers serve /metrics as deploy/ runs them: over HTTPS, to the
// users the API server says may get /metrics. The suite scrapes as
// Prometheus does, with the token of a ServiceAccount bound to the
// ClusterRole deploy/ ships for it.

const (
	// metricsReaderRole is deploy/rbac/metrics_reader_role.yaml's.
	metricsReaderRole = "variant-controller-metrics-reader"
	// metricsReaderSA is the suite's scraper, in the controller's namespace.
	metricsReaderSA = "e2e-metrics-reader"
)

// metricsAccess is how the suite reaches the controllers' /metrics.
type metricsAccess struct {
	// certDir holds the serving certificate startController passes with
	// --metrics-cert-dir (tls.crt, tls.key), for localhost and 127.0.0.1.
	certDir string
	// client verifies the controllers' certificate against certDir's CA.
	client *http.Client
	// reader is the ServiceAccount bound to metricsReaderRole.
	reader e2eutil.User
}

// setupMetricsAccess makes the serving certificate and the scraper: a
// ServiceAccount bound to metricsReaderRole (with a ClusterRoleBinding, as
// the README tells Prometheus's owners to).
func setupMetricsAccess(ctx context.Context) (*metricsAccess, error) {
	a := &metricsAccess{certDir: filepath.Join(env.workDir, "metrics-tls")}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nil, fmt.Errorf("generate the metrics serving certificate: %w", err)
	}
	if err := os.MkdirAll(a.certDir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(a.certDir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(a.certDir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		return nil, fmt.Errorf("the generated metrics certificate holds no PEM certificate")
	}
	a.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}

	if a.reader, err = e2eutil.ServiceAccountUser(ctx, env.kube, env.adminConfig, controllerNS, metricsReaderSA, env.workDir); err != nil {
		return nil, err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: metricsReaderSA},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: metricsReaderSA, Namespace: controllerNS}},
	}
	if _, err := env.kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("bind %s to %s: %w", metricsReaderSA, metricsReaderRole, err)
	}
	return a, nil
}

// get is GET url with token (none when empty) through client: the status
// code and the body.
func getWithToken(client *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// metrics are the samples of a Prometheus text exposition.
type metrics map[string][]float64

func (m metrics) sum(name string) float64 {
	var total float64
	for _, v := range m[name] {
		total += v
	}
	return total
}

var metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([0-9eE.+-]+|NaN)$`)

// scrapeMetrics reads the controller's /metrics as the suite's scraper.
func (c *controller) scrapeMetrics() (metrics, error) {
	code, body, err := getWithToken(env.metrics.client, c.MetricsURL, env.metrics.reader.Token)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s as %s: %d %s", c.MetricsURL, env.metrics.reader.Name, code, strings.TrimSpace(body))
	}
	out := metrics{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := metricLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		out[m[1]] = append(out[m[1]], v)
	}
	return out, sc.Err()
}

// TestMetricsAccess: a controller with the shipped defaults (HTTPS with a
// self-signed certificate made at start, no --metrics-cert-dir) answers
// 401 without a token or with one the API server does not accept, 403
// naming the permission to a ServiceAccount that is not bound to the
// metrics reader role, and the metrics to one that is; the audit log shows
// the controller asking the API server (TokenReviews, SubjectAccessReviews)
// as its own ServiceAccount.
func TestMetricsAccess(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "e2e-metrics-access")
	stranger, err := e2eutil.ServiceAccountUser(ctx, env.kube, env.adminConfig, ns, "not-a-metrics-reader", env.workDir)
	if err != nil {
		t.Fatal(err)
	}
	before, err := env.audit.Flush(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := startController(t, "controller", ns, "--metrics-cert-dir=")
	// Nothing to verify a certificate made in the process against: the
	// token is what is checked here.
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	eventually(t, c, "the metrics server to answer", func() (bool, string) {
		code, body, err := getWithToken(insecure, c.MetricsURL, "")
		if err != nil {
			return false, err.Error()
		}
		return code != 0, fmt.Sprintf("%d %s", code, body)
	})

	cases := map[string]struct {
		token    string
		wantCode int
		wantBody []string
	}{
		"no token": {
			wantCode: http.StatusUnauthorized,
			wantBody: []string{"no bearer token", metricsReaderRole},
		},
		"a token the API server does not accept": {
			token: "not-a-token", wantCode: http.StatusUnauthorized,
			wantBody: []string{"did not accept the bearer token"},
		},
		"a ServiceAccount without the binding": {
			token: stranger.Token, wantCode: http.StatusForbidden,
			wantBody: []string{fmt.Sprintf("user %q may not get /metrics", stranger.Name), `verb "get" on the non-resource URL "/metrics"`, metricsReaderRole},
		},
		"the ServiceAccount bound to the metrics reader role": {
			token: env.metrics.reader.Token, wantCode: http.StatusOK,
			wantBody: []string{"workqueue_depth", "rest_client_requests_total"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, body, err := getWithToken(insecure, c.MetricsURL, tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Fatalf("GET %s = %d, want %d:\n%s", c.MetricsURL, code, tc.wantCode, body)
			}
			for _, want := range tc.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("the answer lacks %q:\n%s", want, body)
				}
			}
		})
	}
	if t.Failed() {
		return
	}
	events, _, err := env.audit.Since(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	s := e2eutil.Summarize(e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser)))
	reportf(t, "the controller's requests while answering 4 scrapes:\n%s", s)
	// Two tokens reviewed and accepted (the stranger's, the reader's), one
	// refused (not-a-token); two permissions asked.
	if got := s.CountCode("create", "authentication.k8s.io", "tokenreviews", 201); got < 3 {
		t.Errorf("the audit log shows %d TokenReviews by the controller answered 201, want at least 3:\n%s", got, s)
	}
	if got := s.CountCode("create", "authorization.k8s.io", "subjectaccessreviews", 201); got < 2 {
		t.Errorf("the audit log shows %d SubjectAccessReviews by the controller answered 201, want at least 2:\n%s", got, s)
	}
}
