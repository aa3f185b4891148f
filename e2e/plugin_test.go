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

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/e2e/harness"
	"github.com/meshinit/meshinit/kubectlplugin"
)

// TestKubectlMeshinit runs `kubectl meshinit` on a real cluster with the
// chart installed: a healthy installation, where every command exits 0;
// then each problem it is for, found by the right command with exit 1, and
// the command it prints putting it right: a pod created before its
// namespace opted in, a RedirectPolicy created after pods that violate it,
// pods left with the settings of before a helm upgrade (fixed by the
// printed rollout restart), and a caBundle the webhook could not keep
// (fixed by helm upgrade and the printed rollout restart). The served
// certificate is read from the webhook pods' addresses, as the API server
// reads it.
func TestKubectlMeshinit(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	img := e.images
	installed := false
	t.Cleanup(func() {
		if installed {
			e.uninstall(t, context.Background())
		}
	})
	plugin := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		return runPlugin(t, ctx, e.Kubeconfig, args...)
	}
	// expect runs the plugin until it exits with code and its output holds
	// each of want (the cluster's controllers and informers take a moment).
	expect := func(t *testing.T, code int, want []string, args ...string) string {
		t.Helper()
		var out string
		if err := eventually(ctx, 90*time.Second, func() error {
			var got int
			if out, got = plugin(t, args...); got != code {
				return fmt.Errorf("kubectl meshinit %s: exit %d, want %d", strings.Join(args, " "), got, code)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					return fmt.Errorf("kubectl meshinit %s: output lacks %q", strings.Join(args, " "), w)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}

	installed = true
	e.install(t, ctx, nil)
	app := e.createNamespace(t, ctx, "e2e-plugin", map[string]string{injectionLabel: "enabled"})
	e.apply(t, ctx, img.Deployment(app, "web", nil))
	e.must(t, ctx, "-n", app, "rollout", "status", "deployment/web", "--timeout", "180s")
	e.apply(t, ctx, img.AppPod("legacy", nil, map[string]string{excludeInbound: "8080"}), "-n", app)
	e.ready(t, ctx, app, "legacy")

	t.Run("healthy: every command exits 0", func(t *testing.T) {
		expect(t, 0, []string{"type-checked without warnings", "available, 2 of 2 replicas ready", "2 ready endpoints",
			"trusted for meshinit-webhook.meshinit-system.svc by the caBundle of every webhook (2)", "no problems"}, "check")
		expect(t, 0, []string{"deployment/web", "pod/legacy", "2 pods: all as the installed configuration injects them"}, "pods", "-n", app)
		expect(t, 0, []string{"RedirectPolicies: meshinit-system/default", "every one admitted"}, "audit", "-n", app)
		expect(t, 0, []string{"State:     current", "--exclude-inbound-ports=8080", "-A MESHINIT_INBOUND -p tcp -m tcp --dport 8080"}, "explain", "legacy", "-n", app)
	})

	t.Run("a pod created before its namespace opted in: pods exits 1", func(t *testing.T) {
		late := e.createNamespace(t, ctx, "e2e-plugin-late", nil)
		e.apply(t, ctx, img.PlainPod("before-opt-in", nil, nil), "-n", late)
		e.ready(t, ctx, late, "before-opt-in")
		e.must(t, ctx, "label", "namespace", late, injectionLabel+"=enabled")
		expect(t, 1, []string{"not-injected (missing)", "kubectl delete pod before-opt-in -n " + late}, "pods", "-n", late)
	})

	t.Run("a RedirectPolicy created after pods that violate it: audit exits 1", func(t *testing.T) {
		e.apply(t, ctx, harness.RequiredInboundPortPolicy(app, "require-8080", 8080))
		defer e.must(t, ctx, "-n", app, "delete", "redirectpolicy", "require-8080")
		expect(t, 1, []string{"pod/legacy", "refused", "port 8080 is required by RedirectPolicy " + app + "/require-8080"}, "audit", "-n", app)
	})

	t.Run("pods with the settings of before a helm upgrade: pods exits 1; the printed rollout restart fixes them", func(t *testing.T) {
		e.install(t, ctx, map[string]any{"inject": map[string]any{
			"redirect": map[string]any{"exclude-outbound-ports": "22"},
		}})
		fix := "kubectl rollout restart deployment/web -n " + app
		expect(t, 1, []string{"stale", `--exclude-outbound-ports "" -> "22"`, fix}, "pods", "-n", app)
		e.must(t, ctx, strings.Fields(strings.TrimPrefix(fix, "kubectl "))...)
		e.must(t, ctx, "-n", app, "rollout", "status", "deployment/web", "--timeout", "180s")
		if err := eventually(ctx, 90*time.Second, func() error {
			out, _ := plugin(t, "pods", "-n", app, "-o", "json")
			var rep kubectlplugin.PodsReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				return err
			}
			for _, w := range rep.Workloads {
				if w.Kind == "Deployment" && w.Name == "web" && len(w.Pods) == 1 && w.Pods[0].State == kubectlplugin.StateCurrent {
					return nil
				}
			}
			return fmt.Errorf("deployment/web's pods are not all current: %+v", rep.Workloads)
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a caBundle the webhook cannot keep: check exits 1; helm upgrade and the printed rollout restart fix it", func(t *testing.T) {
		// The webhook loses the right to keep its caBundle, then someone
		// writes another CA there.
		e.must(t, ctx, "delete", "clusterrolebinding", webhookName+"-certs")
		other, err := certs.NewCA("someone-else", time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		bundle := base64.StdEncoding.EncodeToString(other.CertPEM())
		e.must(t, ctx, "patch", "mutatingwebhookconfiguration", release, "--type=json", "-p",
			fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":%q},{"op":"replace","path":"/webhooks/1/clientConfig/caBundle","value":%q}]`, bundle, bundle))
		fix := "kubectl -n " + releaseNamespace + " rollout restart deployment/" + webhookName
		expect(t, 1, []string{"the caBundle does not trust it for meshinit-webhook.meshinit-system.svc", "x509: certificate signed by unknown authority", fix}, "check")

		e.install(t, ctx, nil) // puts the ClusterRoleBinding back
		e.must(t, ctx, strings.Fields(strings.TrimPrefix(fix, "kubectl "))...)
		e.must(t, ctx, "-n", releaseNamespace, "rollout", "status", "deployment/"+webhookName, "--timeout", "180s")
		expect(t, 0, []string{"no problems"}, "check")
	})
}
