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
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestExpiryMetric: the gauge reports the serving certificate's NotAfter
// and that of the CA in ca.crt that signed it (not of another CA there),
// from controller-runtime's registry, and follows the cert dir; without
// ca.crt only the serving certificate, without tls.crt nothing.
func TestExpiryMetric(t *testing.T) {
	now := time.Now()
	older, err := NewCA("older", 30*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewCA("signer", 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := signer.IssueServing([]string{"meshinit-webhook.meshinit-system.svc"}, nil, 90*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	served, err := ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(files map[string][]byte) {
		t.Helper()
		if err := writeCertDir(dir, files); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(nil, Options{Mode: ModeFiles, CertDir: dir, StartupTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	write(map[string][]byte{keyTLSCert: certPEM, keyTLSKey: keyPEM, keyCACert: append(older.CertPEM(), signer.CertPEM()...)})
	if err := p.Setup(t.Context()); err != nil {
		t.Fatal(err)
	}
	// gathered is the metric's samples in controller-runtime's registry.
	gathered := func() map[string]float64 {
		t.Helper()
		families, err := metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			if f.GetName() != ExpiryMetric {
				continue
			}
			for _, m := range f.GetMetric() {
				got[m.GetLabel()[0].GetName()+"="+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return got
	}
	compare := func(what string, want map[string]float64) {
		t.Helper()
		if got := gathered(); !maps.Equal(got, want) {
			t.Errorf("%s: %s %v, want %v", what, ExpiryMetric, got, want)
		}
	}
	seconds := func(at time.Time) float64 { return float64(at.Unix()) }
	compare("ca.crt with two CAs", map[string]float64{
		"certificate=serving": seconds(served[0].NotAfter),
		"certificate=ca":      seconds(signer.Certificate().NotAfter),
	})

	if err := os.Remove(filepath.Join(dir, keyCACert)); err != nil {
		t.Fatal(err)
	}
	compare("without ca.crt", map[string]float64{"certificate=serving": seconds(served[0].NotAfter)})

	if err := os.Remove(filepath.Join(dir, keyTLSCert)); err != nil {
		t.Fatal(err)
	}
	compare("without tls.crt", map[string]float64{})
}
