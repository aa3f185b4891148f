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
	"net"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func mustCA(t *testing.T, now time.Time, validity time.Duration) *keyPair {
	t.Helper()
	ca, err := newCA(caCommonName(now), now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustServing(t *testing.T, ca *keyPair, names []string, now time.Time, validity time.Duration) *keyPair {
	t.Helper()
	kp, err := newServing(ca, names, nil, now, validity)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestNewCA(t *testing.T) {
	ca := mustCA(t, t0, 365*24*time.Hour)
	c := ca.cert
	if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero {
		t.Errorf("IsCA=%v BasicConstraintsValid=%v MaxPathLenZero=%v, want a CA that signs only leaves", c.IsCA, c.BasicConstraintsValid, c.MaxPathLenZero)
	}
	if c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("KeyUsage %b lacks CertSign", c.KeyUsage)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if !c.NotBefore.Equal(t0) {
		t.Errorf("NotBefore %s, want %s (issuance, not backdated)", c.NotBefore, t0)
	}
	if want := t0.Add(365 * 24 * time.Hour); !c.NotAfter.Equal(want) {
		t.Errorf("NotAfter %s, want %s", c.NotAfter, want)
	}
	if len(c.SubjectKeyId) == 0 {
		t.Error("no SubjectKeyId")
	}
	other := mustCA(t, t0, time.Hour)
	if c.SerialNumber.Cmp(other.cert.SerialNumber) == 0 || c.Subject.CommonName == "" {
		t.Errorf("serial %v repeated or empty CommonName %q", c.SerialNumber, c.Subject.CommonName)
	}
}

func TestNewServing(t *testing.T) {
	names := DNSNames("meshinit-webhook", "meshinit-system")
	ca := mustCA(t, t0, 365*24*time.Hour)
	for _, tc := range []struct {
		name         string
		validity     time.Duration
		wantNotAfter time.Time
		wantBackdate time.Duration
	}{
		{"within the CA's lifetime", 90 * 24 * time.Hour, t0.Add(90 * 24 * time.Hour), maxBackdate},
		{"clamped to the CA's NotAfter", 400 * 24 * time.Hour, ca.cert.NotAfter, maxBackdate},
		{"short lifetime, short backdate", 30 * time.Second, t0.Add(30 * time.Second), 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := mustServing(t, ca, names, t0, tc.validity)
			c := kp.cert
			if !slices.Equal(c.DNSNames, names) {
				t.Errorf("DNSNames %v, want %v", c.DNSNames, names)
			}
			if c.IsCA {
				t.Error("serving certificate is a CA")
			}
			if c.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
				t.Errorf("KeyUsage %b ExtKeyUsage %v, want DigitalSignature and ServerAuth only", c.KeyUsage, c.ExtKeyUsage)
			}
			if !c.NotAfter.Equal(tc.wantNotAfter) {
				t.Errorf("NotAfter %s, want %s", c.NotAfter, tc.wantNotAfter)
			}
			if want := t0.Add(-tc.wantBackdate); !c.NotBefore.Equal(want) {
				t.Errorf("NotBefore %s, want %s", c.NotBefore, want)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca.cert)
			for _, name := range names {
				if _, err := c.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: t0}); err != nil {
					t.Errorf("verifying for %s: %v", name, err)
				}
			}
			if _, err := c.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots, CurrentTime: t0}); err == nil {
				t.Error("verified for a name it was not issued for")
			}
		})
	}
	if _, err := newServing(ca, nil, nil, t0, time.Hour); err == nil {
		t.Error("issued a serving certificate without DNS names or IP addresses")
	}
}

func TestIssueServing(t *testing.T) {
	ca, err := NewCA("test CA", 2*time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	if c := ca.Certificate(); c.Subject.CommonName != "test CA" || !c.IsCA || !c.NotAfter.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("CA %q IsCA=%v NotAfter %s, want \"test CA\", a CA, %s", c.Subject.CommonName, c.IsCA, c.NotAfter, t0.Add(2*time.Hour))
	}
	if cas, err := ParseCertsPEM(ca.CertPEM()); err != nil || len(cas) != 1 || !cas[0].Equal(ca.Certificate()) {
		t.Errorf("CertPEM holds %d certificates (%v), want the CA's", len(cas), err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, tc := range []struct {
		name     string
		dnsNames []string
		ips      []net.IP
		wantCN   string
	}{
		{"DNS names and IP addresses", []string{"localhost"}, ips, "localhost"},
		{"IP addresses only", nil, ips[:1], "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM, err := ca.IssueServing(tc.dnsNames, tc.ips, time.Hour, t0)
			if err != nil {
				t.Fatal(err)
			}
			kp, err := parseKeyPair(keyTLSCert, certPEM, keyTLSKey, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			if kp.cert.Subject.CommonName != tc.wantCN {
				t.Errorf("CommonName %q, want %q", kp.cert.Subject.CommonName, tc.wantCN)
			}
			hosts := append(slices.Clone(tc.dnsNames), "127.0.0.1")
			if len(tc.ips) > 1 {
				hosts = append(hosts, "::1")
			}
			for _, host := range hosts {
				if _, err := kp.cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: t0}); err != nil {
					t.Errorf("verifying for %s: %v", host, err)
				}
			}
			if _, err := kp.cert.Verify(x509.VerifyOptions{DNSName: "10.0.0.1", Roots: roots, CurrentTime: t0}); err == nil {
				t.Error("verified for an address it was not issued for")
			}
		})
	}
	if _, _, err := ca.IssueServing(nil, nil, time.Hour, t0); err == nil {
		t.Error("issued a serving certificate for no name or address")
	}
}

func TestIssueClient(t *testing.T) {
	ca, err := NewCA("test CA", 2*time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient("kube-apiserver", time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := parseKeyPair(keyTLSCert, certPEM, keyTLSKey, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	client := x509.VerifyOptions{Roots: roots, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := kp.cert.Verify(client); err != nil || kp.cert.Subject.CommonName != "kube-apiserver" {
		t.Errorf("client certificate %q: %v", kp.cert.Subject.CommonName, err)
	}
	if _, err := kp.cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: t0}); err == nil {
		t.Error("the client certificate verifies for server authentication")
	}
	if len(kp.cert.Subject.Organization) != 0 {
		t.Errorf("Organization %v, want none without groups", kp.cert.Subject.Organization)
	}
	certPEM, keyPEM, err = ca.IssueClient("kube-apiserver-kubelet-client", time.Hour, t0, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if kp, err = parseKeyPair(keyTLSCert, certPEM, keyTLSKey, keyPEM); err != nil {
		t.Fatal(err)
	}
	if got := kp.cert.Subject.Organization; !slices.Equal(got, []string{"system:masters"}) {
		t.Errorf("Organization %v, want the groups [system:masters]", got)
	}
	if _, err := kp.cert.Verify(client); err != nil {
		t.Errorf("client certificate in groups: %v", err)
	}
	if _, _, err := ca.IssueClient("", time.Hour, t0); err == nil {
		t.Error("issued a client certificate without a common name")
	}
}

func TestDNSNames(t *testing.T) {
	got := DNSNames("svc", "ns")
	want := []string{"svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local"}
	if !slices.Equal(got, want) {
		t.Errorf("DNSNames = %v, want %v", got, want)
	}
}
