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
	"context"
	"crypto/tls"
	"crypto/x509"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshinit/meshinit/certs"
)

// TestClientAuth serves over the TLS configuration Serve uses with
// --client-ca-file and --client-names, and connects as clients with and
// without acceptable certificates; a CA added to the file later is trusted
// without a restart.
func TestClientAuth(t *testing.T) {
	now := time.Now()
	newCA := func(name string) *certs.CA {
		ca, err := certs.NewCA(name, time.Hour, now.Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	serving, apiserverCA, otherCA := newCA("serving"), newCA("API server clients"), newCA("other")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, apiserverCA.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	o := ServerOptions{ClientCAFile: caFile, ClientNames: []string{"kube-apiserver", "apiserver.example"}, TLSMinVersion: "1.2"}
	o.setDefaults()
	tlsOpts, auth, err := o.tlsOptions()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("reviewed")) }))
	certPEM, keyPEM, err := serving.IssueServing(nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	tlsOpts(srv.TLS)
	var handshakeErrors lockedBuffer
	srv.Config.ErrorLog = log.New(&handshakeErrors, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	client := func(ca *certs.CA, name string) *tls.Certificate {
		certPEM, keyPEM, err := ca.IssueClient(name, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &pair
	}
	post := func(cert *tls.Certificate, version uint16) error {
		roots := x509.NewCertPool()
		roots.AddCert(serving.Certificate())
		cfg := &tls.Config{RootCAs: roots, MinVersion: version, MaxVersion: version}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return nil
	}
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, tc := range []struct {
			name   string
			cert   *tls.Certificate
			refuse string // in the client's error; "" for answered
		}{
			{"the API server's certificate", client(apiserverCA, "kube-apiserver"), ""},
			{"no certificate", nil, "tls:"},
			{"a certificate of another CA", client(otherCA, "kube-apiserver"), "tls: bad certificate"},
			{"a name not allowed", client(apiserverCA, "someone-else"), "tls: bad certificate"},
		} {
			err := post(tc.cert, version)
			if (tc.refuse == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.refuse)) {
				t.Errorf("%s, %s: %v; want refused: %q", tls.VersionName(version), tc.name, err, tc.refuse)
			}
		}
	}

	// The server logs each refusal, after the client saw it.
	refused := 6
	for deadline := time.Now().Add(5 * time.Second); strings.Count(handshakeErrors.String(), "\n") < refused && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if logged := handshakeErrors.String(); strings.Count(logged, "TLS handshake error") != refused {
		t.Errorf("the server logged, want %d handshake errors:\n%s", refused, logged)
	}
	// The server's own readiness check gets through; without its
	// certificate it would not.
	if err := handshake(context.Background(), srv.TLS, &auth.self); err != nil {
		t.Errorf("readiness check: %v", err)
	}
	if err := handshake(context.Background(), srv.TLS, nil); err == nil {
		t.Error("a handshake without a client certificate succeeded")
	}

	// A second CA appended to the file (a rotation) is trusted at once.
	if err := post(client(otherCA, "apiserver.example"), tls.VersionTLS13); err == nil {
		t.Fatal("a certificate of a CA not in the file was accepted")
	}
	if err := os.WriteFile(caFile, append(apiserverCA.CertPEM(), otherCA.CertPEM()...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := post(client(otherCA, "apiserver.example"), tls.VersionTLS13); err != nil {
		t.Errorf("after adding its CA to --client-ca-file: %v", err)
	}
}

func TestClientAuthOptions(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    ServerOptions
		want string
	}{
		{"missing file", ServerOptions{ClientCAFile: filepath.Join(dir, "missing")}, "reading --client-ca-file=" + dir + "/missing"},
		{"no certificate in it", ServerOptions{ClientCAFile: notPEM}, "--client-ca-file=" + notPEM + " holds no PEM certificate"},
		{"names without a CA", ServerOptions{ClientNames: []string{"a", "b"}}, `--client-names="a,b" needs --client-ca-file`},
	} {
		tc.o.setDefaults()
		if _, _, err := tc.o.tlsOptions(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
