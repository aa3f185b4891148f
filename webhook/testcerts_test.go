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

package webhook_test

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshinit/meshinit/certs"
)

// testCA issues serving certificates for localhost.
type testCA struct{ *certs.CA }

// newCA returns a CA valid from an hour ago for two hours.
func newCA(t *testing.T) *testCA {
	t.Helper()
	ca, err := certs.NewCA("test CA", 2*time.Hour, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca}
}

// issue writes a new serving certificate for localhost, 127.0.0.1 and ::1
// into dir (tls.key, then tls.crt, each replaced by a rename) and returns its
// serial number.
func (ca *testCA) issue(t *testing.T, dir string) string {
	t.Helper()
	certPEM, keyPEM, err := ca.IssueServing([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, 2*time.Hour, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("IssueServing returned no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"tls.key", keyPEM}, {"tls.crt", certPEM}} {
		tmp := filepath.Join(dir, "."+f.name)
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			t.Fatal(err)
		}
	}
	return cert.SerialNumber.String()
}
