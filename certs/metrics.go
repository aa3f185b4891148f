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

package certs

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ExpiryMetric is the gauge of when the webhook's certificates expire, in
// seconds since the Unix epoch, served with controller-runtime's metrics
// (the webhook's /metrics), by label certificate:
//
//   - "serving": the certificate the webhook serves (tls.crt in its cert
//     dir, as the server loads it);
//   - "ca": the CA in the cert dir's ca.crt that signed it (self-managed
//     and cert-manager modes; files mode has one only when the Secret holds
//     ca.crt).
//
// It is read from the cert dir at every scrape, so it follows renewals;
// alert on `ExpiryMetric - time() < 14*24*3600` (both are renewed with a
// third of their lifetime left: 30 days for the default serving
// certificate, 8 months for the CA).
const ExpiryMetric = "meshinit_webhook_certificate_expiration_timestamp_seconds"

var expiryDesc = prometheus.NewDesc(ExpiryMetric,
	"When the webhook's certificates expire (NotAfter), in seconds since the Unix epoch: the serving certificate and the CA that signed it.",
	[]string{"certificate"}, nil)

// expiryCollector reads the cert dir of the Provider set up last (one per
// process) at every scrape.
type expiryCollector struct{ dir atomic.Pointer[string] }

// expiry is registered with controller-runtime's registry, as the webhook's
// own metrics are; Provider.Setup points it at its cert dir.
var expiry = &expiryCollector{}

func init() {
	metrics.Registry.MustRegister(expiry)
}

func (c *expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc }

func (c *expiryCollector) Collect(ch chan<- prometheus.Metric) {
	dir := c.dir.Load()
	if dir == nil {
		return
	}
	for _, e := range certDirExpiry(*dir) {
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, float64(e.notAfter.Unix()), e.certificate)
	}
}

// expiryOf is one sample of ExpiryMetric.
type expiryOf struct {
	certificate string
	notAfter    time.Time
}

// certDirExpiry is when the certificates in dir expire: the serving
// certificate, and the CA in ca.crt that signed it. A file that is missing
// or does not parse gives no sample (a scrape must not fail): the webhook's
// readiness check reports an unusable certificate.
func certDirExpiry(dir string) []expiryOf {
	read := func(name string) []*x509.Certificate {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		certs, _ := ParseCertsPEM(data)
		return certs
	}
	served := read(keyTLSCert)
	if len(served) == 0 {
		return nil
	}
	out := []expiryOf{{"serving", served[0].NotAfter}}
	for _, ca := range read(keyCACert) {
		if served[0].CheckSignatureFrom(ca) == nil {
			return append(out, expiryOf{"ca", ca.NotAfter})
		}
	}
	return out
}
