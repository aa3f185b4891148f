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

package kubectlplugin

import (
	"cmp"
	"crypto/x509"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

const (
	testNamespace   = "meshinit-system"
	testServiceName = "meshinit-webhook." + testNamespace + ".svc"
)

// testCerts are CAs and serving certificates for the webhook's Service,
// issued an hour before now unless said otherwise: ca and what it signed
// (serving for 90 days, soon for 3, expired a day long, 25 hours ago);
// otherCA, which signed nothing; expiredCA (two days ago, for a day) and
// what it signed; soonCA (for 4 days) and what it signed (for 2 days).
type testCerts struct {
	ca                                *certs.CA
	serving, soon, expired            []*x509.Certificate
	otherCA, expiredCA, soonCA        *certs.CA
	servedByExpiredCA, servedBySoonCA []*x509.Certificate
}

func issueTestCerts(t *testing.T, now time.Time) testCerts {
	t.Helper()
	newCA := func(name string, validity time.Duration, at time.Time) *certs.CA {
		ca, err := certs.NewCA(name, validity, at)
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	issue := func(ca *certs.CA, validity time.Duration, at time.Time) []*x509.Certificate {
		certPEM, _, err := ca.IssueServing(certs.DNSNames("meshinit-webhook", testNamespace), nil, validity, at)
		if err != nil {
			t.Fatal(err)
		}
		chain, err := certs.ParseCertsPEM(certPEM)
		if err != nil {
			t.Fatal(err)
		}
		return chain
	}
	tc := testCerts{ca: newCA("meshinit-ca", 365*24*time.Hour, now.Add(-time.Hour)), otherCA: newCA("other-ca", 365*24*time.Hour, now.Add(-time.Hour))}
	tc.serving = issue(tc.ca, 90*24*time.Hour, now.Add(-time.Hour))
	tc.soon = issue(tc.ca, 3*24*time.Hour, now.Add(-time.Hour))
	tc.expired = issue(tc.ca, 24*time.Hour, now.Add(-25*time.Hour))
	tc.expiredCA = newCA("expired-ca", 24*time.Hour, now.Add(-48*time.Hour))
	tc.servedByExpiredCA = issue(tc.expiredCA, 12*time.Hour, now.Add(-47*time.Hour))
	tc.soonCA = newCA("soon-ca", 4*24*time.Hour, now.Add(-time.Hour))
	tc.servedBySoonCA = issue(tc.soonCA, 2*24*time.Hour, now.Add(-time.Hour))
	return tc
}

// mapAPI is what helm template's --api-versions needs for injector policy.
const mapAPI = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"

// chartInstall is an Install as gathered from a healthy installation of
// the chart (its own objects, as it renders them with values): in webhook
// mode, serving tc.serving from two replicas.
func chartInstall(t *testing.T, values map[string]any, tc testCerts) Install {
	t.Helper()
	objs := charts.MustObjects(t, charts.Options{Namespace: testNamespace, Values: values, APIVersions: []string{mapAPI}}, false)
	in := Install{Release: release{Name: "meshinit", Namespace: testNamespace}, RedirectPolicyServed: true, RedirectorTrustServed: true, RedirectPolicies: 1, ConfigMap: "meshinit-webhook"}
	in.Config, _ = chartConfig(t, objs)
	for _, o := range charts.Find(objs, "ValidatingAdmissionPolicy", "") {
		var p admissionregistrationv1.ValidatingAdmissionPolicy
		charts.DecodeOne(t, objs, "ValidatingAdmissionPolicy", o.GetName(), &p)
		p.Generation, p.Status.ObservedGeneration, p.Status.TypeChecking = 1, 1, &admissionregistrationv1.TypeChecking{}
		in.Policies = append(in.Policies, p)
	}
	for _, o := range charts.Find(objs, "ValidatingAdmissionPolicyBinding", "") {
		var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
		charts.DecodeOne(t, objs, "ValidatingAdmissionPolicyBinding", o.GetName(), &b)
		in.Bindings = append(in.Bindings, b)
	}
	// The RedirectorTrust, as the chart renders it (no previous:
	// installed, not upgraded).
	in.TrustParams = in.trustParams()
	for i, tp := range in.TrustParams {
		in.TrustParams[i].Trust = &v1alpha1.RedirectorTrust{}
		charts.DecodeOne(t, objs, trustKind, tp.Name, in.TrustParams[i].Trust)
	}
	for _, o := range charts.Find(objs, "MutatingAdmissionPolicy", "") {
		var p admissionregistrationv1.MutatingAdmissionPolicy
		charts.DecodeOne(t, objs, "MutatingAdmissionPolicy", o.GetName(), &p)
		in.MutatingPolicies = append(in.MutatingPolicies, p)
	}
	for _, o := range charts.Find(objs, "MutatingAdmissionPolicyBinding", "") {
		var b admissionregistrationv1.MutatingAdmissionPolicyBinding
		charts.DecodeOne(t, objs, "MutatingAdmissionPolicyBinding", o.GetName(), &b)
		in.MutatingPolicyBindings = append(in.MutatingPolicyBindings, b)
	}
	if len(charts.Find(objs, "MutatingWebhookConfiguration", "")) == 0 {
		return in // policy mode
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	charts.DecodeOne(t, objs, "MutatingWebhookConfiguration", "", &mwc)
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.CABundle = tc.ca.CertPEM()
	}
	in.WebhookConfigs = []admissionregistrationv1.MutatingWebhookConfiguration{mwc}
	var d appsv1.Deployment
	charts.DecodeOne(t, objs, "Deployment", "meshinit-webhook", &d)
	d.Status = appsv1.DeploymentStatus{ReadyReplicas: *d.Spec.Replicas, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}
	in.Deployment = &d
	in.Server, in.ArgsErr = webhook.ParseArgs(d.Spec.Template.Spec.Containers[0].Args)
	in.Service = &corev1.Service{}
	charts.DecodeOne(t, objs, "Service", "meshinit-webhook", in.Service)
	in.Endpoints = []discoveryv1.EndpointSlice{{
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https-webhook"), Port: ptr.To[int32](9443)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.0.0.2"}},
		},
	}}
	in.Served = []Served{{From: "endpoint 10.0.0.1:9443", Chain: tc.serving}, {From: "endpoint 10.0.0.2:9443", Chain: tc.serving}}
	return in
}

