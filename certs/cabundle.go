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
	"slices"
	"time"

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

// publishCABundle writes the caBundle into every webhook of the
// MutatingWebhookConfiguration: the Secret's CAs, and the CAs already
// published that bundleFor keeps (see orphansRetireAt for retire). It
// patches at the resourceVersion it read, re-reading on conflict, and does
// nothing when every webhook holds that bundle already. It returns the CAs
// then published in every webhook.
func (m *selfManaged) publishCABundle(ctx context.Context, secretCAs []*x509.Certificate, now, retire time.Time) ([]*x509.Certificate, error) {
	if m.opts.WebhookConfigName == "" {
		return nil, nil
	}
	var published []*x509.Certificate
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := m.getWebhookConfig(ctx)
		if err != nil {
			return err
		}
		if cfg == nil {
			return fmt.Errorf("mutatingwebhookconfiguration %s not found", m.opts.WebhookConfigName)
		}
		_, inAny := caBundleCAs(cfg)
		bundle := bundleFor(secretCAs, inAny, now, retire)
		orig := cfg.DeepCopy()
		if setCABundle(cfg, encodeCertsPEM(bundle)) {
			if err := m.client.Patch(ctx, cfg, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("patching caBundle of mutatingwebhookconfiguration %s: %w", cfg.Name, err)
			}
			m.opts.Log.Info("patched caBundle", "mutatingWebhookConfiguration", cfg.Name, "webhooks", len(cfg.Webhooks), "cas", len(bundle))
		}
		published, _ = caBundleCAs(cfg)
		return nil
	})
	return published, err
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
	inEvery, _ := caBundleCAs(cfg)
	return func(ca *x509.Certificate) bool {
		switch {
		case cfgName == "":
			return true
		case cfg == nil:
			return false
		case len(cfg.Webhooks) == 0:
			return true
		}
		return slices.ContainsFunc(inEvery, ca.Equal)
	}
}

// caBundleCAs are the certificates in the caBundle of every webhook of cfg
// and those in the caBundle of any, in order of appearance. A caBundle that
// does not parse holds none.
func caBundleCAs(cfg *admissionregistrationv1.MutatingWebhookConfiguration) (inEvery, inAny []*x509.Certificate) {
	if cfg == nil {
		return nil, nil
	}
	for i, w := range cfg.Webhooks {
		certs, _ := ParseCertsPEM(w.ClientConfig.CABundle)
		if i == 0 {
			inEvery = certs
		} else {
			inEvery = slices.DeleteFunc(slices.Clone(inEvery), func(c *x509.Certificate) bool { return !slices.ContainsFunc(certs, c.Equal) })
		}
		for _, c := range certs {
			if !slices.ContainsFunc(inAny, c.Equal) {
				inAny = append(inAny, c)
			}
		}
	}
	return inEvery, inAny
}
