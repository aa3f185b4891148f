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
// shows, so that the first command a user runs keeps working.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	if !e.IsLocal() {
		t.Skip("skipped: the demo runs on the local cluster only, and KUBECONFIG names another")
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
}
