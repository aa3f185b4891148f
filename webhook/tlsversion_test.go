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
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/meshinit/meshinit/certs"
)

// TestTLSVersions: by default only TLS 1.3 is served; with
// --tls-min-version=1.2, TLS 1.2 too, but only with forward-secret AEAD
// cipher suites (a client offering only CBC suites is refused).
func TestTLSVersions(t *testing.T) {
	ca, err := certs.NewCA("test", time.Hour, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServing(nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(t *testing.T, minVersion string) string {
		o := ServerOptions{TLSMinVersion: minVersion}
		o.setDefaults()
		opts, _, err := o.tlsOptions()
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
		opts(srv.TLS)
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	handshake := func(addr string, version uint16, suites ...uint16) error {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: version, MaxVersion: version, CipherSuites: suites}) //nolint:gosec // only the handshake
		if err == nil {
			conn.Close()
		}
		return err
	}
	cbc := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
	for _, tc := range []struct {
		minVersion string
		version    uint16
		suites     []uint16
		ok         bool
	}{
		{"", tls.VersionTLS13, nil, true},
		{"", tls.VersionTLS12, nil, false},
		{"1.2", tls.VersionTLS13, nil, true},
		{"1.2", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, true},
		{"1.2", tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}, true},
		{"1.2", tls.VersionTLS12, cbc, false},
	} {
		err := handshake(serve(t, tc.minVersion), tc.version, tc.suites...)
		if (err == nil) != tc.ok {
			t.Errorf("--tls-min-version=%q, client TLS %x with suites %x: %v, want success %v", tc.minVersion, tc.version, tc.suites, err, tc.ok)
		}
	}
	o := ServerOptions{TLSMinVersion: "1.1"}
	if _, _, err := o.tlsOptions(); err == nil {
		t.Error("--tls-min-version=1.1 accepted")
	}
}
