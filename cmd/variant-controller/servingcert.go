package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// The files --metrics-cert-dir must hold: the keys of a kubernetes.io/tls
// Secret, so that one mounted there (cert-manager's, for example) serves as
// it is.
const (
	certFileName = "tls.crt"
	keyFileName  = "tls.key"
)

// metricsTLSConfig is the TLS configuration of the metrics server: the
// certificate and key in certDir, read again whenever the files change, or,
// without certDir, a self-signed certificate made in memory at start (valid
// for a year, for the host name, localhost and 127.0.0.1), which a scraper
// cannot verify but which keeps the token off the wire in clear text.
//
// HTTP/2 is not offered: its rapid-reset attacks (CVE-2023-44487,
// CVE-2023-39325) need no more than a TCP connection, and a scraper needs
// nothing HTTP/1.1 lacks.
func metricsTLSConfig(ctx context.Context, certDir string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certDir == "" {
		cert, err := selfSignedCertificate()
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
		return cfg, nil
	}
	files := &certFiles{
		cert:   filepath.Join(certDir, certFileName),
		key:    filepath.Join(certDir, keyFileName),
		logger: klog.FromContext(ctx),
	}
	// The first load is checked here, so a missing or broken pair is an
	// error at start, not at the first scrape.
	if _, err := files.current(); err != nil {
		return nil, fmt.Errorf("--metrics-cert-dir %s: %w; it must hold %s and %s (PEM: the certificate chain and its private key, as a kubernetes.io/tls Secret mounted there)",
			certDir, err, certFileName, keyFileName)
	}
	cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return files.current() }
	return cfg, nil
}

// selfSignedCertificate makes a certificate for this host, signed by a CA
// made for it and thrown away.
func selfSignedCertificate() (tls.Certificate, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generate a self-signed certificate for /metrics: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("load the self-signed certificate for /metrics: %w", err)
	}
	return cert, nil
}

// certFiles serves the certificate and key of two files, read again when
// either file changes (its size, modification time or the file itself: a
// mounted Secret is updated by swapping a symbolic link). A pair that
// cannot be read (the certificate written, its key not yet, or a broken
// file) leaves the previous pair in service and is logged once.
type certFiles struct {
	cert, key string
	logger    klog.Logger

	mu sync.Mutex
	// loaded is the pair in service, read from the file versions
	// loadedFrom; failed is why the versions failedFrom could not be
	// loaded, so they are neither read nor logged again.
	loaded     *tls.Certificate
	loadedFrom [2]os.FileInfo
	failed     error
	failedFrom [2]os.FileInfo
}

// current is the pair to serve, read again if the files changed since.
func (c *certFiles) current() (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	versions, err := c.stat()
	switch {
	case err != nil:
		if c.loaded != nil && c.failed == nil {
			c.logger.Error(err, "The metrics certificate's files are gone; serving the previous pair", "certificate", c.cert, "key", c.key)
		}
		c.failed, c.failedFrom = err, [2]os.FileInfo{}
	case c.loaded != nil && sameVersions(versions, c.loadedFrom):
		return c.loaded, nil
	case c.failed != nil && sameVersions(versions, c.failedFrom):
		err = c.failed
	default:
		pair, loadErr := tls.LoadX509KeyPair(c.cert, c.key)
		if loadErr == nil {
			if c.loaded != nil {
				c.logger.Info("Serving the changed metrics certificate", "certificate", c.cert, "key", c.key)
			}
			c.loaded, c.loadedFrom, c.failed = &pair, versions, nil
			return c.loaded, nil
		}
		err = loadErr
		c.failed, c.failedFrom = loadErr, versions
		if c.loaded != nil {
			c.logger.Error(err, "Could not load the changed metrics certificate; serving the previous pair until the files hold a valid one", "certificate", c.cert, "key", c.key)
		}
	}
	if c.loaded != nil {
		return c.loaded, nil
	}
	return nil, err
}

// stat is the versions of the two files.
func (c *certFiles) stat() ([2]os.FileInfo, error) {
	var out [2]os.FileInfo
	var errs []string
	for i, name := range []string{c.cert, c.key} {
		fi, err := os.Stat(name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out[i] = fi
	}
	if len(errs) > 0 {
		return out, errors.New(strings.Join(errs, "; "))
	}
	return out, nil
}

// sameVersions reports whether two stats of the pair name the same files,
// unchanged.
func sameVersions(a, b [2]os.FileInfo) bool {
	for i := range a {
		if a[i] == nil || b[i] == nil || !os.SameFile(a[i], b[i]) || a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()) {
			return false
		}
	}
	return true
}
