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
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

// secretData lays out a Secret the way issue does: trusted CAs in ca.crt
// (signer first), the signer's key, the serving pair.
func secretData(signer *keyPair, older []*keyPair, serving *keyPair) map[string][]byte {
	certs := []*x509.Certificate{signer.cert}
	for _, kp := range older {
		certs = append(certs, kp.cert)
	}
	return map[string][]byte{
		keyCACert:  encodeCertsPEM(certs),
		keyCAKey:   signer.keyPEM,
		keyTLSCert: serving.certPEM,
		keyTLSKey:  serving.keyPEM,
	}
}

func TestParseStored(t *testing.T) {
	names := DNSNames("svc", "ns")
	ca := mustCA(t, t0, 24*time.Hour)
	old := mustCA(t, t0.Add(-time.Hour), 24*time.Hour)
	serving := mustServing(t, ca, names, t0, time.Hour)
	rsaKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("junk")})

	valid := secretData(ca, []*keyPair{old}, serving)
	with := func(k string, v []byte) map[string][]byte {
		d := map[string][]byte{}
		for k, v := range valid {
			d[k] = v
		}
		d[k] = v
		return d
	}
	for _, tc := range []struct {
		name                   string
		data                   map[string][]byte
		wantSigner, wantServer string // substrings of the errors; "" = no error
		wantTrusted            int
	}{
		{name: "valid", data: valid, wantTrusted: 2},
		{name: "empty secret", data: nil, wantSigner: "ca.crt: missing", wantServer: "tls.crt: missing"},
		{name: "ca.crt not PEM", data: with(keyCACert, []byte("hello")), wantSigner: "ca.crt: block 1: not PEM"},
		{name: "ca.crt has a key block", data: with(keyCACert, append(append([]byte{}, ca.certPEM...), ca.keyPEM...)), wantSigner: `ca.crt: block 2: type "PRIVATE KEY", want CERTIFICATE`},
		{name: "ca.crt corrupt DER", data: with(keyCACert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}})), wantSigner: "ca.crt: block 1: x509"},
		{name: "ca.key missing", data: with(keyCAKey, nil), wantSigner: "ca.key: missing", wantTrusted: 2},
		{name: "ca.key of another CA", data: with(keyCAKey, old.keyPEM), wantSigner: "ca.key does not match the certificate in ca.crt", wantTrusted: 2},
		{name: "ca.key corrupt", data: with(keyCAKey, rsaKey), wantSigner: "ca.key: parsing RSA PRIVATE KEY: asn1", wantTrusted: 2},
		{name: "ca.key wrong PEM type", data: with(keyCAKey, serving.certPEM), wantSigner: `ca.key: PEM type "CERTIFICATE"`, wantTrusted: 2},
		{name: "first of ca.crt is not a CA", data: with(keyCACert, serving.certPEM), wantSigner: "ca.key does not match", wantTrusted: 1},
		{name: "tls.key of another pair", data: with(keyTLSKey, ca.keyPEM), wantServer: "tls.key does not match the certificate in tls.crt", wantTrusted: 2},
		{name: "tls.crt missing", data: with(keyTLSCert, []byte("\n")), wantServer: "tls.crt: missing", wantTrusted: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parseStored(tc.data)
			checkErr(t, "signer", s.signerErr, tc.wantSigner)
			checkErr(t, "serving", s.servingErr, tc.wantServer)
			if (s.signer == nil) != (s.signerErr != nil) || (s.serving == nil) != (s.servingErr != nil) {
				t.Errorf("signer %v with error %v, serving %v with error %v: want exactly one of each", s.signer != nil, s.signerErr, s.serving != nil, s.servingErr)
			}
			if len(s.trusted) != tc.wantTrusted {
				t.Errorf("%d trusted CAs, want %d", len(s.trusted), tc.wantTrusted)
			}
		})
	}
}

func TestParseCANotCA(t *testing.T) {
	ca := mustCA(t, t0, time.Hour)
	leaf := mustServing(t, ca, []string{"a"}, t0, time.Hour)
	_, _, err := parseCA(leaf.certPEM, leaf.keyPEM)
	checkErr(t, "parseCA", err, `ca.crt: first certificate "a" is not a CA`)
}

func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one containing %q", what, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q, want it to contain %q", what, err, want)
	}
}
