package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxSecretRaces bounds how often syncSecret re-reads after losing a race
// with another replica before giving up until the next round.
const maxSecretRaces = 5

// syncSecret brings the shared Secret in line with the renewal policy and
// returns its data as stored afterwards, with the decision about that data.
// Every replica runs it: whoever writes first wins (create, or update at the
// resourceVersion it read); the others get AlreadyExists or Conflict,
// re-read, and find nothing left to do.
func (m *selfManaged) syncSecret(ctx context.Context, published func(ca *x509.Certificate) bool) (map[string][]byte, decision, error) {
	key := client.ObjectKey{Namespace: m.opts.ServiceNamespace, Name: m.opts.SecretName}
	for range maxSecretRaces {
		var secret corev1.Secret
		err := m.client.Get(ctx, key, &secret)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, decision{}, fmt.Errorf("reading secret %s: %w", key, err)
		}

		pol := policy{
			now:              m.opts.Clock.Now(),
			dnsNames:         m.dnsNames,
			propagationDelay: m.opts.PropagationDelay,
			published:        published,
		}
		s := parseStored(secret.Data)
		d := decide(s, pol)
		next, err := issue(s, d, pol.now, m.dnsNames, m.opts.CAValidity, m.opts.ServingValidity)
		if err != nil {
			return nil, d, err
		}
		if sameData(secret.Data, next) {
			return secret.Data, d, nil
		}

		if !exists {
			secret = corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: secretLabels},
				Type:       corev1.SecretTypeTLS,
				Data:       next,
			}
			err = m.client.Create(ctx, &secret)
		} else {
			if secret.Data == nil {
				secret.Data = map[string][]byte{}
			}
			for k, v := range next {
				secret.Data[k] = v
			}
			err = m.client.Update(ctx, &secret)
		}
		switch {
		case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
			m.opts.Log.V(1).Info("another replica wrote the secret first; re-reading", "secret", key)
			continue
		case err != nil:
			return nil, d, fmt.Errorf("writing secret %s: %w", key, err)
		}
		stored := parseStored(next)
		m.opts.Log.Info("stored certificates", "secret", key, "newCA", d.newCA, "newServing", d.newServing, "trustedCAs", len(stored.trusted))
		return next, decide(stored, pol), nil
	}
	return nil, decision{}, fmt.Errorf("writing secret %s: lost %d races with other replicas in a row", key, maxSecretRaces)
}

// secretLabels mark the Secret self-managed mode creates.
var secretLabels = map[string]string{
	"app.kubernetes.io/name":       "meshinit",
	"app.kubernetes.io/component":  "webhook-certs",
	"app.kubernetes.io/managed-by": "meshinit-webhook",
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
