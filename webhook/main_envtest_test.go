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

package webhook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// TestMainAgainstAPIServer runs the command as the chart does (its config
// file, self-managed certificates) against a real kube-apiserver, creates a
// pod in an opted-in namespace, and stops the command.
func TestMainAgainstAPIServer(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	createNamespace(t, c.admin, "app", map[string]string{webhook.NamespaceLabel: "enabled"})
	port, probes := testkit.FreePort(t), testkit.FreePort(t)
	mwc := c.webhookConfig(t, fmt.Sprintf("https://localhost:%d", port))
	if _, err := c.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		done <- webhook.Main(runCtx, []string{
			"--kubeconfig=" + c.kubeconfig,
			"--config=" + c.configFile(t),
			"--namespace=" + releaseNamespace,
			fmt.Sprintf("--port=%d", port),
			"--metrics-bind-address=0",
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probes),
			"--shutdown-delay=100ms",
			"--log-format=text",
			// self-managed, for a Service named localhost: the name the API
			// server dials here.
			"--cert-dir=" + filepath.Join(t.TempDir(), "certs"),
			"--cert-secret=meshinit-webhook-serving",
			"--cert-ca-secret=meshinit-webhook-signer",
			"--service-name=localhost",
			"--service-namespace=" + releaseNamespace,
			"--webhook-config-name=meshinit",
		}, os.Stdout, os.Stderr)
	}()
	testkit.AwaitReady(t, 90*time.Second, "webhook.Main", fmt.Sprintf("http://127.0.0.1:%d/readyz", probes), done)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	stored, err := c.admin.CoreV1().Pods("app").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.InitContainers) != 1 || stored.Spec.InitContainers[0].Name != webhook.ContainerName {
		t.Errorf("stored pod's init containers: %+v", stored.Spec.InitContainers)
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("Main exited with %d after its context ended", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("Main did not return within a minute of its context ending")
	}
}
