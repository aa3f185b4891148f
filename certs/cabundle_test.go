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
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestSetCABundle(t *testing.T) {
	bundle := []byte("bundle")
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "a", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: bundle}},
		{Name: "b"},
	}}
	if !setCABundle(cfg, bundle) {
		t.Error("setCABundle reported no change though webhook b had no caBundle")
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			t.Errorf("webhook %s caBundle %q, want %q", w.Name, w.ClientConfig.CABundle, bundle)
		}
	}
	if setCABundle(cfg, bundle) {
		t.Error("setCABundle reported a change on a second call")
	}
}

func TestPublishedIn(t *testing.T) {
	ca, other := mustCA(t, t0, caLife), mustCA(t, t0, caLife)
	both := append(append([]byte{}, other.certPEM...), ca.certPEM...)
	cfg := func(bundles ...[]byte) *admissionregistrationv1.MutatingWebhookConfiguration {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		for _, b := range bundles {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: b}})
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		cfgName string
		cfg     *admissionregistrationv1.MutatingWebhookConfiguration
		want    bool
	}{
		{"no configuration kept", "", nil, true},
		{"configuration missing", "meshinit", nil, false},
		{"in every webhook's bundle", "meshinit", cfg(both, ca.certPEM), true},
		{"missing from one webhook", "meshinit", cfg(both, other.certPEM), false},
		{"one webhook without caBundle", "meshinit", cfg(ca.certPEM, nil), false},
		{"no webhooks", "meshinit", cfg(), true},
	} {
		if got := publishedIn(tc.cfgName, tc.cfg)(ca.cert); got != tc.want {
			t.Errorf("%s: published = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCABundleCAs(t *testing.T) {
	a, b := mustCA(t, t0, caLife), mustCA(t, t0, caLife)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: append(append([]byte{}, a.certPEM...), b.certPEM...)}},
		{ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: b.certPEM}},
		{ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: append(append([]byte{}, b.certPEM...), a.certPEM...)}},
	}}
	inEvery, inAny := caBundleCAs(cfg)
	if len(inEvery) != 1 || !inEvery[0].Equal(b.cert) || len(inAny) != 2 || !inAny[0].Equal(a.cert) || !inAny[1].Equal(b.cert) {
		t.Errorf("in every webhook %v, in any %v; want [b], [a b]", commonNames(inEvery), commonNames(inAny))
	}
	cfg.Webhooks[1].ClientConfig.CABundle = []byte("not PEM")
	if inEvery, inAny := caBundleCAs(cfg); len(inEvery) != 0 || len(inAny) != 2 {
		t.Errorf("with a caBundle that does not parse: in every webhook %d, in any %d; want 0 and 2", len(inEvery), len(inAny))
	}
}
