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
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `make demo`'s program (e2e/cmd/demo) on the local cluster,
// as a new user would, and checks that it shows what the README says it
// shows, so that the first command a user runs keeps working. Then it runs
// it as `make demo CLUSTER=existing` would on a cluster the user already
// has (the same local cluster, named by KUBECONFIG): it says which cluster
// and what it will create there before it creates anything.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	if !e.IsLocal() {
		t.Skip("skipped: the demo's test runs on the local cluster only (it runs the demo there both ways)")
	}
	t.Cleanup(func() {
		ctx := context.Background()
		e.uninstall(t, ctx)
		_, _ = e.Kubectl(ctx, "", "delete", "namespace", "demo", "demo-client", "--ignore-not-found", "--wait=false")
	})
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	began := time.Now()
	out, err := exec.CommandContext(ctx, goTool, "run", "./cmd/demo").CombinedOutput()
	t.Logf("timing: demo %.1fs", time.Since(began).Seconds())
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"==> helm test meshinit -n meshinit-system",
		"\n      meshinit-redirect\n        image: ghcr.io/meshinit/redirector:",
		"Completed (exit code 0)",
		`msg="rules in place"`,
		`--comment "meshinit: inbound to the proxy" -j REDIRECT --to-ports 15006`,
		"\n      proxy-in orig=",
		"\n      app\n",
		"\n      proxy-out orig=",
		"\n      client\n",
		"Error from server (Forbidden)",
		"denied request: port 8080 is required by RedirectPolicy demo/require-8080",
		"IPv4: redirected",
		"export KUBECONFIG=",
		"make demo-down",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("the demo's output:\n%s", out)
	}
	// README.md's transcripts, on the cluster and installation the demo
	// leaves, as a reader who has just run it.
	t.Run("README", func(t *testing.T) { testREADMETranscripts(t, ctx, e) })

	t.Run("CLUSTER=existing", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, goTool, "run", "./cmd/demo")
		cmd.Env = append(os.Environ(), "MESHINIT_CLUSTER=existing", "KUBECONFIG="+e.Kubeconfig, "MESHINIT_E2E_CONTAINERD="+e.Containerd)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out)
		}
		text := string(out)
		announced := strings.Index(text, "will create there:")
		installed := strings.Index(text, "==> Installing the chart")
		if announced < 0 || installed < announced {
			t.Errorf("the demo did not say what it will create before installing the chart")
		}
		for _, want := range []string{
			"the demo run on the existing cluster KUBECONFIG=" + e.Kubeconfig,
			"namespaces demo (labelled meshinit.io/injection=enabled) and demo-client",
			"Ctrl-C now stops it, with nothing created",
			"IPv4: redirected",
			"\n      proxy-in orig=",
			"denied request: port 8080 is required by RedirectPolicy demo/require-8080",
			"Remove it: remove what the demo created with `kubectl delete namespace demo demo-client` and `helm uninstall meshinit -n meshinit-system`",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the demo's output lacks %q", want)
			}
		}
		if strings.Contains(text, "make demo-down") || strings.Contains(text, "Bringing up the local") {
			t.Errorf("the demo on an existing cluster speaks of the local one")
		}
		if t.Failed() {
			t.Logf("the demo's output:\n%s", out)
		}
	})
}
