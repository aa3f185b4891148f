/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
