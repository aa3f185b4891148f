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
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestRotationNeverBreaksTrust walks a fake clock through several CA and
// serving certificate lifetimes, deciding and issuing at every step as the
// replicas do. An API server that sees caBundle patches lag behind must
// verify the certificate served by a replica that applies the Secret at
// once, and by one that applies it a step late, at every step.
func TestRotationNeverBreaksTrust(t *testing.T) {
	const (
		step  = time.Hour
		delay = 6 * time.Hour
		lag   = 3 * time.Hour // API servers see a caBundle patch this late (< delay - step)
	)
	names := DNSNames("svc", "ns")
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a"}, {Name: "b"}},
	}
	type patch struct {
		at     time.Time
		bundle []byte
	}
	var patches []patch
	seenByAPIServer := func(now time.Time) *x509.CertPool {
		pool := x509.NewCertPool()
		for _, p := range patches {
			if !p.at.After(now.Add(-lag)) {
				pool = x509.NewCertPool()
				pool.AppendCertsFromPEM(p.bundle)
			}
		}
		return pool
	}

	var data, previous map[string][]byte
	var cas, servings int
	for now := t0; now.Before(t0.Add(3 * caLife)); now = now.Add(step) {
		s := parseStored(data)
		d := decide(s, policy{now: now, dnsNames: names, propagationDelay: delay, published: publishedIn("cfg", cfg)})
		next, err := issue(s, d, now, names, caLife, servLife)
		if err != nil {
			t.Fatal(err)
		}
		if d.newCA != "" {
			cas++
		}
		if d.newServing != "" {
			servings++
		}
		if n := len(parseStored(next).trusted); n > 2 {
			t.Fatalf("%s: %d CAs in the caBundle, want at most 2", now, n)
		}
		if setCABundle(cfg, next[keyCACert]) {
			patches = append(patches, patch{now, next[keyCACert]})
		}
		previous, data = data, next

		if now.Before(t0.Add(lag)) {
			continue // installing: nothing trusted yet
		}
		roots := seenByAPIServer(now)
		for replica, served := range map[string]map[string][]byte{"up to date": data, "one step late": previous} {
			cert := parseStored(served).serving.cert
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: names[2], Roots: roots, CurrentTime: now}); err != nil {
				t.Fatalf("%s: the API server rejects the certificate served by the replica %s (issued %s by %q): %v",
					now.Sub(t0), replica, cert.NotBefore, cert.Issuer.CommonName, err)
			}
		}
	}
	// 3 CA lifetimes, each CA replaced at 2/3 of its own: 1 + 4; serving
	// certificates every 6 days or sooner.
	if want := 3 * int(caLife/(servLife*2/3)); cas != 5 || servings < want {
		t.Errorf("issued %d CAs and %d serving certificates, want 5 and at least %d", cas, servings, want)
	}
}
