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
	"flag"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// TestWebhookNetworkPolicy: with webhook.networkPolicy.enabled only
// webhookFrom reaches the webhook's pods on the webhook port and only
// metricsFrom on the metrics and probe ports; the named ports are the
// container's; off by default; enabled without webhookFrom is refused.
func TestWebhookNetworkPolicy(t *testing.T) {
	if objs := kinds(t, nil); objs["NetworkPolicy"] != 0 {
		t.Errorf("the default values render %d NetworkPolicies, want none", objs["NetworkPolicy"])
	}
	apiServers := []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}}
	monitoring := []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}}
	for _, tc := range []struct {
		name        string
		metricsFrom []any
		wantRules   int
	}{
		{"webhook and metrics peers", monitoring, 2},
		{"webhook peers only", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]any{"webhook": map[string]any{"networkPolicy": map[string]any{"enabled": true, "webhookFrom": apiServers, "metricsFrom": tc.metricsFrom}}}
			var np networkingv1.NetworkPolicy
			var d appsv1.Deployment
			charts.MustObject(t, charts.Options{Values: values}, "NetworkPolicy", "", &np)
			charts.MustObject(t, charts.Options{Values: values}, "Deployment", "", &d)
			pod := d.Spec.Template
			for k, v := range np.Spec.PodSelector.MatchLabels {
				if pod.Labels[k] != v {
					t.Errorf("podSelector %v does not select the webhook's pods (labels %v)", np.Spec.PodSelector.MatchLabels, pod.Labels)
				}
			}
			if np.Namespace != "meshinit-system" || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != tc.wantRules {
				t.Fatalf("NetworkPolicy in %q, policyTypes %v, %d ingress rules; want the release namespace, Ingress only, %d rules", np.Namespace, np.Spec.PolicyTypes, len(np.Spec.Ingress), tc.wantRules)
			}
			containerPort := func(p *intstr.IntOrString) int32 {
				for _, cp := range pod.Spec.Containers[0].Ports {
					if p != nil && cp.Name == p.StrVal {
						return cp.ContainerPort
					}
				}
				t.Errorf("port %v is no named port of the webhook container", p)
				return 0
			}
			wantPorts := [][]int32{{9443}, {8080, 8081}}
			wantFrom := []string{"10.0.0.0/24", "monitoring"}
			for i, rule := range np.Spec.Ingress {
				var ports []int32
				for _, p := range rule.Ports {
					ports = append(ports, containerPort(p.Port))
				}
				if !slices.Equal(ports, wantPorts[i]) || len(rule.From) != 1 || !strings.Contains(rule.From[0].String(), wantFrom[i]) {
					t.Errorf("ingress rule %d: ports %v from %v, want %v from %s", i, ports, rule.From, wantPorts[i], wantFrom[i])
				}
			}
		})
	}
	t.Run("without webhookFrom", func(t *testing.T) {
		_, err := charts.Render(charts.Options{Values: map[string]any{"webhook": map[string]any{"networkPolicy": map[string]any{"enabled": true}}}})
		if err == nil || !strings.Contains(err.Error(), "webhook.networkPolicy.enabled needs webhook.networkPolicy.webhookFrom") {
			t.Errorf("got %v, want the render refused naming webhook.networkPolicy.webhookFrom", err)
		}
	})
}

