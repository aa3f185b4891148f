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
	"bytes"
	"context"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Self-managed mode keeps its certificates in two Secrets the chart
// creates (empty, type Opaque) and the webhook may only read and update,
// by name: the CA Secret (Options.CASecretName) holds the CA key and the
// trust bundle (ca.crt, ca.key); the serving Secret (Options.SecretName)
// the serving certificate, its key and a copy of the trust bundle (tls.crt,
// tls.key, ca.crt): whatever reads the serving certificate never reads the
// CA key. A release from before kept all four in one Secret
// (Options.LegacySecretName), which the first replica that finds the two
// empty moves into them and deletes.

// maxSecretRaces bounds how often syncSecret re-reads after losing a race
// with another replica before giving up until the next round.
const maxSecretRaces = 5

// caKeys and servingKeys are what each Secret holds.
var (
	caKeys      = []string{keyCACert, keyCAKey}
	servingKeys = []string{keyTLSCert, keyTLSKey, keyCACert}
)

// syncSecret brings the two Secrets in line with the renewal policy and
// returns their data as stored afterwards (the four keys together), with
// the decision about that data. Every replica runs it: whoever writes first
// wins (an update at the resourceVersion it read, the CA Secret before the
// serving one, so the serving certificate's CA is always stored); the
// others get a Conflict, re-read, and find nothing left to do.
func (m *selfManaged) syncSecret(ctx context.Context, published func(ca *x509.Certificate) bool) (map[string][]byte, decision, error) {
	for range maxSecretRaces {
		var ca, serving corev1.Secret
		if err := m.getSecret(ctx, m.opts.CASecretName, &ca); err != nil {
			return nil, decision{}, err
		}
		if err := m.getSecret(ctx, m.opts.SecretName, &serving); err != nil {
			return nil, decision{}, err
		}
		data := joined(&ca, &serving)
		legacy, err := m.legacy(ctx, data)
		if err != nil {
			return nil, decision{}, err
		}
		if legacy != nil {
			data = legacy
		}

		pol := policy{
			now:              m.opts.Clock.Now(),
			dnsNames:         m.dnsNames,
			propagationDelay: m.opts.PropagationDelay,
			published:        published,
		}
		s := parseStored(data)
		d := decide(s, pol)
		next, err := issue(s, d, pol.now, m.dnsNames, m.opts.CAValidity, m.opts.ServingValidity)
		if err != nil {
			return nil, d, err
		}
		if sameData(data, next) && holds(&ca, next, caKeys) && holds(&serving, next, servingKeys) {
			return data, d, nil
		}

		// The CA first: a serving certificate is never stored before its CA.
		err = m.update(ctx, &ca, next, caKeys)
		if err == nil {
			err = m.update(ctx, &serving, next, servingKeys)
		}
		switch {
		case apierrors.IsConflict(err):
			m.opts.Log.V(1).Info("another replica wrote a secret first; re-reading")
			continue
		case err != nil:
			return nil, d, err
		}
		stored := parseStored(next)
		m.opts.Log.Info("stored certificates", "caSecret", m.opts.CASecretName, "secret", m.opts.SecretName,
			"newCA", d.newCA, "newServing", d.newServing, "trustedCAs", len(stored.trusted), "movedFrom", m.movedFrom(legacy))
		if legacy != nil {
			m.deleteLegacy(ctx)
		}
		return next, decide(stored, pol), nil
	}
	return nil, decision{}, fmt.Errorf("writing secrets %s and %s: lost %d races with other replicas in a row", m.opts.CASecretName, m.opts.SecretName, maxSecretRaces)
}

// getSecret reads the Secret name of the service's namespace into s.
func (m *selfManaged) getSecret(ctx context.Context, name string, s *corev1.Secret) error {
	key := client.ObjectKey{Namespace: m.opts.ServiceNamespace, Name: name}
	err := m.client.Get(ctx, key, s)
	switch {
	case apierrors.IsNotFound(err):
		// Deleted: the replicas keep serving what their cert dirs hold.
		return fmt.Errorf("secret %s not found: the chart creates it (helm upgrade re-creates it); until then the served certificate is kept and not renewed", key)
	case err != nil:
		return fmt.Errorf("reading secret %s: %w", key, err)
	}
	return nil
}

