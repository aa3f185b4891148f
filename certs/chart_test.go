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
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

const (
	release   = "meshinit"
	namespace = "meshinit-system"
)

// Chart values of the three ways to certificates (none set: self-managed).
var (
	certManagerValues    = map[string]any{"certManager": map[string]any{"enabled": true}}
	existingSecretValues = map[string]any{"certs": map[string]any{"existingSecret": true}}
)

// certsObjects renders the chart with values and returns the objects of the
// certs-*.yaml templates by kind/name.
func certsObjects(t *testing.T, values map[string]any) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range renderCerts(t, release, namespace, values) {
		if o.GetLabels()["app.kubernetes.io/instance"] != release {
			t.Errorf("%s/%s lacks the chart's labels", o.GetKind(), o.GetName())
		}
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out
}

// renderCerts renders the chart's certs-*.yaml templates, and the policy
// that confines the caBundle's writers, into objects.
func renderCerts(t *testing.T, releaseName, ns string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	files, err := charts.Render(charts.Options{ReleaseName: releaseName, Namespace: ns, Values: values})
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, path := range keys(files) {
		if !strings.Contains(path, "/templates/certs-") && !strings.HasSuffix(path, "/templates/webhook-cabundle-policy.yaml") {
			continue
		}
		decoded, err := charts.Decode(files[path])
		if err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		objs = append(objs, decoded...)
	}
	return objs
}

// decode converts an object to a typed one, failing on fields the type lacks.
func decode(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s/%s: %v", o.GetKind(), o.GetName(), err)
	}
}

// TestChartSelfManagedRBAC: in self-managed mode the webhook may read and
// update its two Secrets, which the chart creates empty, by name, read and
// delete the one Secret of the previous layout by name, and create none
// (it could mint a ServiceAccount token with create); and keep the caBundle
// of its own MutatingWebhookConfiguration.
func TestChartSelfManagedRBAC(t *testing.T) {
	objs := certsObjects(t, map[string]any{})
	var role rbacv1.Role
	var clusterRole rbacv1.ClusterRole
	decode(t, objs["Role/meshinit-webhook-certs"], &role)
	decode(t, objs["ClusterRole/meshinit-webhook-certs"], &clusterRole)
	wantRole := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"meshinit-webhook-serving", "meshinit-webhook-signer"}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"meshinit-webhook-tls"}, Verbs: []string{"get", "delete"}},
	}
	for _, name := range []string{"meshinit-webhook-serving", "meshinit-webhook-signer"} {
		var s corev1.Secret
		decode(t, objs["Secret/"+name], &s)
		if s.Namespace != namespace || s.Type != corev1.SecretTypeOpaque || len(s.Data) != 0 || len(s.StringData) != 0 {
			t.Errorf("Secret %s in %q of type %q with %d keys; want an empty Opaque Secret in %q (helm upgrade resets rendered keys)", name, s.Namespace, s.Type, len(s.Data)+len(s.StringData), namespace)
		}
	}
	if !rulesEqual(role.Rules, wantRole) || role.Namespace != namespace {
		t.Errorf("Role in %q: %+v\nwant in %q: %+v", role.Namespace, role.Rules, namespace, wantRole)
	}
	wantCluster := []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations"}, ResourceNames: []string{"meshinit"}, Verbs: []string{"get", "list", "watch", "patch"}}}
	if !rulesEqual(clusterRole.Rules, wantCluster) {
		t.Errorf("ClusterRole: %+v\nwant %+v", clusterRole.Rules, wantCluster)
	}
	for _, k := range []string{"RoleBinding/meshinit-webhook-certs", "ClusterRoleBinding/meshinit-webhook-certs"} {
		var b rbacv1.RoleBinding
		decode(t, objs[k], &b)
		want := rbacv1.Subject{Kind: "ServiceAccount", Name: "meshinit-webhook", Namespace: namespace}
		if len(b.Subjects) != 1 || b.Subjects[0] != want || b.RoleRef.Name != "meshinit-webhook-certs" {
			t.Errorf("%s binds %+v to %+v, want %+v", k, b.RoleRef, b.Subjects, want)
		}
	}
	if len(objs) != 8 {
		t.Errorf("self-managed mode renders %d certs objects, want 8 (two Secrets, RBAC, caBundle policy): %v", len(objs), keys(objs))
	}
}