// TestWebhookClientAuth: webhook.clientAuth mounts the CA bundle's
// ConfigMap or Secret and passes flags the webhook parses into the file's
// path and the allowed names; off by default; a CA bundle that is neither
// or both is refused, and so (by the schema) is enabled without names.
func TestWebhookClientAuth(t *testing.T) {
	for _, tc := range []struct {
		name       string
		clientAuth map[string]any
		wantFile   string
		wantNames  []string
		wantSource string // the ConfigMap or Secret mounted
		volume     func(corev1.VolumeSource) string
	}{
		{"off", nil, "", nil, "", nil},
		{"a ConfigMap", map[string]any{"enabled": true, "caBundle": map[string]any{"configMap": "apiserver-client-ca"}, "allowedNames": []any{"kube-apiserver"}},
			"/etc/meshinit/client-ca/ca.crt", []string{"kube-apiserver"}, "apiserver-client-ca",
			func(v corev1.VolumeSource) string { return v.ConfigMap.Name }},
		{"a Secret's key, names", map[string]any{"enabled": true, "caBundle": map[string]any{"secret": "front-proxy", "key": "client-ca.pem"}, "allowedNames": []any{"kube-apiserver", "apiserver.example"}},
			"/etc/meshinit/client-ca/client-ca.pem", []string{"kube-apiserver", "apiserver.example"}, "front-proxy",
			func(v corev1.VolumeSource) string { return v.Secret.SecretName }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d appsv1.Deployment
			charts.MustObject(t, charts.Options{Values: map[string]any{"webhook": map[string]any{"clientAuth": tc.clientAuth}}}, "Deployment", "", &d)
			c := d.Spec.Template.Spec.Containers[0]
			var o webhook.ServerOptions
			fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
			o.BindFlags(fs)
			// The webhook's own flags (the command adds logging flags).
			var args []string
			for _, a := range c.Args {
				if strings.HasPrefix(a, "--client-") {
					args = append(args, a)
				}
			}
			if err := fs.Parse(args); err != nil {
				t.Fatalf("args %q: %v", c.Args, err)
			}
			if o.ClientCAFile != tc.wantFile || !slices.Equal(o.ClientNames, tc.wantNames) {
				t.Errorf("--client-ca-file %q, --client-names %q; want %q, %q", o.ClientCAFile, o.ClientNames, tc.wantFile, tc.wantNames)
			}
			var mounted, source string
			volumes := 0
			for _, m := range c.VolumeMounts {
				if m.Name == "client-ca" && m.ReadOnly {
					mounted = m.MountPath + "/"
				}
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "client-ca" {
					volumes++
					if tc.volume != nil {
						source = tc.volume(v.VolumeSource)
					}
				}
			}
			if tc.volume == nil {
				if mounted != "" || volumes != 0 {
					t.Errorf("client CA mounted at %q (%d volumes) without clientAuth", mounted, volumes)
				}
				return
			}
			if mounted == "" || !strings.HasPrefix(tc.wantFile, mounted) || source != tc.wantSource {
				t.Errorf("client CA mounted read-only at %q from %q; want the directory of %s from %s", mounted, source, tc.wantFile, tc.wantSource)
			}
		})
	}
	for _, caBundle := range []map[string]any{{}, {"configMap": "a", "secret": "b"}} {
		_, err := charts.Render(charts.Options{Values: map[string]any{"webhook": map[string]any{"clientAuth": map[string]any{"enabled": true, "caBundle": caBundle, "allowedNames": []any{"kube-apiserver"}}}}})
		if err == nil || !strings.Contains(err.Error(), "exactly one of webhook.clientAuth.caBundle.configMap and webhook.clientAuth.caBundle.secret") {
			t.Errorf("caBundle %v: got %v, want the render refused naming both values", caBundle, err)
		}
	}
}

// TestAccessSchema: values.schema.json refuses malformed networkPolicy,
// clientAuth and certManagerCAInjector values, naming them.
func TestAccessSchema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"peer of an unknown kind", map[string]any{"webhook": map[string]any{"networkPolicy": map[string]any{"webhookFrom": []any{map[string]any{"cidr": "10.0.0.0/8"}}}}}, "/webhook/networkPolicy/webhookFrom/0"},
		{"ipBlock without cidr", map[string]any{"webhook": map[string]any{"networkPolicy": map[string]any{"metricsFrom": []any{map[string]any{"ipBlock": map[string]any{}}}}}}, "/webhook/networkPolicy/metricsFrom/0/ipBlock"},
		{"clientAuth CA key with a slash", map[string]any{"webhook": map[string]any{"clientAuth": map[string]any{"caBundle": map[string]any{"key": "../ca.crt"}}}}, "/webhook/clientAuth/caBundle/key"},
		{"clientAuth enabled without allowedNames", map[string]any{"webhook": map[string]any{"clientAuth": map[string]any{"enabled": true, "caBundle": map[string]any{"configMap": "ca"}}}}, "/webhook/clientAuth"},
		{"clientAuth enabled with no allowedNames", map[string]any{"webhook": map[string]any{"clientAuth": map[string]any{"enabled": true, "caBundle": map[string]any{"configMap": "ca"}, "allowedNames": []any{}}}}, "/webhook/clientAuth/allowedNames"},
		{"allowed name with a comma", map[string]any{"webhook": map[string]any{"clientAuth": map[string]any{"allowedNames": []any{"a,b"}}}}, "/webhook/clientAuth/allowedNames/0"},
		{"cainjector name", map[string]any{"certs": map[string]any{"certManagerCAInjector": map[string]any{"name": "Cert_Manager"}}}, "/certs/certManagerCAInjector/name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := charts.Render(charts.Options{Values: tc.values})
			if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a schema error naming %s", err, tc.want)
			}
		})
	}
}

// kinds counts the objects of each kind the chart renders with values.
func kinds(t *testing.T, values map[string]any) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, o := range charts.MustObjects(t, charts.Options{Values: values}, false) {
		n[o.GetKind()]++
	}
	return n
}
