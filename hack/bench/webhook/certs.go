package main

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/meshinit/meshinit/certs"
)

// writeCerts writes a serving certificate for 127.0.0.1 (tls.crt, tls.key)
// signed by a new CA into dir, and returns a pool trusting that CA. Both are
// issued by package certs, valid from an hour ago for a day.
func writeCerts(dir string) (*x509.CertPool, error) {
	from := time.Now().Add(-time.Hour)
	ca, err := certs.NewCA("bench-webhook CA", 25*time.Hour, from)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueServing(nil, []net.IP{net.IPv4(127, 0, 0, 1)}, 25*time.Hour, from)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	return pool, nil
}