// chartConfig is the webhook's configuration file in the chart's ConfigMap
// among objs, parsed, and as written.
func chartConfig(t *testing.T, objs []*unstructured.Unstructured) (*webhook.Config, string) {
	t.Helper()
	var cm corev1.ConfigMap
	charts.DecodeOne(t, objs, "ConfigMap", "meshinit-webhook", &cm)
	cfg, err := webhook.ParseConfig([]byte(cm.Data[configKey]), testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	return &cfg, cm.Data[configKey]
}

// want is a problem a check should find: its object and part of its
// detail and fix.
type want struct{ object, detail, fix string }

func TestChecks(t *testing.T) {
	now := time.Now()
	tc := issueTestCerts(t, now)
	policyNamed := func(name string) func(*Install) {
		return func(in *Install) {
			for i := range in.Policies {
				if in.Policies[i].Name == name {
					in.Policies = append(in.Policies[:i], in.Policies[i+1:]...)
					return
				}
			}
			t.Fatalf("no policy %s", name)
		}
	}
	// redirectPolicy is the RedirectPolicy's ValidatingAdmissionPolicy
	// (the chart renders the PodSecurity guard's before it).
	redirectPolicy := func(in *Install) *admissionregistrationv1.ValidatingAdmissionPolicy {
		for i := range in.Policies {
			if in.Policies[i].Name == "meshinit-redirectpolicy" {
				return &in.Policies[i]
			}
		}
		t.Fatal("no policy meshinit-redirectpolicy")
		return nil
	}
	served := func(chains ...[]*x509.Certificate) func(*Install) {
		return func(in *Install) {
			in.Served = nil
			for _, c := range chains {
				in.Served = append(in.Served, Served{From: "endpoint 10.0.0.1:9443", Chain: c})
			}
		}
	}
	caBundle := func(pem []byte) func(*Install) {
		return func(in *Install) {
			for i := range in.WebhookConfigs[0].Webhooks {
				in.WebhookConfigs[0].Webhooks[i].ClientConfig.CABundle = pem
			}
		}
	}
	// withoutWebhook is policy mode as the chart may render it: no webhook,
	// no caBundle policy, no webhook configuration file.
	withoutWebhook := func(in *Install) {
		in.WebhookConfigs, in.Deployment, in.Service, in.Endpoints, in.Served = nil, nil, nil, nil, nil
		policyNamed("meshinit-webhook-cabundle")(in)
		in.Bindings = slices.DeleteFunc(in.Bindings, func(b admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
			return b.Spec.PolicyName == "meshinit-webhook-cabundle"
		})
		in.Config, in.ConfigErr = nil, errors.New("no ConfigMap with config.yaml")
	}
	// mutatingPolicy is a stand-in for the chart's: it writes the
	// configuration's status annotation, as a CEL string literal.
	mutatingPolicy := func(bound bool) func(*Install) {
		return func(in *Install) {
			p := admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "meshinit-inject"}}
			if in.Config != nil {
				p.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: strconv.Quote(in.Config.Status().String())}}}
			}
			in.MutatingPolicies = []admissionregistrationv1.MutatingAdmissionPolicy{p}
			if bound {
				in.MutatingPolicyBindings = []admissionregistrationv1.MutatingAdmissionPolicyBinding{{ObjectMeta: metav1.ObjectMeta{Name: "meshinit-inject"},
					Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "meshinit-inject"}}}
			}
		}
	}
	// trust changes the RedirectorTrust's TrustParams.
	trust := func(change func(*TrustParams)) func(*Install) {
		return func(in *Install) {
			if len(in.TrustParams) != 1 {
				t.Fatalf("%d RedirectorTrusts, want 1", len(in.TrustParams))
			}
			change(&in.TrustParams[0])
		}
	}
	const trustObject = "RedirectorTrust meshinit-system/meshinit-redirector-trust"
	// trustNotServed: what the API server does without the RedirectorTrust
	// CRD, and the fix.
	const (
		trustNotServed = "not served: RedirectorTrusts cannot be created, and the paramKind of ValidatingAdmissionPolicy meshinit-redirector-trust, meshinit.io/v1alpha1 RedirectorTrust, resolves to nothing"
		trustCRDFix    = "kubectl apply --server-side -f charts/meshinit/crds/ && helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values   # Helm installs CRDs but never upgrades or re-creates them; the upgrade renders the RedirectorTrust again"
	)
	policyMode := map[string]any{"injector": "policy"}
	const (
		selfManagedRenew = `kubectl -n meshinit-system patch secret meshinit-webhook-serving --type=json -p '[{"op":"remove","path":"/data"}]'`
		selfManagedNewCA = `kubectl -n meshinit-system patch secret meshinit-webhook-signer --type=json -p '[{"op":"remove","path":"/data"}]' && ` + selfManagedRenew
	)
	const selfManagedTrust = "kubectl -n meshinit-system rollout restart deployment/meshinit-webhook"
	for _, c := range []struct {
		name    string
		values  map[string]any
		changes []func(*Install)
		want    []want
		notWant []string // objects no finding may name
	}{
		{name: "a healthy installation"},
		{name: "the CRD not served", changes: []func(*Install){func(in *Install) { in.RedirectPolicyServed = false }},
			want: []want{{"CustomResourceDefinition redirectpolicies.meshinit.io", "not served", "kubectl apply -f charts/meshinit/crds/meshinit.io_redirectpolicies.yaml"}}},
		{name: "a policy not type-checked yet", changes: []func(*Install){func(in *Install) { redirectPolicy(in).Status.ObservedGeneration = 0 }},
			want: []want{{"ValidatingAdmissionPolicy meshinit-redirectpolicy", "not type-checked yet (status.observedGeneration 0, generation 1)", "kubectl meshinit check"}}},
		{name: "type checking warns", changes: []func(*Install){func(in *Install) {
			redirectPolicy(in).Status.TypeChecking.ExpressionWarnings = []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "undefined field 'nam'"}}
		}}, want: []want{{"ValidatingAdmissionPolicy meshinit-redirectpolicy", "type checking warns 1 time: spec.validations[0].expression: undefined field 'nam'", "helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values"}}},
		{name: "the RedirectPolicy policy deleted", changes: []func(*Install){policyNamed("meshinit-redirectpolicy")}, want: []want{
			{"ValidatingAdmissionPolicy", "enforces RedirectPolicies: they are not enforced", "--set policy.enabled=true"},
			{"ValidatingAdmissionPolicyBinding meshinit-redirectpolicy-cluster", "which does not exist", "helm upgrade"},
			{"ValidatingAdmissionPolicyBinding meshinit-redirectpolicy-cluster-labelled", "which does not exist", "helm upgrade"},
			{"ValidatingAdmissionPolicyBinding meshinit-redirectpolicy-namespace", "which does not exist", "helm upgrade"},
			{"ValidatingAdmissionPolicyBinding meshinit-redirectpolicy-namespace-labelled", "which does not exist", "helm upgrade"},
		}},
		{name: "the caBundle policy deleted", changes: []func(*Install){policyNamed("meshinit-webhook-cabundle")}, want: []want{
			{"ValidatingAdmissionPolicy", "keeps the webhook's ServiceAccount to the caBundle", "helm upgrade"},
			{"ValidatingAdmissionPolicyBinding meshinit-webhook-cabundle", "which does not exist", "helm upgrade"},
		}},
		{name: "the namespace binding deleted", changes: []func(*Install){func(in *Install) {
			in.Bindings = slices.DeleteFunc(in.Bindings, func(b admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
				return b.Name == "meshinit-redirectpolicy-namespace"
			})
		}}, want: []want{{"ValidatingAdmissionPolicy meshinit-redirectpolicy", "no binding reads each namespace's own RedirectPolicies", "helm upgrade"}}},
		{name: "the labelled namespace binding deleted", changes: []func(*Install){func(in *Install) {
			in.Bindings = slices.DeleteFunc(in.Bindings, func(b admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
				return b.Name == "meshinit-redirectpolicy-namespace-labelled"
			})
		}}, want: []want{{"ValidatingAdmissionPolicy meshinit-redirectpolicy", "each namespace's own RedirectPolicies for pods labelled meshinit.io/inject=true outside opted-in namespaces", "helm upgrade"}}},
		{name: "selectors as the API server defaults them (absent ones empty)", changes: []func(*Install){func(in *Install) {
			for i := range in.Bindings {
				m := in.Bindings[i].Spec.MatchResources
				if m == nil {
					continue
				}
				m.NamespaceSelector = cmp.Or(m.NamespaceSelector, &metav1.LabelSelector{})
				m.ObjectSelector = cmp.Or(m.ObjectSelector, &metav1.LabelSelector{})
			}
		}}},
		{name: "no binding", changes: []func(*Install){func(in *Install) {
			in.Bindings = nil
			in.TrustParams = in.trustParams() // none: no binding names it
		}}, want: []want{
			{"ValidatingAdmissionPolicy meshinit-pod-security", "no ValidatingAdmissionPolicyBinding binds it", "helm upgrade"},
			{"ValidatingAdmissionPolicy meshinit-redirector-trust", "no ValidatingAdmissionPolicyBinding binds it", "helm upgrade"},
			{"ValidatingAdmissionPolicy meshinit-redirectpolicy", "no ValidatingAdmissionPolicyBinding binds it", "helm upgrade"},
			{"ValidatingAdmissionPolicy meshinit-webhook-cabundle", "no ValidatingAdmissionPolicyBinding binds it", "helm upgrade"},
		}},
		{name: "the RedirectorTrust CRD not served", changes: []func(*Install){func(in *Install) {
			in.RedirectorTrustServed = false
			for i := range in.TrustParams { // not read
				in.TrustParams[i].Trust = nil
			}
		}}, want: []want{
			{"CustomResourceDefinition redirectortrusts.meshinit.io", trustNotServed + ". An API server that resolved it before finds no RedirectorTrust: it refuses every create and update of a pod or workload its 3 bindings " +
				"meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace, meshinit-redirector-trust-pod-security select, with or without meshinit's init container (parameterNotFoundAction Deny); " +
				"one that starts without the CRD cannot resolve the paramKind and refuses every create and update of a pod or workload the policy matches, in every namespace (failurePolicy Fail)", trustCRDFix},
		}},
		{name: "the RedirectorTrust CRD not served, the policy failurePolicy Ignore, a binding Allow", changes: []func(*Install){func(in *Install) {
			in.RedirectorTrustServed = false
			for i := range in.Policies {
				if trustsRedirectors(in.Policies[i]) {
					in.Policies[i].Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
				}
			}
			for i := range in.Bindings {
				if in.Bindings[i].Name == "meshinit-redirector-trust-pod-security" {
					in.Bindings[i].Spec.ParamRef.ParameterNotFoundAction = ptr.To(admissionregistrationv1.AllowAction)
				}
			}
		}}, want: []want{
			{"CustomResourceDefinition redirectortrusts.meshinit.io", trustNotServed + ". An API server that resolved it before finds no RedirectorTrust: it refuses every create and update of a pod or workload meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace select, " +
				"with or without meshinit's init container (parameterNotFoundAction Deny); the others check no redirector image; one that starts without the CRD cannot resolve the paramKind and checks no redirector image anywhere (failurePolicy Ignore)", trustCRDFix},
		}},
		{name: "the RedirectorTrust CRD not served, every binding Allow", changes: []func(*Install){func(in *Install) {
			in.RedirectorTrustServed = false
			for i := range in.Bindings {
				if pr := in.Bindings[i].Spec.ParamRef; pr != nil && in.Bindings[i].Spec.PolicyName == "meshinit-redirector-trust" {
					pr.ParameterNotFoundAction = ptr.To(admissionregistrationv1.AllowAction)
				}
			}
		}}, want: []want{
			{"CustomResourceDefinition redirectortrusts.meshinit.io", trustNotServed + ". An API server that resolved it before finds no RedirectorTrust: its 3 bindings meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace, meshinit-redirector-trust-pod-security check no redirector image (parameterNotFoundAction Allow)", trustCRDFix},
		}},
		{name: "the RedirectorTrust CRD not served, trust not installed: nothing to say", changes: []func(*Install){policyNamed("meshinit-redirector-trust"), func(in *Install) {
			in.RedirectorTrustServed = false
			in.Bindings = slices.DeleteFunc(in.Bindings, func(b admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
				return b.Spec.PolicyName == "meshinit-redirector-trust"
			})
			in.TrustParams = in.trustParams()
		}}, notWant: []string{"CustomResourceDefinition redirectortrusts.meshinit.io", trustKind}},
		{name: "the RedirectorTrust deleted", changes: []func(*Install){trust(func(tp *TrustParams) { tp.Trust = nil })}, want: []want{
			{trustObject, "missing: 3 bindings meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace, meshinit-redirector-trust-pod-security of ValidatingAdmissionPolicy meshinit-redirector-trust, " +
				"so the API server refuses every create and update of a pod or workload they select, with or without meshinit's init container, until it is back (parameterNotFoundAction Deny)",
				"helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values   # renders it again"},
		}},
		{name: "the RedirectorTrust deleted, one binding Allow", changes: []func(*Install){trust(func(tp *TrustParams) { tp.Trust = nil }), func(in *Install) {
			for i := range in.Bindings {
				if in.Bindings[i].Name == "meshinit-redirector-trust-pod-security" {
					in.Bindings[i].Spec.ParamRef.ParameterNotFoundAction = ptr.To(admissionregistrationv1.AllowAction)
				}
			}
			tp := in.trustParams()
			tp[0].Trust = nil
			in.TrustParams = tp
		}}, want: []want{
			{trustObject, "refuses every create and update of a pod or workload meshinit-redirector-trust-labelled, meshinit-redirector-trust-namespace select, with or without meshinit's init container, until it is back (parameterNotFoundAction Deny); the others check no redirector image", "helm upgrade"},
		}},
		{name: "the RedirectorTrust forbidden", changes: []func(*Install){trust(func(tp *TrustParams) {
			tp.Trust, tp.Err = nil, errors.New(`RBAC does not allow you to get redirectortrusts.meshinit.io in namespace meshinit-system (needs verb "get" on "redirectortrusts.meshinit.io")`)
		})}, want: []want{
			{trustObject, "cannot be read: RBAC does not allow you to get redirectortrusts.meshinit.io in namespace meshinit-system", "kubectl meshinit check   # as a user who may get redirectortrusts.meshinit.io meshinit-redirector-trust in meshinit-system"},
		}},
		{name: "the RedirectorTrust without spec.current", changes: []func(*Install){trust(func(tp *TrustParams) {
			tp.Trust.Spec = v1alpha1.RedirectorTrustSpec{Previous: "registry.example/meshinit/redirect:0.0.9"}
		})}, want: []want{
			{trustObject, "names no current image (spec.current empty): only registry.example/meshinit/redirect:0.0.9 (spec.previous) is trusted", "helm upgrade"},
		}},
		{name: "the RedirectorTrust empty", changes: []func(*Install){trust(func(tp *TrustParams) { tp.Trust.Spec = v1alpha1.RedirectorTrustSpec{} })}, want: []want{
			{trustObject, "names no image (spec.current and spec.previous empty): meshinit-redirector-trust refuses every meshinit-redirect", "helm upgrade"},
		}},
		{name: "the RedirectorTrust without the injector's image", changes: []func(*Install){trust(func(tp *TrustParams) {
			tp.Trust.Spec = v1alpha1.RedirectorTrustSpec{Current: "registry.example/meshinit/redirect:1.1.0", Previous: "registry.example/meshinit/redirect:1.0.0"}
		})}, want: []want{
			{trustObject, "trusts redirector images registry.example/meshinit/redirect:1.1.0 (spec.current) and registry.example/meshinit/redirect:1.0.0 (spec.previous), not ", "helm upgrade"},
		}},
		{name: "the injector's image is the previous one (an upgrade under way)", changes: []func(*Install){func(in *Install) {
			in.TrustParams[0].Trust.Spec = v1alpha1.RedirectorTrustSpec{Current: "registry.example/meshinit/redirect:9.9.9", Previous: in.Config.Image}
		}}},
		{name: "no injector", changes: []func(*Install){withoutWebhook}, want: []want{{"injector", "no pod is injected", "helm upgrade"}}},
		{name: "policy mode: a bound MutatingAdmissionPolicy, no webhook, no configuration", changes: []func(*Install){withoutWebhook, mutatingPolicy(true)},
			notWant: []string{"Deployment", "serving certificate", "Service"}},
		{name: "policy mode: the MutatingAdmissionPolicy unbound", changes: []func(*Install){withoutWebhook, mutatingPolicy(false)},
			want: []want{{"MutatingAdmissionPolicy meshinit-inject", "no MutatingAdmissionPolicyBinding binds it", "helm upgrade"}}},
		{name: "both injectors", changes: []func(*Install){mutatingPolicy(true)}},
		{name: "policy mode as the chart renders it", values: policyMode,
			notWant: []string{"Deployment", "serving certificate", "Service", "MutatingWebhookConfiguration", "CA "}},
		{name: "policy mode: the RedirectorTrust without the image the MutatingAdmissionPolicy injects", values: policyMode,
			changes: []func(*Install){trust(func(tp *TrustParams) {
				tp.Trust.Spec = v1alpha1.RedirectorTrustSpec{Current: "registry.example/meshinit/redirect:1.1.0"}
			})},
			want: []want{{trustObject, "trusts redirector image registry.example/meshinit/redirect:1.1.0 (spec.current), not ghcr.io/", "helm upgrade"}}},
		{name: "policy mode: the ConfigMap's configuration is not the one the MutatingAdmissionPolicy injects", values: policyMode,
			changes: []func(*Install){func(in *Install) {
				other, err := webhook.ParseConfig([]byte("image: redirector:2\n"), testNamespace)
				if err != nil {
					t.Fatal(err)
				}
				in.Config = &other
			}},
			want: []want{{"MutatingAdmissionPolicy meshinit-inject", "does not inject the configuration in ConfigMap meshinit-webhook", "helm upgrade"}}},
		{name: "the webhook's configuration broken", changes: []func(*Install){func(in *Install) { in.ConfigErr = errors.New("redirect: unknown setting \"x\"") }},
			want: []want{{"ConfigMap meshinit-system/meshinit-webhook", `unknown setting "x"`, "helm upgrade"}}},
		{name: "the Deployment deleted", changes: []func(*Install){func(in *Install) { in.Deployment = nil }},
			want: []want{{"Deployment", "no webhook Deployment", "helm upgrade"}}},
		{name: "scaled to zero", changes: []func(*Install){func(in *Install) { in.Deployment.Spec.Replicas = ptr.To[int32](0) }},
			want: []want{{"Deployment meshinit-system/meshinit-webhook", "scaled to 0 replicas", "--set webhook.replicas=2"}}},
		{name: "not available", changes: []func(*Install){func(in *Install) { in.Deployment.Status = appsv1.DeploymentStatus{} }},
			want: []want{{"Deployment meshinit-system/meshinit-webhook", "not available: 0 of 2 replicas ready", "kubectl -n meshinit-system logs deployment/meshinit-webhook"}}},
		{name: "no ready endpoint", changes: []func(*Install){func(in *Install) { in.Endpoints, in.Served = nil, nil }},
			want: []want{{"Service meshinit-system/meshinit-webhook", "no ready endpoint", "kubectl -n meshinit-system get pods"}}},
		{name: "the Service deleted", changes: []func(*Install){func(in *Install) { in.Service = nil }},
			want: []want{{"Service meshinit-system/meshinit-webhook", "missing", "helm upgrade"}}},
		{name: "an empty caBundle", changes: []func(*Install){caBundle(nil)}, want: []want{
			{"MutatingWebhookConfiguration meshinit", "webhook namespace.inject.meshinit.io: caBundle missing", selfManagedTrust},
			{"MutatingWebhookConfiguration meshinit", "webhook pod.inject.meshinit.io: caBundle missing", selfManagedTrust},
		}},
		{name: "a caBundle of another CA", changes: []func(*Install){caBundle(tc.otherCA.CertPEM())}, want: []want{
			{"serving certificate", "served by endpoint 10.0.0.1:9443, endpoint 10.0.0.2:9443: the caBundle does not trust it for " + testServiceName + ": webhook namespace.inject.meshinit.io of meshinit (x509: certificate signed by unknown authority", selfManagedTrust},
		}},
		{name: "a serving certificate that expires in 3 days", changes: []func(*Install){served(tc.soon)},
			want: []want{{"serving certificate", "expires in 2 days", selfManagedRenew}}},
		{name: "an expired serving certificate", changes: []func(*Install){served(tc.expired)}, want: []want{
			{"serving certificate", "the caBundle does not trust it", selfManagedTrust},
			{"serving certificate", "expired 1 hour ago", selfManagedRenew},
		}},
		{name: "an expired CA", changes: []func(*Install){served(tc.servedByExpiredCA), caBundle(tc.expiredCA.CertPEM())}, want: []want{
			{"serving certificate", "x509: certificate has expired or is not yet valid", selfManagedTrust},
			{"serving certificate", "expired 35 hours ago", selfManagedRenew},
			{"CA expired-ca", "expired 24 hours ago", selfManagedNewCA},
		}},
		{name: "a CA that expires within a week", changes: []func(*Install){served(tc.servedBySoonCA), caBundle(tc.soonCA.CertPEM())}, want: []want{
			{"serving certificate", "hours (", selfManagedRenew},
			{"CA soon-ca", "expires in 3 days", selfManagedNewCA},
		}},
		{name: "endpoints unreachable, the Secret read", changes: []func(*Install){func(in *Install) {
			in.Served = []Served{{From: "endpoint 10.0.0.1:9443", Err: errors.New("i/o timeout")}, {From: "Secret meshinit-system/meshinit-webhook-serving", Chain: tc.serving}}
		}}},
		{name: "nothing readable", changes: []func(*Install){func(in *Install) {
			in.Served = []Served{{From: "endpoint 10.0.0.1:9443", Err: errors.New("i/o timeout")}, {From: "Secret meshinit-system/meshinit-webhook-serving", Err: errors.New("RBAC does not allow you to get secrets")}}
		}}, want: []want{{"serving certificate", "cannot be read: endpoint 10.0.0.1:9443: i/o timeout; Secret meshinit-system/meshinit-webhook-serving: RBAC does not allow you to get secrets", "as a user who may get secrets in meshinit-system"}}},
		{name: "cert-manager: an expired serving certificate", values: map[string]any{"certManager": map[string]any{"enabled": true}}, changes: []func(*Install){served(tc.expired)}, want: []want{
			{"serving certificate", "the caBundle does not trust it", "kubectl -n cert-manager rollout restart deployment/cert-manager-cainjector"},
			{"serving certificate", "expired", "cmctl renew -n meshinit-system meshinit-webhook"},
		}},
		{name: "files mode: a caBundle of another CA", values: map[string]any{"certs": map[string]any{"existingSecret": true}}, changes: []func(*Install){caBundle(tc.otherCA.CertPEM())}, want: []want{
			{"serving certificate", "the caBundle does not trust it",
				`CA=$(base64 -w0 <the CA that signed Secret meshinit-system/meshinit-webhook-tls's tls.crt>) && kubectl patch mutatingwebhookconfiguration meshinit --type=json -p "[{\"op\":\"replace\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$CA\"},{\"op\":\"replace\",\"path\":\"/webhooks/1/clientConfig/caBundle\",\"value\":\"$CA\"}]"`},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := chartInstall(t, c.values, tc)
			for _, change := range c.changes {
				change(&in)
			}
			findings := runChecks(in, now)
			var problems []Finding
			for _, f := range findings {
				if f.Status == StatusProblem {
					problems = append(problems, f)
				}
				if d, documented := docOf(f.Code); !documented || d.Area != AreaControlPlane {
					t.Errorf("finding %+v: code %q is not a documented control-plane code", f, f.Code)
				}
				for _, o := range c.notWant {
					if strings.HasPrefix(f.Object, o) {
						t.Errorf("a finding about %s: %+v", o, f)
					}
				}
			}
			if len(problems) != len(c.want) {
				t.Errorf("%d problems, want %d:\n%s", len(problems), len(c.want), describe(findings))
				return
			}
			for i, w := range c.want {
				p := problems[i]
				if p.Object != w.object || !strings.Contains(p.Detail, w.detail) || !strings.Contains(p.Fix, w.fix) {
					t.Errorf("problem %d: %+v\nwant object %q, detail containing %q, fix containing %q", i, p, w.object, w.detail, w.fix)
				}
			}
		})
	}
}

