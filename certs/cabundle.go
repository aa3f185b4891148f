package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// getWebhookConfig reads the MutatingWebhookConfiguration; nil, nil when
// none is configured or it does not exist (yet).
func (m *selfManaged) getWebhookConfig(ctx context.Context) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	if m.opts.WebhookConfigName == "" {
		return nil, nil
	}
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	err := m.client.Get(ctx, client.ObjectKey{Name: m.opts.WebhookConfigName}, &cfg)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading mutatingwebhookconfiguration %s: %w", m.opts.WebhookConfigName, err)
	}
	return &cfg, nil
}

// publishCABundle writes bundle into the caBundle of every webhook of the
// MutatingWebhookConfiguration, patching at the resourceVersion it read and
// re-reading on conflict. It is a no-op when all of them hold it already.
func (m *selfManaged) publishCABundle(ctx context.Context, bundle []byte) error {
	if m.opts.WebhookConfigName == "" {
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := m.getWebhookConfig(ctx)
		if err != nil {
			return err
		}
		if cfg == nil {
			return fmt.Errorf("mutatingwebhookconfiguration %s not found", m.opts.WebhookConfigName)
		}
		orig := cfg.DeepCopy()
		if !setCABundle(cfg, bundle) {
			return nil
		}
		if err := m.client.Patch(ctx, cfg, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching caBundle of mutatingwebhookconfiguration %s: %w", cfg.Name, err)
		}
		m.opts.Log.Info("patched caBundle", "mutatingWebhookConfiguration", cfg.Name, "webhooks", len(cfg.Webhooks))
		return nil
	})
}

// setCABundle sets bundle on every webhook of cfg and reports whether any
// changed.
func setCABundle(cfg *admissionregistrationv1.MutatingWebhookConfiguration, bundle []byte) bool {
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle) {
			cfg.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	return changed
}

// publishedIn returns whether ca is in the caBundle of every webhook of cfg:
// once the API servers have read cfg, they trust certificates ca signs. A
// missing cfg publishes nothing; no configuration to keep (cfgName empty)
// publishes everything.
func publishedIn(cfgName string, cfg *admissionregistrationv1.MutatingWebhookConfiguration) func(ca *x509.Certificate) bool {
	return func(ca *x509.Certificate) bool {
		if cfgName == "" {
			return true
		}
		if cfg == nil {
			return false
		}
		for _, w := range cfg.Webhooks {
			certs, err := parseCertsPEM(w.ClientConfig.CABundle)
			if err != nil || !slices.ContainsFunc(certs, ca.Equal) {
				return false
			}
		}
		return true
	}
}
