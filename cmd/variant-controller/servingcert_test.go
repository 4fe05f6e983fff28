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

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
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

// write puts the pair's files in dir, stamped with mtime so that a change
// is seen whatever the file system's timestamp granularity.
func (p pair) write(t *testing.T, dir string, mtime time.Time) {
	t.Helper()
	writeFile(t, filepath.Join(dir, certFileName), p.certPEM, mtime)
	writeFile(t, filepath.Join(dir, keyFileName), p.keyPEM, mtime)
}

func writeFile(t *testing.T, name string, data []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(name, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsCertDir: the pair in --metrics-cert-dir is served, a changed
// pair is served from the next handshake on, a broken change keeps the
// previous pair in service (logged once), and a directory without a usable
// pair fails at start naming the files.
func TestMetricsCertDir(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	dir := t.TempDir()
	first, second, third := newPair(t), newPair(t), newPair(t)
	start := time.Now().Add(-time.Hour)
	first.write(t, dir, start)

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

	wantServed("at start", first)
	second.write(t, dir, start.Add(time.Minute))
	wantServed("after the files changed", second)

	// A key that is not one: the change cannot be loaded.
	writeFile(t, filepath.Join(dir, keyFileName), []byte("not a key"), start.Add(2*time.Minute))
	wantServed("with a broken key", second)
	wantServed("with a broken key, again", second)
	logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if n := strings.Count(logged, "Could not load the changed metrics certificate"); n != 1 {
		t.Errorf("the broken change was logged %d times, want once:\n%s", n, logged)
	}

	third.write(t, dir, start.Add(3*time.Minute))
	wantServed("after the files were mended", third)

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
				writeFile(t, filepath.Join(dir, certFileName), first.certPEM, start)
				writeFile(t, filepath.Join(dir, keyFileName), second.keyPEM, start)
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
