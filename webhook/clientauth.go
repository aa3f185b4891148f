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

package webhook

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshinit/meshinit/certs"
)

// Client authentication: where the API server is configured to present a
// client certificate to the webhook (an AdmissionConfiguration whose
// kubeConfigFile names one for the webhook's Service), the webhook can
// require it, so that nothing else reaching its port can post reviews.

// clientCAs is the CA bundle client certificates must chain to, read from
// a file (a mounted ConfigMap or Secret) and re-read when its content
// changes, so a CA rotation needs no restart.
type clientCAs struct {
	file string
	mu   sync.Mutex
	data []byte
	pool *x509.CertPool
}

// load returns the pool of the file's current content.
func (c *clientCAs) load() (*x509.CertPool, error) {
	data, err := os.ReadFile(c.file)
	if err != nil {
		return nil, fmt.Errorf("reading --client-ca-file=%s: %w", c.file, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pool != nil && bytes.Equal(data, c.data) {
		return c.pool, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("--client-ca-file=%s holds no PEM certificate", c.file)
	}
	c.data, c.pool = data, pool
	return pool, nil
}

// clientAuth checks client certificates: they must chain to a CA in the
// CA file for client authentication and, unless names is empty, have one
// of names as their subject common name or a DNS name. The server's own
// readiness check (a handshake in process, webhookserver.go) presents
// self, issued at startup by a CA that only this process ever has.
type clientAuth struct {
	cas   *clientCAs
	names []string
	self  tls.Certificate
}

// newClientAuth reads caFile now, so a bad one fails at startup.
func newClientAuth(caFile string, names []string) (*clientAuth, error) {
	cas := &clientCAs{file: caFile}
	if _, err := cas.load(); err != nil {
		return nil, err
	}
	const selfName, selfValidity = "meshinit-webhook readiness check", 10 * 365 * 24 * time.Hour
	now := time.Now()
	ca, err := certs.NewCA(selfName, selfValidity, now)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueClient(selfName, selfValidity, now)
	if err != nil {
		return nil, err
	}
	self, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the readiness check's client certificate: %w", err)
	}
	return &clientAuth{cas: cas, names: names, self: self}, nil
}

// verify is tls.Config.VerifyConnection.
func (a *clientAuth) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("client certificate required")
	}
	leaf := cs.PeerCertificates[0]
	if bytes.Equal(leaf.Raw, a.self.Certificate[0]) {
		return nil // the handshake proved the key only this process has
	}
	pool, err := a.cas.load()
	if err != nil {
		return err
	}
	intermediates := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if len(a.names) > 0 && !slices.Contains(a.names, leaf.Subject.CommonName) && !slices.ContainsFunc(leaf.DNSNames, func(n string) bool { return slices.Contains(a.names, n) }) {
		return fmt.Errorf("client certificate %q (DNS names %q) is not one of --client-names=%q", leaf.Subject.CommonName, leaf.DNSNames, strings.Join(a.names, ","))
	}
	return nil
}
