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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/internal/testkit"
)

// withValidationActions installs the chart with the bindings'
// validationActions set, restoring testValues when the test ends.
func (c *cluster) withValidationActions(t *testing.T, actions ...any) {
	t.Helper()
	c.install(t, testValuesWith(func(policy map[string]any) { policy["validationActions"] = actions }))
	t.Cleanup(func() {
		c.install(t, testValues())
		c.awaitInstalled(t)
	})
	c.awaitVerdict(t, "team-a", pod("probe", injected, annotations(excludeInbound, "8443")), verdict{})
}

// createFor creates p in ns for real (not a dry run), deleting it when the
// test ends.
func (c *cluster) createFor(t *testing.T, ns string, p *corev1.Pod) {
	t.Helper()
	p.Namespace = ns
	if err := c.client.Create(context.Background(), p); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, p.Name, err)
	}
	c.deletePod(t, ns, p.Name)
}

// updatePod reads pod ns/name, changes it and updates it: the verdict.
func (c *cluster) updatePod(ns, name string, change func(p *corev1.Pod)) (verdict, error) {
	var p corev1.Pod
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		return verdict{}, err
	}
	change(&p)
	return verdictOf(c.client.Update(context.Background(), &p))
}

// deletePod deletes a pod the test created, when it ends.
func (c *cluster) deletePod(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		_ = c.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	})
}

// TestWarnMode installs the chart with validationActions [Warn]: a violating
// pod is created, and kubectl shows the policy's message as a warning.
func TestWarnMode(t *testing.T) {
	c := apiServer(t)
	c.withValidationActions(t, "Warn")
	warning := "Warning: Validation failed for ValidatingAdmissionPolicy 'meshinit-redirectpolicy' with binding 'meshinit-redirectpolicy-cluster': " + msgExcluded8443
	bad := manifest(t, pod("warned", injected, annotations(excludeInbound, "8443")))
	testkit.Eventually(t, 30*time.Second, "kubectl warns", func() error {
		_, stderr, err := c.Kubectl(bad, "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
		if err != nil || !strings.Contains(stderr, warning) {
			return fmt.Errorf("kubectl: %v: %s", err, stderr)
		}
		return nil
	})
	stdout, stderr, err := c.Kubectl(bad, "create", "-n", "team-a", "-f", "-")
	if err != nil || strings.TrimSpace(stdout) != "pod/warned created" || strings.TrimSpace(stderr) != warning {
		t.Fatalf("kubectl create: %v\nstdout: %s\nstderr: %s\nwant warning: %s", err, stdout, stderr, warning)
	}
	c.deletePod(t, "team-a", "warned")
}

// TestAuditMode installs the chart with validationActions [Audit]: a
// violating pod is created, and the API server's audit log records the
// policy's message for it.
func TestAuditMode(t *testing.T) {
	c := apiServer(t)
	c.withValidationActions(t, "Audit")
	p := pod("audited", injected, annotations(excludeInbound, "8443"))
	p.Namespace = "team-a"
	if err := c.client.Create(context.Background(), p); err != nil {
		t.Fatalf("creating a violating pod in Audit mode: %v", err)
	}
	c.deletePod(t, "team-a", "audited")
	want := fmt.Sprintf(`[{"message":%q,"policy":%q,"binding":%q,"expressionIndex":5,"validationActions":["Audit"]}]`,
		msgExcluded8443, policyName, clusterBinding)
	testkit.Eventually(t, 10*time.Second, "the audit annotation", func() error {
		got, err := c.auditAnnotation("team-a", "audited", "validation.policy.admission.k8s.io/validation_failure")
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("audit annotation\n got  %s\n want %s", got, want)
		}
		return nil
	})
}

// auditAnnotation returns an annotation of the audit event of a pod's create.
func (c *cluster) auditAnnotation(ns, name, key string) (string, error) {
	f, err := os.Open(c.AuditLog)
	if err != nil {
		return "", err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<24)
	for lines.Scan() {
		var event struct {
			Verb        string                           `json:"verb"`
			Stage       string                           `json:"stage"`
			ObjectRef   struct{ Namespace, Name string } `json:"objectRef"`
			Annotations map[string]string                `json:"annotations"`
		}
		if err := json.Unmarshal(lines.Bytes(), &event); err != nil {
			return "", err
		}
		if event.Verb == "create" && event.Stage == "ResponseComplete" && event.ObjectRef.Namespace == ns && event.ObjectRef.Name == name {
			if v, ok := event.Annotations[key]; ok {
				return v, nil
			}
			return "", fmt.Errorf("audit event of %s/%s has no %s: %v", ns, name, key, event.Annotations)
		}
	}
	if err := lines.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no audit event for creating pod %s/%s yet", ns, name)
}
