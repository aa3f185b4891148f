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

package webhook

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/meshinit/meshinit/charts"
)

const chartNamespace = "meshinit-system"

// chartWebhookConfig is the chart's MutatingWebhookConfiguration.
func chartWebhookConfig(t *testing.T, values map[string]any) *admissionregistrationv1.MutatingWebhookConfiguration {
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	charts.MustObject(t, charts.Options{Namespace: chartNamespace, Values: values}, "MutatingWebhookConfiguration", "meshinit", &mwc)
	return &mwc
}

func TestChartWebhookConfiguration(t *testing.T) {
	mwc := chartWebhookConfig(t, nil)
	var o ServerOptions
	o.setDefaults()

	if len(mwc.Webhooks) != 2 {
		t.Fatalf("%d webhooks, want 2", len(mwc.Webhooks))
	}
	for _, w := range mwc.Webhooks {
		svc := w.ClientConfig.Service
		switch {
		case svc == nil || svc.Name != "meshinit-webhook" || svc.Namespace != chartNamespace || svc.Path == nil || *svc.Path != o.Path:
			t.Errorf("%s: clientConfig.service %+v, want meshinit-webhook in %s at the server's default path %s", w.Name, svc, chartNamespace, o.Path)
		case len(w.ClientConfig.CABundle) > 0:
			t.Errorf("%s: caBundle set; package certs or cert-manager owns it", w.Name)
		case *w.SideEffects != admissionregistrationv1.SideEffectClassNone:
			t.Errorf("%s: sideEffects %s, want None (kubectl --dry-run=server)", w.Name, *w.SideEffects)
		case *w.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy:
			t.Errorf("%s: reinvocationPolicy %s, want IfNeeded", w.Name, *w.ReinvocationPolicy)
		case *w.FailurePolicy != admissionregistrationv1.Fail:
			t.Errorf("%s: failurePolicy %s, want the default Fail", w.Name, *w.FailurePolicy)
		}
	}
	if _, ok := mwc.Annotations["cert-manager.io/inject-ca-from"]; ok {
		t.Error("self-managed mode: cert-manager.io/inject-ca-from is set")
	}
	cm := chartWebhookConfig(t, map[string]any{"certManager": map[string]any{"enabled": true}})
	if got := cm.Annotations["cert-manager.io/inject-ca-from"]; got != chartNamespace+"/meshinit-webhook" {
		t.Errorf("certManager.enabled: inject-ca-from %q", got)
	}
}

// TestChartSelectorsAgreeWithDecide checks the chart's selectors against
// the Go decision for every combination of labels: a pod the webhook would
// inject is sent to it by exactly one entry, and no pod is sent twice.
func TestChartSelectorsAgreeWithDecide(t *testing.T) {
	mwc := chartWebhookConfig(t, nil)
	c := &Config{Namespace: chartNamespace}
	for _, ns := range []string{"app", "kube-system", chartNamespace} {
		for _, nsLabel := range []string{"", "enabled", "disabled", "other"} {
			for _, podLabel := range []string{"", "true", "false", "yes"} {
				nsLabels := labels.Set{"kubernetes.io/metadata.name": ns}
				if nsLabel != "" {
					nsLabels[NamespaceLabel] = nsLabel
				}
				podLabels := labels.Set{}
				if podLabel != "" {
					podLabels[PodLabel] = podLabel
				}
				matched := 0
				for _, w := range mwc.Webhooks {
					if selects(t, w.NamespaceSelector, nsLabels) && selects(t, w.ObjectSelector, podLabels) {
						matched++
					}
				}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}}
				d := decide(subject{pod: pod, namespace: ns, namespaceLabels: nsLabels}, c)
				if matched > 1 || (d.Inject && matched != 1) {
					t.Errorf("namespace %s %s=%q, pod %s=%q: %d entries match, decision %+v", ns, NamespaceLabel, nsLabel, PodLabel, podLabel, matched, d)
				}
			}
		}
	}
}

func selects(t *testing.T, s *metav1.LabelSelector, set labels.Set) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel.Matches(set)
}

func TestChartConfigFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, c Config)
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			if c.Image != "ghcr.io/meshinit/redirector:"+appVersion(t) || c.Placement != PlaceFirst || c.PodSecurity != PodSecurityWarn {
				t.Errorf("config %+v", c)
			}
		}},
		{name: "overrides", values: map[string]any{"inject": map[string]any{
			"image":       map[string]any{"repository": "registry.local/redirector", "tag": "v9"},
			"placement":   "last",
			"podSecurity": "deny",
			"privileged":  true,
			// A number from a values file arrives as a float64; large ones
			// must not render in exponent form.
			"redirect": map[string]any{"inbound-proxy-port": 16006, "proxy-uid": float64(4294967294), "exclude-outbound-ports": "22,53"},
		}}, check: func(t *testing.T, c Config) {
			if c.Image != "registry.local/redirector:v9" || c.Placement != PlaceLast || c.PodSecurity != PodSecurityDeny || !c.Privileged ||
				c.redirect.InboundProxyPort != 16006 || c.redirect.ProxyUID != 4294967294 || c.redirect.ExcludeOutboundPorts.String() != "22,53" {
				t.Errorf("config %+v", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cm corev1.ConfigMap
			charts.MustObject(t, charts.Options{Namespace: chartNamespace, Values: tc.values}, "ConfigMap", "meshinit-webhook", &cm)
			c, err := ParseConfig([]byte(cm.Data["config.yaml"]), chartNamespace)
			if err != nil {
				t.Fatalf("the chart's config.yaml:\n%s\ndoes not parse: %v", cm.Data["config.yaml"], err)
			}
			tc.check(t, c)
		})
	}
}

func appVersion(t *testing.T) string {
	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	return ch.Metadata.AppVersion
}
