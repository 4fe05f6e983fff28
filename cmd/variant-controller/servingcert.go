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

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
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
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if certDir == "" {
		cert, err := selfSignedCertificate()
		if err != nil {
			return nil, err
		}
		base.Certificates = []tls.Certificate{cert}
		return base, nil
	}
	getConfig, err := servingCertFromDir(ctx, certDir, base)
	if err != nil {
		return nil, fmt.Errorf("--metrics-cert-dir %s: %w; it must hold %s and %s (PEM: the certificate chain and its private key, as a kubernetes.io/tls Secret mounted there)",
			certDir, err, certFileName, keyFileName)
	}
	cfg := base.Clone()
	cfg.GetConfigForClient = getConfig
	return cfg, nil
}

// servingCertFromDir serves the pair in certDir with apiserver's dynamic
// certificates, as kube-apiserver serves --tls-cert-file: the files are
// watched until ctx ends, a changed pair is served from the handshake after
// it loads, and one that does not load (the certificate written, its key
// not yet, or a broken file) leaves the previous pair in service while the
// load is retried with backoff. The first load is made here, so a missing
// or broken pair is an error at start, not at the first scrape.
func servingCertFromDir(ctx context.Context, certDir string, base *tls.Config) (func(*tls.ClientHelloInfo) (*tls.Config, error), error) {
	certFile, keyFile := filepath.Join(certDir, certFileName), filepath.Join(certDir, keyFileName)
	// Both files are looked for first: the library stops at the first
	// missing one, and a directory without either should name both.
	var missing []string
	for _, name := range []string{certFile, keyFile} {
		if _, err := os.Stat(name); err != nil {
			missing = append(missing, err.Error())
		}
	}
	if len(missing) > 0 {
		return nil, errors.New(strings.Join(missing, "; "))
	}
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("metrics", certFile, keyFile)
	if err != nil {
		return nil, err
	}
	serving := dynamiccertificates.NewDynamicServingCertificateController(base, nil, content, nil, nil)
	if err := serving.RunOnce(); err != nil {
		return nil, err
	}
	content.AddListener(serving)
	content.AddListener(changeLogger{logger: klog.FromContext(ctx), name: content.Name()})
	go content.Run(ctx, 1)
	go serving.Run(1, ctx.Done())
	return serving.GetConfigForClient, nil
}

// changeLogger says in the log when a changed pair was loaded; the library
// tells only at verbosity 2, and a rotation is worth a line at the default.
type changeLogger struct {
	logger klog.Logger
	name   string
}

// Enqueue is called each time the pair's content changes.
func (l changeLogger) Enqueue() {
	l.logger.Info("Serving the changed metrics certificate", "name", l.name)
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