func rulesEqual(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.Verbs, y.Verbs)
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestChartCertManager checks the cert-manager objects with cert-manager's
// API types: the serving Certificate's names and Secret match what the Go
// side expects, and its issuer chain is wired up.
func TestChartCertManager(t *testing.T) {
	objs := certsObjects(t, certManagerValues)
	var serving, ca cmapi.Certificate
	var selfSigned, caIssuer cmapi.Issuer
	decode(t, objs["Certificate/meshinit-webhook"], &serving)
	decode(t, objs["Certificate/meshinit-webhook-ca"], &ca)
	decode(t, objs["Issuer/meshinit-webhook-selfsigned"], &selfSigned)
	decode(t, objs["Issuer/meshinit-webhook-ca"], &caIssuer)

	if want := DNSNames("meshinit-webhook", namespace); !slices.Equal(serving.Spec.DNSNames, want) {
		t.Errorf("serving Certificate dnsNames %v, want %v", serving.Spec.DNSNames, want)
	}
	if serving.Spec.SecretName != "meshinit-webhook-tls" || serving.Namespace != namespace {
		t.Errorf("serving Certificate in %q writes %q, want meshinit-webhook-tls in %q", serving.Namespace, serving.Spec.SecretName, namespace)
	}
	if !slices.Equal(serving.Spec.Usages, []cmapi.KeyUsage{cmapi.UsageDigitalSignature, cmapi.UsageServerAuth}) || serving.Spec.IsCA {
		t.Errorf("serving Certificate usages %v isCA %v", serving.Spec.Usages, serving.Spec.IsCA)
	}
	chain := []struct {
		what string
		ref  cmmeta.IssuerReference
		to   *cmapi.Issuer
	}{
		{"serving Certificate", serving.Spec.IssuerRef, &caIssuer},
		{"CA Certificate", ca.Spec.IssuerRef, &selfSigned},
	}
	for _, c := range chain {
		if c.ref != (cmmeta.IssuerReference{Group: "cert-manager.io", Kind: "Issuer", Name: c.to.Name}) {
			t.Errorf("%s issuerRef %+v, want the Issuer %s", c.what, c.ref, c.to.Name)
		}
	}
	if selfSigned.Spec.SelfSigned == nil || !ca.Spec.IsCA || caIssuer.Spec.CA == nil || caIssuer.Spec.CA.SecretName != ca.Spec.SecretName {
		t.Errorf("chain broken: self-signed %v, CA isCA %v, CA Issuer secret %+v vs CA Certificate secret %q",
			selfSigned.Spec.SelfSigned != nil, ca.Spec.IsCA, caIssuer.Spec.CA, ca.Spec.SecretName)
	}

	var role rbacv1.Role
	decode(t, objs["Role/meshinit-webhook-certs"], &role)
	wantRole := []rbacv1.PolicyRule{
		{APIGroups: []string{"cert-manager.io"}, Resources: []string{"certificates"}, ResourceNames: []string{"meshinit-webhook"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"meshinit-webhook-tls"}, Verbs: []string{"get"}},
	}
	if !rulesEqual(role.Rules, wantRole) {
		t.Errorf("Role: %+v\nwant %+v", role.Rules, wantRole)
	}
	if _, ok := objs["ClusterRole/meshinit-webhook-certs"]; ok {
		t.Error("cert-manager mode renders the ClusterRole for patching the caBundle")
	}
}

func TestChartCertManagerIssuerRef(t *testing.T) {
	ref := map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
	objs := certsObjects(t, map[string]any{"certManager": map[string]any{"enabled": true, "issuerRef": ref, "duration": "720h", "renewBefore": "240h"}})
	var serving cmapi.Certificate
	decode(t, objs["Certificate/meshinit-webhook"], &serving)
	if want := (cmmeta.IssuerReference{Name: "corp-ca", Kind: "ClusterIssuer", Group: "cert-manager.io"}); serving.Spec.IssuerRef != want {
		t.Errorf("issuerRef %+v, want %+v", serving.Spec.IssuerRef, want)
	}
	if serving.Spec.Duration.Duration.String() != "720h0m0s" || serving.Spec.RenewBefore.Duration.String() != "240h0m0s" {
		t.Errorf("duration %v renewBefore %v", serving.Spec.Duration, serving.Spec.RenewBefore)
	}
	if want := []string{"Certificate/meshinit-webhook", "Role/meshinit-webhook-certs", "RoleBinding/meshinit-webhook-certs",
		"ValidatingAdmissionPolicy/meshinit-webhook-cabundle", "ValidatingAdmissionPolicyBinding/meshinit-webhook-cabundle"}; !slices.Equal(keys(objs), want) {
		t.Errorf("objects %v, want %v (no Issuers of the chart's own)", keys(objs), want)
	}
}

