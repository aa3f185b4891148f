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
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// TestInjectorNeedsTheAPI: injector policy is refused, saying why and what
// it needs, where .Capabilities.APIVersions lacks MutatingAdmissionPolicy
// v1 (an older API server, or helm template without --api-versions); the
// webhook needs nothing of the kind.
func TestInjectorNeedsTheAPI(t *testing.T) {
	for _, kube := range []string{"", "v1.35.0"} {
		_, err := charts.Render(charts.Options{Values: map[string]any{"injector": "policy"}, KubeVersion: kube})
		if err == nil || !strings.Contains(err.Error(), "injector=policy needs an API server that serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36 or newer)") {
			t.Errorf("kube version %q: %v", kube, err)
		}
	}
	if _, err := charts.Render(charts.Options{Values: map[string]any{"injector": "webhook"}}); err != nil {
		t.Errorf("injector webhook: %v", err)
	}
	if _, err := charts.Render(charts.Options{Values: map[string]any{"injector": "sidecar"}}); err == nil || !strings.Contains(err.Error(), "injector") {
		t.Errorf("injector sidecar: %v, want the schema to refuse it", err)
	}
}

// kindNames lists "Kind/name" of every object rendered.
func kindNames(t *testing.T, values map[string]any, injector string) []string {
	t.Helper()
	var out []string
	for _, o := range renderMode(t, values, injector) {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

// TestInjectorObjects: policy mode renders no part of the webhook (its
// Deployment, Service, certificates and their rights, webhook
// configuration and its guard, NetworkPolicy, PodDisruptionBudget), even
// with the values that add such parts, but the mutating policy, the two
// validating ones and their bindings, and what both modes share: the
// RedirectPolicy's policy, the ConfigMap of the injection configuration
// (the kubectl plugin and the status annotation read it), and the trust of
// redirector images with its hook.
func TestInjectorObjects(t *testing.T) {
	everyPart := map[string]any{
		"certManager": map[string]any{"enabled": true},
		"webhook": map[string]any{"replicas": 3, "networkPolicy": map[string]any{"enabled": true,
			"webhookFrom": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}}}},
	}
	policy := kindNames(t, everyPart, "policy")
	web := kindNames(t, everyPart, "webhook")
	for _, kind := range []string{"Deployment", "Service", "MutatingWebhookConfiguration", "ServiceAccount", "Role", "RoleBinding",
		"ClusterRole", "ClusterRoleBinding", "Certificate", "Issuer", "NetworkPolicy", "PodDisruptionBudget", "ValidatingAdmissionPolicy/meshinit-webhook-cabundle"} {
		// The trust hook's ServiceAccount, Role and RoleBinding are both
		// modes' (trust-hook.yaml).
		has := func(objs []string) bool {
			return slices.ContainsFunc(objs, func(o string) bool {
				return (strings.HasPrefix(o, kind+"/") || o == kind) && o != kind+"/"+trustName
			})
		}
		if !has(web) {
			t.Errorf("webhook mode renders no %s: the test's list is stale", kind)
		}
		if has(policy) {
			t.Errorf("policy mode renders %s", kind)
		}
	}
	for _, want := range []string{"MutatingAdmissionPolicy/meshinit-inject", "MutatingAdmissionPolicyBinding/meshinit-inject",
		"ValidatingAdmissionPolicy/meshinit-inject", "ValidatingAdmissionPolicyBinding/meshinit-inject",
		"ValidatingAdmissionPolicy/meshinit-inject-podsecurity", "ValidatingAdmissionPolicyBinding/meshinit-inject-podsecurity",
		"ValidatingAdmissionPolicy/meshinit-redirectpolicy", "ConfigMap/meshinit-webhook", "RedirectPolicy/default",
		"ValidatingAdmissionPolicy/" + trustName, "RedirectorTrust/" + trustName, "Job/" + trustName} {
		if !slices.Contains(policy, want) {
			t.Errorf("policy mode renders no %s", want)
		}
		if strings.Contains(want, "-inject") && slices.Contains(web, want) {
			t.Errorf("webhook mode renders %s", want)
		}
	}
}

// TestInjectorStatus: the status the mutating policy writes is the one the
// webhook writes with the chart's config file (the same values), which
// names that file by the hash of the ConfigMap's bytes; values that change
// the file change it.
func TestInjectorStatus(t *testing.T) {
	var statuses []string
	for _, values := range []map[string]any{nil, {"inject": map[string]any{"imagePullPolicy": "Always"}}} {
		objs := renderMode(t, values, "policy")
		var cm corev1.ConfigMap
		charts.DecodeOne(t, objs, "ConfigMap", "meshinit-webhook", &cm)
		in, err := newInjector(values)
		if err != nil {
			t.Fatal(err)
		}
		status := pod("p", injectedBy(in)).Annotations[webhook.StatusAnnotation]
		want := webhook.Status{InitContainers: []string{"meshinit-redirect"}, Config: webhook.ConfigHash([]byte(cm.Data["config.yaml"]))}.String()
		if status != want {
			t.Errorf("the webhook writes status %s, want %s", status, want)
		}
		var mp admissionregistrationv1.MutatingAdmissionPolicy
		charts.DecodeOne(t, objs, "MutatingAdmissionPolicy", injectName, &mp)
		quoted, _ := json.Marshal(status)
		if expr := mp.Spec.Mutations[0].JSONPatch.Expression; strings.Count(expr, string(quoted)) != 2 {
			t.Errorf("the mutating policy does not write status %s (both where the pod has annotations and where it has none):\n%s", quoted, expr)
		}
		statuses = append(statuses, status)
	}
	if statuses[0] == statuses[1] {
		t.Errorf("a changed configuration keeps status %s", statuses[0])
	}
}

// TestInjectorPoliciesCompile compiles each ValidatingAdmissionPolicy of
// policy mode in-process, as the API server does (the RedirectPolicy's has
// the injector's variables too).
func TestInjectorPoliciesCompile(t *testing.T) {
	for _, o := range charts.Find(renderMode(t, nil, "policy"), "ValidatingAdmissionPolicy", "") {
		var vap admissionregistrationv1.ValidatingAdmissionPolicy
		charts.DecodeOne(t, []*unstructured.Unstructured{o}, "ValidatingAdmissionPolicy", "", &vap)
		compile(t, &vap)
	}
}
