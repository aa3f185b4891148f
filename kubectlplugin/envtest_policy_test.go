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
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// TestPolicyModeAgainstAPIServer: with injector policy the API server
// injects pods itself, by the chart's MutatingAdmissionPolicy. check
// recognises that installation by the objects the chart renders (no
// webhook, no certificates), pods judges the pods the policy injected by
// the ConfigMap's configuration (current, the same status), and after a
// helm upgrade with other values finds the old pods stale while a new pod
// gets the new values.
func TestPolicyModeAgainstAPIServer(t *testing.T) {
	e := newAPIServerEnv(t)
	e.apiServerInjects = true
	ctx := context.Background()
	values := func(excludeOutbound string) map[string]any {
		return map[string]any{
			"injector": "policy",
			"inject":   map[string]any{"redirect": map[string]any{"exclude-outbound-ports": excludeOutbound}},
			"policy":   map[string]any{"defaultRedirectPolicy": map[string]any{"interception": "AllowOptOut"}},
		}
	}
	e.createNamespace(t, testNamespace, nil)
	e.applyChart(t, values(""))
	e.typeCheck(t)
	e.createNamespace(t, "app", map[string]string{webhook.NamespaceLabel: "enabled"})
	// The API server's policy informers see new policies after a moment.
	testkit.Eventually(t, 30*time.Second, "the MutatingAdmissionPolicy to inject", func() error {
		return e.dryRunInjects(ctx, "--exclude-outbound-ports=")
	})
	web := e.deployment(t, "app", "web", nil, 2)
	e.plainPod(t, "app", "opted-out", map[string]string{webhook.PodLabel: "false"})
	if inits := web[0].Spec.InitContainers; len(inits) != 1 || inits[0].Name != webhook.ContainerName {
		t.Fatalf("pod %s: init containers %+v, want the API server to have injected %s", web[0].Name, inits, webhook.ContainerName)
	}

	t.Run("healthy: check and pods exit 0", func(t *testing.T) {
		out := e.mustPlugin(t, 0, []string{"no problems"}, "check")
		for _, absent := range []string{"MutatingWebhookConfiguration", "Deployment", "serving certificate", "ValidatingAdmissionPolicy meshinit-webhook-cabundle"} {
			if strings.Contains(out, absent) {
				t.Errorf("check names %q in policy mode", absent)
			}
		}
		var got struct{ Findings []Finding }
		if err := json.Unmarshal([]byte(e.mustPlugin(t, 0, nil, "check", "-o", "json")), &got); err != nil {
			t.Fatal(err)
		}
		for _, want := range []Finding{
			{Status: StatusOK, Code: CodeMutatingPolicy, Object: "MutatingAdmissionPolicy meshinit-inject", Detail: "injects in the API server, failurePolicy Fail; bound by meshinit-inject, meshinit-inject-pod"},
			{Status: StatusOK, Code: CodeTypeChecked, Object: "ValidatingAdmissionPolicy meshinit-inject", Detail: "type-checked without warnings"},
			{Status: StatusOK, Code: CodeTypeChecked, Object: "ValidatingAdmissionPolicy meshinit-inject-podsecurity", Detail: "type-checked without warnings"},
			{Status: StatusOK, Code: CodePolicyBound, Object: "ValidatingAdmissionPolicyBinding meshinit-inject-podsecurity", Detail: "binds meshinit-inject-podsecurity where its matchResources select, validationActions [Warn]"},
			{Status: StatusOK, Code: CodeWebhookConfig, Object: "ConfigMap meshinit-system/meshinit-webhook", Detail: "the webhook's configuration parses"},
			{Status: StatusOK, Code: CodePolicyBound, Object: "ValidatingAdmissionPolicyBinding meshinit-redirector-trust-namespace",
				Detail: "binds meshinit-redirector-trust with RedirectorTrust meshinit-system/meshinit-redirector-trust where its matchResources select, validationActions [Deny]"},
			// The image the MutatingAdmissionPolicy injects (it injects
			// the ConfigMap's configuration) is the one trusted.
			{Status: StatusOK, Code: CodeRedirectorTrust, Object: "RedirectorTrust meshinit-system/meshinit-redirector-trust", Detail: "trusts redirector image " + e.config.Image + " (spec.current)"},
		} {
			if !slices.Contains(got.Findings, want) {
				t.Errorf("check -o json lacks %+v", want)
			}
		}
		e.mustPlugin(t, 0, []string{"deployment/web", web[0].Name, "current", "not-injected (pod-opted-out)", "3 pods"}, "pods", "-n", "app")
		rep := e.podsJSON(t, 0)
		for _, p := range allPods(rep) {
			if p.Name != "opted-out" && (p.State != StateCurrent || p.Config == "" || p.Config != p.WantConfig) {
				t.Errorf("pod %s: %s, status config %q, want current and %q", p.Name, p.State, p.Config, p.WantConfig)
			}
		}
	})

	t.Run("helm upgrade with other values: old pods stale with the rollout restart, a new pod current", func(t *testing.T) {
		e.applyChart(t, values("22"))
		e.typeCheck(t)
		testkit.Eventually(t, 30*time.Second, "the upgraded MutatingAdmissionPolicy to inject", func() error {
			return e.dryRunInjects(ctx, "--exclude-outbound-ports=22")
		})
		e.bareInjectedPod(t, "app", "after-upgrade", nil)
		e.mustPlugin(t, 0, []string{"no problems"}, "check")
		out := e.mustPlugin(t, 1, []string{"stale", `--exclude-outbound-ports "" -> "22"`, "kubectl rollout restart deployment/web -n app"}, "pods", "-n", "app")
		if n := strings.Count(out, "stale"); n != 2 { // web's two pods
			t.Errorf("%d stale pods, want 2", n)
		}
		rep := e.podsJSON(t, 1)
		pods := allPods(rep)
		i := slices.IndexFunc(pods, func(p PodReport) bool { return p.Name == "after-upgrade" })
		if i < 0 || pods[i].State != StateCurrent {
			t.Errorf("the pod created after the upgrade is not reported current: %+v", pods)
		}
	})

	t.Run("the ConfigMap out of step with the MutatingAdmissionPolicy: check exits 1", func(t *testing.T) {
		restore := e.changeConfig(t, func(c string) string {
			return strings.Replace(c, `exclude-outbound-ports: "22"`, `exclude-outbound-ports: "23"`, 1)
		})
		defer restore()
		e.mustPlugin(t, 1, []string{"MutatingAdmissionPolicy meshinit-inject", "does not inject the configuration in ConfigMap meshinit-webhook", "helm upgrade meshinit charts/meshinit -n meshinit-system --reset-then-reuse-values"}, "check")
	})

	t.Run("the MutatingAdmissionPolicy unbound: check exits 1", func(t *testing.T) {
		for _, name := range []string{"meshinit-inject", "meshinit-inject-pod"} {
			if err := e.admin.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		e.mustPlugin(t, 1, []string{"MutatingAdmissionPolicy meshinit-inject", "no MutatingAdmissionPolicyBinding binds it: no pod is injected by it"}, "check")
	})
}

// dryRunInjects creates a pod in namespace app with a server-side dry run
// and returns an error unless the API server injected meshinit's init
// container with arg among its arguments.
func (e *apiServerEnv) dryRunInjects(ctx context.Context, arg string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: "app"}, Spec: podSpec()}
	got, err := e.admin.CoreV1().Pods("app").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return err
	}
	if inits := got.Spec.InitContainers; len(inits) == 0 || inits[0].Name != webhook.ContainerName || !slices.Contains(inits[0].Args, arg) {
		return fmt.Errorf("init containers %+v, want %s with %s", inits, webhook.ContainerName, arg)
	}
	return nil
}

// podsJSON runs pods -n app -o json, which must exit with code.
func (e *apiServerEnv) podsJSON(t *testing.T, code int) PodsReport {
	t.Helper()
	var rep PodsReport
	if err := json.Unmarshal([]byte(e.mustPlugin(t, code, nil, "pods", "-n", "app", "-o", "json")), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// allPods are the reports of every workload's pods.
func allPods(rep PodsReport) []PodReport {
	var out []PodReport
	for _, w := range rep.Workloads {
		out = append(out, w.Pods...)
	}
	return out
}
