package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func manifest(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	b, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKubectlDryRun: `kubectl apply --dry-run=server` of a violating pod
// prints the policy's message and stores nothing; of a compliant pod it
// succeeds, and stores nothing either.
func TestKubectlDryRun(t *testing.T) {
	c := apiServer(t)
	bad := pod("dry-bad", injected, annotations(excludeInbound, "8443"))
	_, stderr, err := c.run(manifest(t, bad), "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
	want := `Error from server (Forbidden): error when creating "STDIN": pods "dry-bad" is forbidden: ValidatingAdmissionPolicy 'meshinit-redirectpolicy' with binding 'meshinit-redirectpolicy-cluster' denied request: ` + msgExcluded8443
	if err == nil || strings.TrimSpace(stderr) != want {
		t.Errorf("violating pod: %v\nstderr: %s\nwant:   %s", err, stderr, want)
	}
	good := pod("dry-good", injected)
	stdout, stderr, err := c.run(manifest(t, good), "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
	if err != nil || strings.TrimSpace(stdout) != "pod/dry-good created (server dry run)" {
		t.Errorf("compliant pod: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	for _, name := range []string{"dry-bad", "dry-good"} {
		if _, stderr, err := c.run("", "get", "pod", "-n", "team-a", name); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("pod %s was stored by a dry run: %v %s", name, err, stderr)
		}
	}
}

// TestWarnMode installs the chart with validationActions [Warn]: a violating
// pod is created, and kubectl shows the policy's message as a warning.
func TestWarnMode(t *testing.T) {
	c := apiServer(t)
	c.install(t, map[string]any{"policy": map[string]any{
		"validationActions":     []any{"Warn"},
		"defaultRedirectPolicy": testValues["policy"].(map[string]any)["defaultRedirectPolicy"],
	}})
	t.Cleanup(func() {
		c.install(t, testValues)
		c.awaitVerdict(t, "team-a", pod("probe", injected, annotations(excludeInbound, "8443")), verdict{clusterBinding, msgExcluded8443, ""})
	})
	warning := "Warning: Validation failed for ValidatingAdmissionPolicy 'meshinit-redirectpolicy' with binding 'meshinit-redirectpolicy-cluster': " + msgExcluded8443
	bad := manifest(t, pod("warned", injected, annotations(excludeInbound, "8443")))
	eventually(t, 30*time.Second, func() error {
		_, stderr, err := c.run(bad, "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
		if err != nil || !strings.Contains(stderr, warning) {
			return fmt.Errorf("kubectl: %v: %s", err, stderr)
		}
		return nil
	})
	stdout, stderr, err := c.run(bad, "create", "-n", "team-a", "-f", "-")
	if err != nil || strings.TrimSpace(stdout) != "pod/warned created" || strings.TrimSpace(stderr) != warning {
		t.Fatalf("kubectl create: %v\nstdout: %s\nstderr: %s\nwant warning: %s", err, stdout, stderr, warning)
	}
	t.Cleanup(func() {
		_ = c.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "warned"}})
	})
}
