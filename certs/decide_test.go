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
	"strings"
	"testing"
	"time"
)

const (
	day      = 24 * time.Hour
	caLife   = 30 * day
	servLife = 9 * day
	delay    = time.Hour
)

func TestRenewalTime(t *testing.T) {
	for _, tc := range []struct {
		notBefore, notAfter, want time.Time
	}{
		{t0, t0.Add(90 * day), t0.Add(60 * day)},
		{t0, t0.Add(30 * time.Second), t0.Add(20 * time.Second)},
		{t0.Add(-time.Minute), t0.Add(179 * time.Minute), t0.Add(119 * time.Minute)},
	} {
		if got := renewalTime(&x509.Certificate{NotBefore: tc.notBefore, NotAfter: tc.notAfter}); !got.Equal(tc.want) {
			t.Errorf("renewalTime(%s..%s) = %s, want %s", tc.notBefore, tc.notAfter, got, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	names := DNSNames("svc", "ns")
	ca := mustCA(t, t0, caLife)
	serving := mustServing(t, ca, names, t0, servLife)
	// A CA issued at its predecessor's renewal time, and what happens next.
	rotatedAt := renewalTime(ca.cert)
	newCA := mustCA(t, rotatedAt, caLife)
	oldServing := mustServing(t, ca, names, rotatedAt.Add(-day), servLife)
	foreign := mustCA(t, t0, caLife)

	all := func(*x509.Certificate) bool { return true }
	none := func(*x509.Certificate) bool { return false }
	only := func(c *x509.Certificate) func(*x509.Certificate) bool { return c.Equal }

	for _, tc := range []struct {
		name                             string
		data                             map[string][]byte
		now                              time.Time
		published                        func(*x509.Certificate) bool
		wantCA, wantServing, wantWaiting string // substrings; "" = keep / not waiting
		wantRecheck                      time.Time
	}{
		{
			name: "empty secret: issue both", data: nil, now: t0, published: none,
			wantCA: "ca.crt: missing", wantServing: "tls.crt: missing",
		},
		{
			name: "fresh: keep, recheck at the serving renewal", data: secretData(ca, nil, serving), now: t0.Add(time.Hour), published: all,
			wantRecheck: renewalTime(serving.cert),
		},
		{
			name: "serving certificate at its renewal time", data: secretData(ca, nil, serving), now: renewalTime(serving.cert), published: all,
			wantServing: "reached its renewal time", wantRecheck: serving.cert.NotAfter,
		},
		{
			name: "serving certificate renewal due, CA unpublished: same CA, renew anyway", data: secretData(ca, nil, serving), now: renewalTime(serving.cert), published: none,
			wantServing: "reached its renewal time", wantRecheck: serving.cert.NotAfter,
		},
		{
			name: "serving certificate expired", data: secretData(ca, nil, serving), now: serving.cert.NotAfter, published: all,
			wantServing: "expired", wantRecheck: renewalTime(ca.cert),
		},
		{
			name: "serving certificate for other names", data: secretData(ca, nil, mustServing(t, ca, DNSNames("old", "ns"), t0, servLife)), now: t0, published: all,
			wantServing: "want [svc svc.ns", wantRecheck: propagatedTime(ca.cert, delay),
		},
		{
			name: "serving certificate from a CA nobody trusts", data: secretData(ca, nil, mustServing(t, foreign, names, t0, servLife)), now: t0.Add(2 * time.Hour), published: all,
			wantServing: "is not a trusted unexpired CA", wantRecheck: renewalTime(serving.cert),
		},
		{
			name: "CA at its renewal time: new CA, serving kept", data: secretData(ca, nil, oldServing), now: rotatedAt, published: all,
			wantCA: "reached its renewal time",
		},
		{
			name: "CA key lost: new CA, serving kept (old CA still trusted)", data: func() map[string][]byte {
				d := secretData(ca, nil, serving)
				d[keyCAKey] = nil
				return d
			}(), now: t0.Add(time.Hour), published: all,
			wantCA: "ca.key: missing",
		},
		{
			name: "ca.crt lost: new CA and serving certificate at once", data: func() map[string][]byte {
				d := secretData(ca, nil, serving)
				d[keyCACert] = []byte("garbage")
				return d
			}(), now: t0.Add(time.Hour), published: all,
			wantCA: "ca.crt: block 1: not PEM", wantServing: "is not a trusted unexpired CA",
		},
		{
			name: "new CA not published: wait", data: secretData(newCA, []*keyPair{ca}, oldServing), now: rotatedAt.Add(2 * delay), published: only(ca.cert),
			wantWaiting: "is not in the caBundle yet",
		},
		{
			name: "new CA published but propagating: wait", data: secretData(newCA, []*keyPair{ca}, oldServing), now: rotatedAt, published: all,
			wantWaiting: "propagates until", wantRecheck: propagatedTime(newCA.cert, delay),
		},
		{
			name: "new CA propagated: serve from it", data: secretData(newCA, []*keyPair{ca}, oldServing), now: propagatedTime(newCA.cert, delay), published: all,
			wantServing: "has propagated",
		},
		{
			name: "serving certificate expired while waiting: issue at once", data: secretData(newCA, []*keyPair{ca}, oldServing), now: oldServing.cert.NotAfter, published: none,
			wantServing: "expired",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(parseStored(tc.data), policy{now: tc.now, dnsNames: names, propagationDelay: delay, published: tc.published})
			checkReason(t, "newCA", d.newCA, tc.wantCA)
			checkReason(t, "newServing", d.newServing, tc.wantServing)
			checkReason(t, "waiting", d.waiting, tc.wantWaiting)
			if !tc.wantRecheck.IsZero() && !d.recheck.Equal(tc.wantRecheck) {
				t.Errorf("recheck %s, want %s", d.recheck, tc.wantRecheck)
			}
			if !d.recheck.IsZero() && !d.recheck.After(tc.now) {
				t.Errorf("recheck %s not after now %s", d.recheck, tc.now)
			}
		})
	}
}

func checkReason(t *testing.T, what, got, want string) {
	t.Helper()
	if (want == "") != (got == "") || want != "" && !strings.Contains(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func TestIssue(t *testing.T) {
	names := DNSNames("svc", "ns")
	ca := mustCA(t, t0, caLife)
	expired := mustCA(t, t0.Add(-caLife), caLife-time.Hour)
	serving := mustServing(t, ca, names, t0, servLife)
	s := parseStored(secretData(ca, []*keyPair{expired, ca}, serving))

	t.Run("keep: trust pruned of expired and repeated CAs", func(t *testing.T) {
		data, err := issue(s, decision{}, t0, names, caLife, servLife)
		if err != nil {
			t.Fatal(err)
		}
		want := secretData(ca, nil, serving)
		if !sameData(data, want) || len(data) != len(want) {
			t.Errorf("issue kept nothing but changed the data:\n%s\nwant\n%s", data[keyCACert], want[keyCACert])
		}
	})
	t.Run("new CA: trusted after the signer, serving kept", func(t *testing.T) {
		data, err := issue(s, decision{newCA: "test"}, t0.Add(time.Hour), names, caLife, servLife)
		if err != nil {
			t.Fatal(err)
		}
		next := parseStored(data)
		if next.signerErr != nil || next.servingErr != nil {
			t.Fatalf("unusable result: %v, %v", next.signerErr, next.servingErr)
		}
		if next.signer.cert.Equal(ca.cert) || len(next.trusted) != 2 || !next.trusted[1].Equal(ca.cert) {
			t.Errorf("trusted %d CAs, want the new signer then the old CA", len(next.trusted))
		}
		if !next.serving.cert.Equal(serving.cert) {
			t.Error("serving certificate replaced")
		}
	})
	t.Run("new CA and serving certificate: signed by the new CA", func(t *testing.T) {
		data, err := issue(s, decision{newCA: "test", newServing: "test"}, t0.Add(time.Hour), names, caLife, servLife)
		if err != nil {
			t.Fatal(err)
		}
		next := parseStored(data)
		if err := next.serving.cert.CheckSignatureFrom(next.signer.cert); err != nil {
			t.Errorf("serving certificate not signed by the new CA: %v", err)
		}
	})
}
