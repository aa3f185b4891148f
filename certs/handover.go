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

// A replica serves the Secret's serving certificate only once the API
// servers trust its CA, and a CA leaves the caBundle only once no replica
// can still be serving a certificate it signed. decide already orders a CA
// rotation that way; these rules also cover a Secret that changes under the
// replicas (deleted and re-created, restored from a backup, edited): the
// caBundle keeps every unexpired CA already published next to the Secret's
// (orphans: published CAs the Secret no longer holds), each replica keeps
// its cert dir until the new certificate's CA has propagated, and orphans
// are retired once every replica has had time to switch.

// sightings remember when this replica first saw each CA published (in the
// caBundle of every webhook), keyed by the certificate's DER. In memory
// only: after a restart every CA counts as just seen, which only delays.
type sightings map[string]time.Time

// observe records cas as published at now and forgets the CAs not in cas.
func (s sightings) observe(cas []*x509.Certificate, now time.Time) sightings {
	next := make(sightings, len(cas))
	for _, ca := range cas {
		if at, ok := s[string(ca.Raw)]; ok {
			next[string(ca.Raw)] = at
		} else {
			next[string(ca.Raw)] = now
		}
	}
	return next
}

// issuerSeen is the earliest time a published CA that signed cert was first
// seen; false when no published CA signed it.
func (s sightings) issuerSeen(cert *x509.Certificate, published []*x509.Certificate) (time.Time, bool) {
	var at time.Time
	found := false
	for _, ca := range published {
		since, ok := s[string(ca.Raw)]
		if ok && cert.CheckSignatureFrom(ca) == nil && (!found || since.Before(at)) {
			at, found = since, true
		}
	}
	return at, found
}

// handover is whether the cert dir switches from what it serves to the
// Secret's serving certificate now, else why not and when to look again.
type handover struct {
	now     bool
	waiting string
	recheck time.Time
}

// decideHandover decides whether the cert dir switches from current (the
// certificate it serves; nil when it serves nothing usable: missing,
// expired, for other names) to next, the Secret's. It switches when current
// is unusable or no longer trusted (it fails anyway), when the CA that
// signed current signed next too (a renewal: the trust is the same), or
// when next's CA has been published for delay, long enough for every API
// server to have read it. published are the CAs in the caBundle of every
// webhook, seen their sightings.
func decideHandover(current, next *x509.Certificate, published []*x509.Certificate, seen sightings, now time.Time, delay time.Duration) handover {
	if current == nil || current.Equal(next) {
		return handover{now: true}
	}
	if _, ok := seen.issuerSeen(current, published); !ok {
		return handover{now: true}
	}
	for _, ca := range published {
		if current.CheckSignatureFrom(ca) == nil && next.CheckSignatureFrom(ca) == nil {
			return handover{now: true}
		}
	}
	since, ok := seen.issuerSeen(next, published)
	if !ok {
		return handover{waiting: fmt.Sprintf("the caBundle does not hold the CA %q of the new serving certificate yet", next.Issuer.CommonName)}
	}
	at := since.Add(delay)
	if now.Before(at) {
		return handover{waiting: fmt.Sprintf("the CA %q of the new serving certificate propagates until %s", next.Issuer.CommonName, at.UTC().Format(time.RFC3339)), recheck: at}
	}
	return handover{now: true}
}

// orphansRetireAt is when the CAs published but no longer in the Secret
// leave the caBundle: every replica switches to the Secret's serving
// certificate (serving) delay after first seeing its CA published, and
// sees it within resync (or at once, watching); a further delay covers
// replicas that saw it late. Zero while serving's CA is not published.
func orphansRetireAt(serving *x509.Certificate, published []*x509.Certificate, seen sightings, delay, resync time.Duration) time.Time {
	since, ok := seen.issuerSeen(serving, published)
	if !ok {
		return time.Time{}
	}
	return since.Add(2*delay + resync)
}

// bundleFor is the caBundle to publish: the Secret's CAs (signer first),
// then the unexpired CAs already published (in any webhook) that the Secret
// no longer holds, unless retire (the orphans' time, zero: never) has come.
func bundleFor(secretCAs, published []*x509.Certificate, now, retire time.Time) []*x509.Certificate {
	out := slices.Clone(secretCAs)
	if !retire.IsZero() && !now.Before(retire) {
		return out
	}
	for _, ca := range unexpired(published, now) {
		if ca.IsCA && !slices.ContainsFunc(out, ca.Equal) {
			out = append(out, ca)
		}
	}
	return out
}