// joined is the four keys of the two Secrets as one map: the CA Secret's
// ca.crt and ca.key, the serving Secret's tls.crt and tls.key.
func joined(ca, serving *corev1.Secret) map[string][]byte {
	return map[string][]byte{
		keyCACert:  ca.Data[keyCACert],
		keyCAKey:   ca.Data[keyCAKey],
		keyTLSCert: serving.Data[keyTLSCert],
		keyTLSKey:  serving.Data[keyTLSKey],
	}
}

// legacy returns the certificates of a release from before the two
// Secrets, when LegacySecretName holds some and the two hold nothing else:
// nothing yet, or part of the same certificates, written by a replica that
// is moving them (it stores the CA Secret first: another replica that reads
// between its two writes finishes the move, rather than issue a serving
// certificate of its own under the moved CA); else nil.
func (m *selfManaged) legacy(ctx context.Context, data map[string][]byte) (map[string][]byte, error) {
	if m.opts.LegacySecretName == "" || m.legacyGone {
		return nil, nil
	}
	var old corev1.Secret
	err := m.client.Get(ctx, client.ObjectKey{Namespace: m.opts.ServiceNamespace, Name: m.opts.LegacySecretName}, &old)
	switch {
	case apierrors.IsNotFound(err):
		m.legacyGone = true
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading secret %s/%s of the previous layout: %w", m.opts.ServiceNamespace, m.opts.LegacySecretName, err)
	}
	moved := joined(&corev1.Secret{Data: old.Data}, &corev1.Secret{Data: old.Data})
	for k, v := range data {
		if len(v) > 0 && !bytes.Equal(v, moved[k]) {
			return nil, nil // the two hold certificates of their own
		}
	}
	s := parseStored(old.Data)
	if s.signerErr != nil || s.servingErr != nil {
		m.opts.Log.Info("not moving the certificates of the previous layout: unusable", "secret", m.opts.LegacySecretName, "ca", errString(s.signerErr), "serving", errString(s.servingErr))
		return nil, nil
	}
	return moved, nil
}

// deleteLegacy deletes the Secret of the previous layout once its
// certificates were moved, so the CA key is kept in one place.
func (m *selfManaged) deleteLegacy(ctx context.Context) {
	old := &corev1.Secret{}
	old.Namespace, old.Name = m.opts.ServiceNamespace, m.opts.LegacySecretName
	if err := m.client.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
		m.opts.Log.Error(err, "deleting the secret of the previous layout; delete it by hand, it holds the CA key", "secret", m.opts.LegacySecretName)
		return
	}
	m.legacyGone = true
}

func (m *selfManaged) movedFrom(legacy map[string][]byte) string {
	if legacy == nil {
		return ""
	}
	return m.opts.LegacySecretName
}

// update writes keys of data into s, at the resourceVersion read, when they
// differ.
func (m *selfManaged) update(ctx context.Context, s *corev1.Secret, data map[string][]byte, keys []string) error {
	if holds(s, data, keys) {
		return nil
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for _, k := range keys {
		s.Data[k] = data[k]
	}
	if err := m.client.Update(ctx, s); err != nil {
		if apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("writing secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// holds reports whether s holds keys of data unchanged.
func holds(s *corev1.Secret, data map[string][]byte, keys []string) bool {
	for _, k := range keys {
		if !bytes.Equal(s.Data[k], data[k]) {
			return false
		}
	}
	return true
}

// sameData reports whether stored holds every entry of want unchanged.
func sameData(stored, want map[string][]byte) bool {
	for k, v := range want {
		if !bytes.Equal(stored[k], v) {
			return false
		}
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
