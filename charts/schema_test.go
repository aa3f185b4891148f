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

package charts_test

import (
	"strings"
	"testing"

	"github.com/meshinit/meshinit/charts"
)

// TestSchemaRejects checks that values.schema.json refuses bad values with a
// message naming the value, before anything renders.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string // all in the error
	}{
		{"unknown top-level key", map[string]any{"webhok": map[string]any{}}, []string{"webhok"}},
		{"misspelt webhook key", map[string]any{"webhook": map[string]any{"replica": 2}}, []string{"replica"}},
		{"replicas negative", map[string]any{"webhook": map[string]any{"replicas": -1}}, []string{"/webhook/replicas", "minimum"}},
		{"replicas a string", map[string]any{"webhook": map[string]any{"replicas": "two"}}, []string{"/webhook/replicas", "integer"}},
		{"failurePolicy", map[string]any{"webhook": map[string]any{"failurePolicy": "Deny"}}, []string{"/webhook/failurePolicy", "Fail", "Ignore"}},
		{"reinvocationPolicy", map[string]any{"webhook": map[string]any{"reinvocationPolicy": "Always"}}, []string{"/webhook/reinvocationPolicy", "IfNeeded", "Never"}},
		{"timeoutSeconds too long", map[string]any{"webhook": map[string]any{"timeoutSeconds": 31}}, []string{"/webhook/timeoutSeconds", "maximum"}},
		{"tls version", map[string]any{"webhook": map[string]any{"tlsMinVersion": "1.1"}}, []string{"/webhook/tlsMinVersion"}},
		{"shutdownDelay not a duration", map[string]any{"webhook": map[string]any{"shutdownDelay": "5 seconds"}}, []string{"/webhook/shutdownDelay"}},
		{"image repository with a tag", map[string]any{"webhook": map[string]any{"image": map[string]any{"repository": "ghcr.io/meshinit/webhook:v1"}}}, []string{"/webhook/image/repository"}},
		{"image tag with a slash", map[string]any{"webhook": map[string]any{"image": map[string]any{"tag": "a/b"}}}, []string{"/webhook/image/tag"}},
		{"pullPolicy", map[string]any{"webhook": map[string]any{"image": map[string]any{"pullPolicy": "always"}}}, []string{"/webhook/image/pullPolicy"}},
		{"trafficDistribution", map[string]any{"webhook": map[string]any{"trafficDistribution": "Nearest"}}, []string{"/webhook/trafficDistribution"}},
		{"topology spread without key", map[string]any{"webhook": map[string]any{"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}}}}, []string{"topologyKey"}},
		{"misspelt inject key", map[string]any{"inject": map[string]any{"placment": "last"}}, []string{"placment"}},
		{"placement", map[string]any{"inject": map[string]any{"placement": "middle"}}, []string{"/inject/placement", "first", "last"}},
		{"podSecurity", map[string]any{"inject": map[string]any{"podSecurity": "ignore"}}, []string{"/inject/podSecurity"}},
		{"logFormat", map[string]any{"inject": map[string]any{"logFormat": "JSON"}}, []string{"/inject/logFormat"}},
		{"unknown redirect setting", map[string]any{"inject": map[string]any{"redirect": map[string]any{"outbound-port": "15001"}}}, []string{"outbound-port"}},
		{"iptables mode", map[string]any{"inject": map[string]any{"redirect": map[string]any{"iptables-mode": "xt"}}}, []string{"iptables-mode"}},
		{"certManager.enabled a string", map[string]any{"certManager": map[string]any{"enabled": "true"}}, []string{"/certManager/enabled", "boolean"}},
		{"existingSecret a string", map[string]any{"certs": map[string]any{"existingSecret": "yes"}}, []string{"/certs/existingSecret", "boolean"}},
		{"issuerRef without name", map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{"kind": "ClusterIssuer"}}}, []string{"/certManager/issuerRef"}},
		{"issuerRef kind", map[string]any{"certManager": map[string]any{"issuerRef": map[string]any{"name": "x", "kind": "Vault"}}}, []string{"/certManager/issuerRef/kind"}},
		{"certManager duration", map[string]any{"certManager": map[string]any{"duration": "90d"}}, []string{"/certManager/duration"}},
		{"caValidity", map[string]any{"certs": map[string]any{"selfManaged": map[string]any{"caValidity": "2y"}}}, []string{"/certs/selfManaged/caValidity"}},
		{"secretName", map[string]any{"certs": map[string]any{"secretName": "Webhook_TLS"}}, []string{"/certs/secretName"}},
		{"podSecurityGuard.enabled a string", map[string]any{"podSecurityGuard": map[string]any{"enabled": "yes"}}, []string{"/podSecurityGuard/enabled", "boolean"}},
		{"podSecurityGuard unknown key", map[string]any{"podSecurityGuard": map[string]any{"level": "baseline"}}, []string{"level"}},
		{"validationActions Deny and Warn", map[string]any{"policy": map[string]any{"validationActions": []any{"Deny", "Warn"}}}, []string{"/policy/validationActions"}},
		{"validationActions empty", map[string]any{"policy": map[string]any{"validationActions": []any{}}}, []string{"/policy/validationActions"}},
		{"interception", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"interception": "Always"}}}, []string{"/policy/defaultRedirectPolicy/interception", "Required", "AllowOptOut", "Optional"}},
		{"required port out of range", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"requiredInboundPorts": []any{0}}}}, []string{"/policy/defaultRedirectPolicy/requiredInboundPorts/0"}},
		{"required port a string", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"requiredOutboundPorts": []any{"5432"}}}}, []string{"/policy/defaultRedirectPolicy/requiredOutboundPorts/0"}},
		{"imagePullSecrets as strings", map[string]any{"imagePullSecrets": []any{"regcred"}}, []string{"/imagePullSecrets/0"}},
		{"tests dialAddress without port", map[string]any{"tests": map[string]any{"dialAddress": "192.0.2.1"}}, []string{"/tests/dialAddress"}},
		// The policy compares the cluster's own redirect settings with the
		// init container's arguments, so they must be written as the
		// redirector renders them.
		{"proxy-uid with a leading zero", redirectSetting("proxy-uid", "01337"), []string{"/inject/redirect/proxy-uid"}},
		{"proxy-gid negative", redirectSetting("proxy-gid", -1), []string{"/inject/redirect/proxy-gid"}},
		// Above 4294967294 the redirector cannot read it (nor the policy, from
		// the argument), while the policy's shortcut for a pod that sets
		// nothing takes the chart's value as written (TestSettingsAsChartChartIDs).
		{"proxy-uid 4294967295 as a string", redirectSetting("proxy-uid", "4294967295"), []string{"/inject/redirect/proxy-uid"}},
		{"proxy-gid 9999999999 as a string", redirectSetting("proxy-gid", "9999999999"), []string{"/inject/redirect/proxy-gid"}},
		{"proxy port 0", redirectSetting("outbound-proxy-port", 0), []string{"/inject/redirect/outbound-proxy-port"}},
		{"proxy port 65536 as a string", redirectSetting("inbound-proxy-port", "65536"), []string{"/inject/redirect/inbound-proxy-port"}},
		{"ignored ports with spaces", redirectSetting("ignored-inbound-ports", "15020, 15021"), []string{"/inject/redirect/ignored-inbound-ports"}},
		{"ignored ports star", redirectSetting("ignored-inbound-ports", "*"), []string{"/inject/redirect/ignored-inbound-ports"}},
		{"capture-dns", redirectSetting("capture-dns", "on"), []string{"/inject/redirect/capture-dns", "off", "nameservers", "all"}},
		{"dns proxy port 0", redirectSetting("dns-proxy-port", 0), []string{"/inject/redirect/dns-proxy-port"}},
		{"allowed UID exclusion negative", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"allowedOutboundUIDExclusions": []any{-1}}}}, []string{"/policy/defaultRedirectPolicy/allowedOutboundUIDExclusions/0"}},
		{"allowed GID exclusion a name", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"allowedOutboundGIDExclusions": []any{"wheel"}}}}, []string{"/policy/defaultRedirectPolicy/allowedOutboundGIDExclusions/0"}},
		{"allowed interface exclusion wildcard", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"allowedInboundInterfaceExclusions": []any{"net+"}}}}, []string{"/policy/defaultRedirectPolicy/allowedInboundInterfaceExclusions/0"}},
		{"proxy container without image", map[string]any{"policy": map[string]any{"proxyContainers": []any{map[string]any{"name": "envoy"}}}}, []string{"/policy/proxyContainers/0", "image"}},
		{"proxy container image with a space", map[string]any{"policy": map[string]any{"proxyContainers": []any{map[string]any{"name": "envoy", "image": "envoy proxy"}}}}, []string{"/policy/proxyContainers/0/image"}},
		{"allowed CIDR without a prefix", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{"allowedOutboundCIDRExclusions": []any{"10.0.0.1"}}}}, []string{"/policy/defaultRedirectPolicy/allowedOutboundCIDRExclusions/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := charts.Render(charts.Options{Values: tc.values})
			if err == nil {
				t.Fatalf("values %v rendered; want them refused", tc.values)
			}
			msg := err.Error()
			if !strings.Contains(msg, "values don't meet the specifications of the schema") {
				t.Errorf("not a schema error: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSchemaAccepts checks values the schema must let through: the
// documented alternatives of values.yaml.
func TestSchemaAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
	}{
		{"redirect numbers", map[string]any{"inject": map[string]any{"redirect": map[string]any{"inbound-proxy-port": 16006, "exclude-outbound-ports": "22,53"}}}},
		{"redirect strings", map[string]any{"inject": map[string]any{"redirect": map[string]any{"proxy-uid": "0", "outbound-proxy-port": "65535", "ignored-inbound-ports": "15020-15021,15090"}}}},
		{"largest IDs as strings", map[string]any{"inject": map[string]any{"redirect": map[string]any{"proxy-uid": "4294967294", "proxy-gid": "3999999999"}}}},
		{"no ignored ports", redirectSetting("ignored-inbound-ports", "")},
		{"capture parity settings", map[string]any{"inject": map[string]any{"redirect": map[string]any{
			"capture-dns": "nameservers", "dns-proxy-port": 15054, "exclude-outbound-uids": "0,1000,20000", "exclude-outbound-gids": 3000,
			"include-outbound-ports": "80,443,8000-8080", "exclude-inbound-interfaces": "eth0.100,eth1,net1"}}}},
		{"allowed exclusions and overrides", map[string]any{"policy": map[string]any{"defaultRedirectPolicy": map[string]any{
			"allowedOutboundUIDExclusions": []any{0, 1000}, "allowedOutboundGIDExclusions": []any{4294967294},
			"allowedInboundInterfaceExclusions": []any{"net1", "eth0.100"}, "allowProxyIdentityOverride": true, "allowProxyPortOverride": true}}}},
		{"proxy containers and allowed CIDRs", map[string]any{"policy": map[string]any{
			"proxyContainers":       []any{map[string]any{"name": "envoy", "image": "docker.io/envoyproxy/envoy"}, map[string]any{"name": "linkerd-proxy", "image": "cr.l5d.io/linkerd/proxy:edge-24.1.1"}},
			"defaultRedirectPolicy": map[string]any{"allowedOutboundCIDRExclusions": []any{"169.254.169.254/32", "fd00::/8"}},
		}}},
		{"no topology spread", map[string]any{"webhook": map[string]any{"topologySpreadConstraints": []any{}}}},
		{"warn and audit", map[string]any{"policy": map[string]any{"validationActions": []any{"Warn", "Audit"}}}},
		{"one replica", map[string]any{"webhook": map[string]any{"replicas": 1}}},
		{"zero replicas", map[string]any{"webhook": map[string]any{"replicas": 0}}},
		{"cert-manager", map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}}}},
		{"existing secret", map[string]any{"certs": map[string]any{"existingSecret": true, "secretName": "my-tls"}}},
		{"PreferSameNode", map[string]any{"webhook": map[string]any{"trafficDistribution": "PreferSameNode"}}},
		{"registry with port", map[string]any{"webhook": map[string]any{"image": map[string]any{"repository": "localhost:5000/meshinit/webhook", "tag": "dev"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := charts.Render(charts.Options{Values: tc.values}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCertsSourcesExclusive: certManager.enabled and certs.existingSecret
// together are refused, naming both values.
func TestCertsSourcesExclusive(t *testing.T) {
	_, err := charts.Render(charts.Options{Values: map[string]any{
		"certManager": map[string]any{"enabled": true},
		"certs":       map[string]any{"existingSecret": true},
	}})
	if err == nil {
		t.Fatal("certManager.enabled and certs.existingSecret both true rendered; want them refused")
	}
	for _, w := range []string{"certManager.enabled", "certs.existingSecret"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
}

// redirectSetting is values with one inject.redirect setting.
func redirectSetting(key string, value any) map[string]any {
	return map[string]any{"inject": map[string]any{"redirect": map[string]any{key: value}}}
}

// TestIgnoredPortsCanonical: inject.redirect.ignored-inbound-ports
// must be written as the redirector renders it (the policy compares the
// init container's argument with it): each entry once, no range of one
// port. The schema cannot say so: the chart refuses it, naming the value.
// Any order is the redirector's.
func TestIgnoredPortsCanonical(t *testing.T) {
	for _, v := range []string{"15020,15020", "15020-15020", "15021-15020", "15020-15030,15021,15020-15030"} {
		_, err := charts.Render(charts.Options{Values: redirectSetting("ignored-inbound-ports", v)})
		if err == nil || !strings.Contains(err.Error(), "inject.redirect.ignored-inbound-ports") || !strings.Contains(err.Error(), v) {
			t.Errorf("ignored-inbound-ports %q: %v", v, err)
		}
	}
	for _, v := range []string{"15020,15020-15030,15021", "15090,15020"} {
		if _, err := charts.Render(charts.Options{Values: redirectSetting("ignored-inbound-ports", v)}); err != nil {
			t.Errorf("ports and ranges as the redirector renders them %q: %v", v, err)
		}
	}
}

// TestRemovedValues: a key an earlier chart took and this one replaced
// fails the install with an error naming it and what replaced it.
func TestRemovedValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string // all in the error
	}{
		{"certs.mode", map[string]any{"certs": map[string]any{"mode": "cert-manager"}}, []string{"certs.mode (cert-manager) was replaced", "certManager.enabled=true", "certs.existingSecret=true"}},
		{"certs.mode self-managed", map[string]any{"certs": map[string]any{"mode": "self-managed"}}, []string{"certs.mode (self-managed) was replaced"}},
		{"certs.certManager", map[string]any{"certs": map[string]any{"certManager": map[string]any{"duration": "720h"}}}, []string{"certs.certManager was replaced by certManager", "certManager.enabled=true"}},
		{"webhook.inject", map[string]any{"webhook": map[string]any{"inject": map[string]any{"placement": "last"}}}, []string{"webhook.inject was moved to inject (top level", "inject.placement for webhook.inject.placement"}},
		{"webhook.inject.redirect", map[string]any{"webhook": map[string]any{"inject": map[string]any{"redirect": map[string]any{"proxy-uid": 2000}}}}, []string{"webhook.inject was moved to inject (top level", "inject.redirect.<name> for webhook.inject.redirect.<name>"}},
		{"webhook.inject empty", map[string]any{"webhook": map[string]any{"inject": map[string]any{}}}, []string{"webhook.inject was moved to inject"}},
		{"webhook.inject beside webhook values", map[string]any{"webhook": map[string]any{"replicas": 3, "inject": map[string]any{"privileged": true}}}, []string{"webhook.inject was moved to inject"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := charts.Render(charts.Options{Values: tc.values})
			if err == nil {
				t.Fatalf("values %v rendered; want them refused", tc.values)
			}
			// The schema lets the old key through, so that the message
			// is the chart's, naming what replaced it.
			if strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
				t.Errorf("a schema error, not the chart's message:\n%v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
	// null removes a key (helm upgrade --set webhook.inject=null): not set.
	if _, err := charts.Render(charts.Options{Values: map[string]any{"webhook": map[string]any{"inject": nil}}}); err != nil {
		t.Errorf("webhook.inject null: %v", err)
	}
}
