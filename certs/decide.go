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
	"fmt"
	"slices"
	"time"
)

// policy is what decide weighs the stored certificates against.
type policy struct {
	now      time.Time
	dnsNames []string
	// propagationDelay: see Options.PropagationDelay.
	propagationDelay time.Duration
	// published reports whether the caBundle every API server reads holds ca.
	published func(ca *x509.Certificate) bool
}

// decision says what to replace in the Secret and why. Empty reasons keep.
type decision struct {
	// newCA is why a new signing CA is issued.
	newCA string
	// newServing is why a new serving certificate is issued.
	newServing string
	// waiting is why a due serving certificate is not replaced yet.
	waiting string
	// recheck is the earliest time after now the decision may change
	// (zero: nothing scheduled).
	recheck time.Time
}

// decide is the renewal policy, a pure function of what is stored and when.
//
//   - The CA is replaced when unusable or at its renewal time. The old one
//     stays in the caBundle until it expires.
//   - The serving certificate is replaced at once when unusable: missing,
//     expired, for other DNS names, or signed by no trusted unexpired CA.
//   - It is replaced by one from a new CA only once that CA has propagated:
//     published in the caBundle and PropagationDelay old. Meanwhile the
//     current one, signed by the previous CA, keeps being served.
//   - Otherwise it is renewed at its renewal time.
func decide(s stored, p policy) decision {
	var d decision
	switch {
	case s.signerErr != nil:
		d.newCA = s.signerErr.Error()
	case !p.now.Before(renewalTime(s.signer.cert)):
		d.newCA = fmt.Sprintf("CA %q reached its renewal time %s", s.signer.cert.Subject.CommonName, renewalTime(s.signer.cert).UTC().Format(time.RFC3339))
	}

	switch {
	case s.servingErr != nil:
		d.newServing = s.servingErr.Error()
	case !p.now.Before(s.serving.cert.NotAfter):
		d.newServing = fmt.Sprintf("serving certificate expired at %s", s.serving.cert.NotAfter.UTC().Format(time.RFC3339))
	case !slices.Equal(s.serving.cert.DNSNames, p.dnsNames):
		d.newServing = fmt.Sprintf("serving certificate is for %v, want %v", s.serving.cert.DNSNames, p.dnsNames)
	case !signedByAny(s.serving.cert, unexpired(s.trusted, p.now)):
		d.newServing = fmt.Sprintf("serving certificate's issuer %q is not a trusted unexpired CA", s.serving.cert.Issuer.CommonName)
	case d.newCA != "":
		// Keep serving the current one while the new CA propagates.
	case s.serving.cert.CheckSignatureFrom(s.signer.cert) != nil:
		at := propagatedTime(s.signer.cert, p.propagationDelay)
		switch {
		case !p.published(s.signer.cert):
			d.waiting = fmt.Sprintf("new CA %q is not in the caBundle yet", s.signer.cert.Subject.CommonName)
		case p.now.Before(at):
			d.waiting = fmt.Sprintf("new CA %q propagates until %s", s.signer.cert.Subject.CommonName, at.UTC().Format(time.RFC3339))
		default:
			d.newServing = fmt.Sprintf("new CA %q has propagated", s.signer.cert.Subject.CommonName)
		}
	case !p.now.Before(renewalTime(s.serving.cert)):
		d.newServing = fmt.Sprintf("serving certificate reached its renewal time %s", renewalTime(s.serving.cert).UTC().Format(time.RFC3339))
	}

	d.recheck = earliestAfter(p.now, recheckTimes(s, p)...)
	return d
}

// recheckTimes are the instants at which decide may decide differently.
func recheckTimes(s stored, p policy) []time.Time {
	var ts []time.Time
	if s.signer != nil {
		ts = append(ts, renewalTime(s.signer.cert), propagatedTime(s.signer.cert, p.propagationDelay))
	}
	if s.serving != nil {
		ts = append(ts, renewalTime(s.serving.cert), s.serving.cert.NotAfter)
	}
	for _, c := range s.trusted {
		ts = append(ts, c.NotAfter)
	}
	return ts
}

// earliestAfter is the earliest of ts after now, zero if none.
func earliestAfter(now time.Time, ts ...time.Time) time.Time {
	var best time.Time
	for _, t := range ts {
		if t.After(now) && (best.IsZero() || t.Before(best)) {
			best = t
		}
	}
	return best
}

// issue carries out d: it returns the Secret data holding the kept and the
// newly issued certificates, and the trust bundle with expired CAs dropped.
func issue(s stored, d decision, now time.Time, dnsNames []string, caValidity, servingValidity time.Duration) (map[string][]byte, error) {
	signer := s.signer
	if d.newCA != "" {
		var err error
		if signer, err = newCA(caCommonName(now), now, caValidity); err != nil {
			return nil, err
		}
	}
	serving := s.serving
	if d.newServing != "" {
		var err error
		if serving, err = newServing(signer, dnsNames, nil, now, servingValidity); err != nil {
			return nil, err
		}
	}
	trusted := []*x509.Certificate{signer.cert}
	for _, c := range unexpired(s.trusted, now) {
		if c.IsCA && !slices.ContainsFunc(trusted, c.Equal) {
			trusted = append(trusted, c)
		}
	}
	return map[string][]byte{
		keyCACert:  encodeCertsPEM(trusted),
		keyCAKey:   signer.keyPEM,
		keyTLSCert: serving.certPEM,
		keyTLSKey:  serving.keyPEM,
	}, nil
}

// unexpired are the certificates of cs still valid at now.
func unexpired(cs []*x509.Certificate, now time.Time) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range cs {
		if now.Before(c.NotAfter) {
			out = append(out, c)
		}
	}
	return out
}

// signedByAny reports whether one of cas signed c.
func signedByAny(c *x509.Certificate, cas []*x509.Certificate) bool {
	return slices.ContainsFunc(cas, func(ca *x509.Certificate) bool { return c.CheckSignatureFrom(ca) == nil })
}