func TestChartExistingSecret(t *testing.T) {
	want := []string{"ValidatingAdmissionPolicy/meshinit-webhook-cabundle", "ValidatingAdmissionPolicyBinding/meshinit-webhook-cabundle"}
	if objs := certsObjects(t, existingSecretValues); !slices.Equal(keys(objs), want) {
		t.Errorf("certs.existingSecret renders %v, want only the caBundle policy %v", keys(objs), want)
	}
}

// renderNamed renders the named templates of _certs.tpl as the webhook's
// templates would include them.
func renderNamed(t *testing.T, values map[string]any, names ...string) map[string]string {
	t.Helper()
	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		ch.Templates = append(ch.Templates, &helmchart.File{
			Name: "templates/zz-" + name + ".yaml",
			Data: []byte(`{{ include "` + name + `" . }}`),
		})
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, name := range names {
		got[name] = out["meshinit/templates/zz-"+name+".yaml"]
	}
	return got
}

// TestChartArgs: the flags the chart passes parse with BindFlags into
// Options that validate, naming what the chart creates.
func TestChartArgs(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   Options
	}{
		{nil, Options{Mode: ModeSelfManaged, SecretName: "meshinit-webhook-serving", CASecretName: "meshinit-webhook-signer", LegacySecretName: "meshinit-webhook-tls",
			ServiceName: "meshinit-webhook", ServiceNamespace: namespace, WebhookConfigName: "meshinit"}},
		{map[string]any{"certs": map[string]any{"selfManaged": map[string]any{"caValidity": "1000h", "validity": "100h", "propagationDelay": "2m"}, "secretName": "tls"}},
			Options{Mode: ModeSelfManaged, SecretName: "meshinit-webhook-serving", CASecretName: "meshinit-webhook-signer", LegacySecretName: "tls",
				ServiceName: "meshinit-webhook", ServiceNamespace: namespace, WebhookConfigName: "meshinit", CAValidity: 1000 * time.Hour, ServingValidity: 100 * time.Hour, PropagationDelay: 2 * time.Minute}},
		{certManagerValues, Options{Mode: ModeCertManager, SecretName: "meshinit-webhook-tls", ServiceNamespace: namespace, CertificateName: "meshinit-webhook"}},
		{existingSecretValues, Options{Mode: ModeFiles}},
	} {
		t.Run(string(tc.want.Mode), func(t *testing.T) {
			var args []string
			if err := yaml.UnmarshalStrict([]byte(renderNamed(t, tc.values, "meshinit.certs.args")["meshinit.certs.args"]), &args); err != nil {
				t.Fatal(err)
			}
			var got Options
			fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
			got.BindFlags(fs)
			if err := fs.Parse(args); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			want := tc.want
			want.CertDir = "/var/run/meshinit/serving-certs"
			for _, o := range []*Options{&got, &want} {
				o.setDefaults()
				o.Clock, o.Log = nil, logr.Logger{}
			}
			if got != want {
				t.Errorf("args %v parse to\n%+v\nwant\n%+v", args, got, want)
			}
			if err := got.validate(); err != nil {
				t.Errorf("args %v do not validate: %v", args, err)
			}
		})
	}
}

