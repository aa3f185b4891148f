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
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/charts"
)

// TestReview: a pod that carries what Review injected is unchanged under
// the same configuration and not under a changed one, and Container is the
// init container the patch adds, in both cases the one built for the
// configuration reviewed under.
func TestReview(t *testing.T) {
	parse := func(yaml string) *Config {
		t.Helper()
		c, err := ParseConfig([]byte(yaml), "meshinit-system")
		if err != nil {
			t.Fatal(err)
		}
		return &c
	}
	before := parse("image: redirector:1\n")
	after := parse("image: redirector:1\nredirect: {exclude-outbound-ports: \"22\"}\n")
	enabled := map[string]string{NamespaceLabel: "enabled"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}

	first := Review(pod, "app", enabled, before)
	if first.Outcome != OutcomeInjected || first.Container == nil || first.Container.Name != ContainerName {
		t.Fatalf("a new pod: outcome %s, container %+v; want injected with %s", first.Outcome, first.Container, ContainerName)
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var injected corev1.Pod
	if err := json.Unmarshal(applyOps(t, raw, first.Patch), &injected); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(injected.Spec.InitContainers[0], *first.Container) {
		t.Errorf("Container %+v is not the one the patch adds, %+v", *first.Container, injected.Spec.InitContainers[0])
	}

	again := Review(&injected, "app", enabled, before)
	if again.Outcome != OutcomeUnchanged || !equality.Semantic.DeepEqual(*again.Container, *first.Container) {
		t.Errorf("the injected pod under the same configuration: outcome %s, want %s with the same container", again.Outcome, OutcomeUnchanged)
	}
	changed := Review(&injected, "app", enabled, after)
	if changed.Outcome != OutcomeInjected || !strings.Contains(strings.Join(changed.Container.Args, " "), "--exclude-outbound-ports=22") {
		t.Errorf("the injected pod under a changed configuration: outcome %s, args %q; want %s with --exclude-outbound-ports=22",
			changed.Outcome, changed.Container.Args, OutcomeInjected)
	}
	if changed.Status.Config == again.Status.Config {
		t.Errorf("status config %s unchanged by a changed configuration", changed.Status.Config)
	}
	if skipped := Review(pod, "app", nil, before); skipped.Outcome != OutcomeSkipped || skipped.Container != nil {
		t.Errorf("a pod not opted in: outcome %s, container %+v; want %s and none", skipped.Outcome, skipped.Container, OutcomeSkipped)
	}
}

// TestParseArgsReadsTheChartsDeployment: the arguments the chart gives the
// webhook container parse into the options the server runs with, in each
// certificate mode.
func TestParseArgsReadsTheChartsDeployment(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   certs.Options
	}{
		{nil, certs.Options{Mode: certs.ModeSelfManaged, SecretName: "meshinit-webhook-serving", CASecretName: "meshinit-webhook-signer", LegacySecretName: "meshinit-webhook-tls",
			ServiceName: "meshinit-webhook", WebhookConfigName: "meshinit"}},
		{map[string]any{"certManager": map[string]any{"enabled": true}}, certs.Options{Mode: certs.ModeCertManager, SecretName: "meshinit-webhook-tls", CertificateName: "meshinit-webhook"}},
		{map[string]any{"certs": map[string]any{"existingSecret": true}}, certs.Options{Mode: certs.ModeFiles}},
	} {
		var d appsv1.Deployment
		charts.MustObject(t, charts.Options{Namespace: chartNamespace, Values: tc.values}, "Deployment", "meshinit-webhook", &d)
		o, err := ParseArgs(d.Spec.Template.Spec.Containers[0].Args)
		if err != nil {
			t.Fatalf("%v: %v", tc.values, err)
		}
		got := o.Certs
		if got.Mode != tc.want.Mode || got.SecretName != tc.want.SecretName || got.CASecretName != tc.want.CASecretName || got.LegacySecretName != tc.want.LegacySecretName || got.ServiceName != tc.want.ServiceName ||
			got.WebhookConfigName != tc.want.WebhookConfigName || got.CertificateName != tc.want.CertificateName {
			t.Errorf("%v: certificate options %+v, want %+v", tc.values, got, tc.want)
		}
		if o.ConfigFile != "/etc/meshinit/webhook/config.yaml" || o.Port != 9443 {
			t.Errorf("%v: config %q, port %d", tc.values, o.ConfigFile, o.Port)
		}
	}
	if _, err := ParseArgs([]string{"--no-such-flag"}); err == nil {
		t.Error("an unknown flag parsed")
	}
}
