package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/klog/v2/textlogger"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// pair is a certificate for localhost and 127.0.0.1, its key and the CA
// that signed it.
type pair struct {
	certPEM, keyPEM []byte
	leaf, ca        *x509.Certificate
}

func newPair(t *testing.T) pair {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) != 2 {
		t.Fatalf("parse the generated pair: %v (%d certificates)", err, len(certs))
	}
	return pair{certPEM: certPEM, keyPEM: keyPEM, leaf: certs[0], ca: certs[1]}
}

// write puts the pair's files in dir.
func (p pair) write(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, certFileName), p.certPEM)
	writeFile(t, filepath.Join(dir, keyFileName), p.keyPEM)
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// globalLog is what klog's global logger printed: apiserver's dynamic
// certificates report a pair they cannot load there
// (utilruntime.HandleError), not to the context's logger. It is set once,
// before any test starts a goroutine that logs, and never cleared: klog's
// global logger may not be changed while one could be logging.
var globalLog e2eutil.SyncBuffer

func TestMain(m *testing.M) {
	klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&globalLog))))
	os.Exit(m.Run())
}

// TestMetricsCertDir: the pair in --metrics-cert-dir is served, a changed
// pair is served once it has loaded, a broken change is reported in the log
// and keeps the previous pair in service, and a directory without a usable
// pair fails at start naming the files.
func TestMetricsCertDir(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logged := func() string { return logger.GetSink().(ktesting.Underlier).GetBuffer().String() + globalLog.String() }
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	dir := t.TempDir()
	first, second, third := newPair(t), newPair(t), newPair(t)
	first.write(t, dir)

	cfg, err := metricsTLSConfig(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(ctx, "metrics", ln, http.NotFoundHandler(), cfg)
	roots := x509.NewCertPool()
	for _, p := range []pair{first, second, third} {
		roots.AddCert(p.ca)
	}
	// served is the certificate a new connection is shown (verified).
	served := func() *x509.Certificate {
		t.Helper()
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "localhost"})
		if err != nil {
			t.Fatalf("TLS handshake with the metrics server: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	wantServed := func(what string, want pair) {
		t.Helper()
		if got := served(); !bytes.Equal(got.Raw, want.leaf.Raw) {
			t.Errorf("%s: served %s (serial %s), want serial %s", what, got.Subject, got.SerialNumber, want.leaf.SerialNumber)
		}
	}
	// eventually waits until cond holds: the files are reloaded in the
	// background, after the watch sees them change.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true,
			func(context.Context) (bool, error) { return cond(), nil })
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, logged())
		}
	}

	wantServed("at start", first)
	second.write(t, dir)
	eventually("the changed pair is served", func() bool { return bytes.Equal(served().Raw, second.leaf.Raw) })
	if !strings.Contains(logged(), "Serving the changed metrics certificate") {
		t.Errorf("the change was not logged:\n%s", logged())
	}

	// A key that is not one: the change cannot be loaded.
	writeFile(t, filepath.Join(dir, keyFileName), []byte("not a key"))
	eventually("the broken key is reported", func() bool { return strings.Contains(logged(), "failed to find any PEM data in key input") })
	wantServed("with a broken key", second)
	wantServed("with a broken key, again", second)

	third.write(t, dir)
	eventually("the mended pair is served", func() bool { return bytes.Equal(served().Raw, third.leaf.Raw) })

	// At start, a directory without a usable pair is an error.
	cases := map[string]struct {
		files func(dir string)
		want  []string
	}{
		"empty directory": {
			files: func(string) {},
			want:  []string{"--metrics-cert-dir", "tls.crt", "no such file or directory", "kubernetes.io/tls Secret"},
		},
		"key of another certificate": {
			files: func(dir string) {
				writeFile(t, filepath.Join(dir, certFileName), first.certPEM)
				writeFile(t, filepath.Join(dir, keyFileName), second.keyPEM)
			},
			want: []string{"--metrics-cert-dir", "private key does not match public key"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tc.files(dir)
			_, err := metricsTLSConfig(ctx, dir)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestSelfSignedMetricsCertificate: without --metrics-cert-dir the
// server has a certificate for localhost and 127.0.0.1 that its CA
// verifies, and only HTTP/1.1.
func TestSelfSignedMetricsCertificate(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cfg, err := metricsTLSConfig(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 1 || len(cfg.Certificates[0].Certificate) != 2 {
		t.Fatalf("want one certificate with its CA, got %d", len(cfg.Certificates))
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[1])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the self-signed certificate does not verify for %s: %v", name, err)
		}
	}
	if cfg.MinVersion != tls.VersionTLS12 || len(cfg.NextProtos) != 1 || cfg.NextProtos[0] != "http/1.1" {
		t.Errorf("TLS minimum version %x and protocols %v, want TLS 1.2 and only http/1.1", cfg.MinVersion, cfg.NextProtos)
	}
}