func TestChartAnnotationsAndVolumes(t *testing.T) {
	names := []string{"meshinit.certs.annotations", "meshinit.certs.volumes", "meshinit.certs.volumeMounts"}
	sm := renderNamed(t, nil, names...)
	cm := renderNamed(t, certManagerValues, names...)
	if sm["meshinit.certs.annotations"] != "" {
		t.Errorf("self-managed annotations %q, want none", sm["meshinit.certs.annotations"])
	}
	var ann map[string]string
	if err := yaml.UnmarshalStrict([]byte(cm["meshinit.certs.annotations"]), &ann); err != nil {
		t.Fatal(err)
	}
	if want := namespace + "/meshinit-webhook"; ann[cmapi.WantInjectAnnotation] != want || len(ann) != 1 {
		t.Errorf("cert-manager annotations %v, want %s: %s", ann, cmapi.WantInjectAnnotation, want)
	}
	for mode, out := range map[string]map[string]string{"self-managed": sm, "cert-manager": cm} {
		var vols []map[string]any
		var mounts []map[string]any
		if err := yaml.UnmarshalStrict([]byte(out["meshinit.certs.volumes"]), &vols); err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict([]byte(out["meshinit.certs.volumeMounts"]), &mounts); err != nil {
			t.Fatal(err)
		}
		_, emptyDir := vols[0]["emptyDir"]
		if len(vols) != 1 || len(mounts) != 1 || emptyDir != (mode == "self-managed") || mounts[0]["readOnly"] != (mode != "self-managed") {
			t.Errorf("%s: volumes %v mounts %v", mode, vols, mounts)
		}
	}
}

// TestChartCABundlePolicy: the policy confines the webhook's ServiceAccount
// in every mode and cert-manager's cainjector with certManager.enabled, and
// compares every field of a MutatingWebhook but the caBundle, and the
// metadata the API server does not keep: a field k8s.io/api adds fails here
// until the policy compares it.
func TestChartCABundlePolicy(t *testing.T) {
	const webhookSA = "system:serviceaccount:meshinit-system:meshinit-webhook"
	for _, tc := range []struct {
		name   string
		values map[string]any
		users  string
	}{
		{"self-managed", nil, `["` + webhookSA + `"]`},
		{"files", existingSecretValues, `["` + webhookSA + `"]`},
		{"cert-manager", certManagerValues, `["` + webhookSA + `","system:serviceaccount:cert-manager:cert-manager-cainjector"]`},
		{"cert-manager elsewhere", map[string]any{
			"certManager": map[string]any{"enabled": true},
			"certs":       map[string]any{"certManagerCAInjector": map[string]any{"namespace": "security", "name": "cm-cainjector"}},
		}, `["` + webhookSA + `","system:serviceaccount:security:cm-cainjector"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var vap admissionregistrationv1.ValidatingAdmissionPolicy
			decode(t, certsObjects(t, tc.values)["ValidatingAdmissionPolicy/meshinit-webhook-cabundle"], &vap)
			if got := vap.Spec.MatchConditions[0].Expression; got != "request.userInfo.username in "+tc.users {
				t.Errorf("matchCondition %q, want the users %s", got, tc.users)
			}
			if *vap.Spec.FailurePolicy != admissionregistrationv1.Fail || vap.Spec.MatchConstraints.ResourceRules[0].ResourceNames[0] != "meshinit" {
				t.Errorf("failurePolicy %s on %v, want Fail on meshinit", *vap.Spec.FailurePolicy, vap.Spec.MatchConstraints.ResourceRules)
			}
		})
	}

	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, certsObjects(t, nil)["ValidatingAdmissionPolicy/meshinit-webhook-cabundle"], &vap)
	var changed string
	for _, v := range vap.Spec.Variables {
		if v.Name == "changed" {
			changed = v.Expression
		}
	}
	compared := func(prefix string, typ reflect.Type, skip ...string) {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" || slices.Contains(skip, name) {
				continue
			}
			if !strings.Contains(changed, prefix+name+" != ") && !strings.Contains(changed, prefix+name+") != ") {
				t.Errorf("the policy does not compare %s%s", prefix, name)
			}
		}
	}
	compared("w.?", reflect.TypeFor[admissionregistrationv1.MutatingWebhook](), "clientConfig")
	compared("w.clientConfig.?", reflect.TypeFor[admissionregistrationv1.WebhookClientConfig](), "caBundle")
	// What the API server keeps, or what cannot change.
	compared("object.metadata.?", reflect.TypeFor[metav1.ObjectMeta](), "name", "generateName", "namespace", "selfLink", "uid",
		"resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields")
	if typ := reflect.TypeFor[admissionregistrationv1.MutatingWebhookConfiguration](); typ.NumField() != 3 {
		t.Errorf("MutatingWebhookConfiguration has %d fields; the policy knows of TypeMeta, ObjectMeta and webhooks", typ.NumField())
	}
}