func describe(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + string(f.Status) + " " + f.Object + ": " + f.Detail + "\n")
	}
	return b.String()
}

// TestBoundWording: a binding whose paramRef names one object is worded
// with it (the redirector trust's RedirectorTrust); the RedirectPolicy bindings,
// which select parameters, with the RedirectPolicies they read; and the
// redirector trust check names the images it trusts.
func TestBoundWording(t *testing.T) {
	in := chartInstall(t, nil, issueTestCerts(t, time.Now()))
	details := map[string]string{}
	for _, f := range runChecks(in, time.Now()) {
		if f.Code == CodePolicyBound || f.Code == CodeRedirectorTrust {
			if f.Status != StatusOK {
				t.Errorf("%+v: want ok", f)
			}
			details[f.Object] = f.Detail
		}
	}
	for object, want := range map[string]string{
		"ValidatingAdmissionPolicyBinding meshinit-redirector-trust-namespace":    "binds meshinit-redirector-trust with RedirectorTrust meshinit-system/meshinit-redirector-trust where its matchResources select, validationActions [Deny]",
		"ValidatingAdmissionPolicyBinding meshinit-redirector-trust-labelled":     "binds meshinit-redirector-trust with RedirectorTrust meshinit-system/meshinit-redirector-trust where its matchResources select, validationActions [Deny]",
		"ValidatingAdmissionPolicyBinding meshinit-redirector-trust-pod-security": "binds meshinit-redirector-trust with RedirectorTrust meshinit-system/meshinit-redirector-trust where its matchResources select, validationActions [Deny]",
		"ValidatingAdmissionPolicyBinding meshinit-redirectpolicy-namespace":      "binds meshinit-redirectpolicy with the RedirectPolicies of each namespace, validationActions [Deny]",
		"ValidatingAdmissionPolicyBinding meshinit-redirectpolicy-cluster":        "binds meshinit-redirectpolicy with the RedirectPolicies of namespace meshinit-system everywhere, validationActions [Deny]",
		"RedirectorTrust meshinit-system/meshinit-redirector-trust":               "trusts redirector image " + in.Config.Image + " (spec.current)",
	} {
		if got := details[object]; got != want {
			t.Errorf("%s: %q, want %q", object, got, want)
		}
	}

	// A paramRef naming an object without a namespace: looked up where
	// the request is.
	p := admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: &admissionregistrationv1.ParamKind{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: trustKind}}}
	if got, want := paramObject(p, &admissionregistrationv1.ParamRef{Name: "trust"}), "RedirectorTrust trust of the namespace of what it admits"; got != want {
		t.Errorf("paramObject: %q, want %q", got, want)
	}

	in.TrustParams[0].Trust.Spec.Previous = "registry.example/meshinit/redirect:0.0.9"
	fs := checkRedirectorTrust(in, time.Now())
	if want := "trusts redirector images " + in.Config.Image + " (spec.current) and registry.example/meshinit/redirect:0.0.9 (spec.previous)"; len(fs) != 1 || fs[0].Status != StatusOK || fs[0].Detail != want {
		t.Errorf("with previous: %+v, want one ok %q", fs, want)
	}
}
