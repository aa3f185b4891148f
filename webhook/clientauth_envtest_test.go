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
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// TestClientAuthAgainstAPIServer runs a kube-apiserver configured, as the
// Kubernetes docs' "Authenticate apiservers" says, with an
// AdmissionConfiguration whose kubeConfigFile gives it a client certificate
// for the webhook's address, and the webhook requiring client certificates
// of that CA (--client-ca-file, --client-names). The API server's reviews
// succeed; a client without a certificate, or with another one, is refused
// at the TLS handshake.
func TestClientAuthAgainstAPIServer(t *testing.T) {
	dir := t.TempDir()
	port := testkit.FreePort(t)
	clientCA := newCA(t)
	const clientName = "kube-apiserver-webhook-client"
	certPEM, keyPEM, err := clientCA.IssueClient(clientName, time.Hour, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// The API server picks the user named after the webhook's host:port
	// (for a Service: <name>.<namespace>.svc).
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos[fmt.Sprintf("localhost:%d", port)] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	admission := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(admission, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: MutatingAdmissionWebhook
    configuration:
      apiVersion: apiserver.config.k8s.io/v1
      kind: WebhookAdmissionConfiguration
      kubeConfigFile: `+kubeconfig+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "admission-control-config-file="+admission)
	createNamespace(t, c.admin, "enabled", map[string]string{webhook.NamespaceLabel: "enabled"})

	servingCA, certDir := newCA(t), t.TempDir()
	servingCA.issue(t, certDir)
	mwc := c.webhookConfig(t, fmt.Sprintf("https://localhost:%d", port))
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].ClientConfig.CABundle = servingCA.CertPEM()
	}
	ctx := context.Background()
	if _, err := c.admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, clientCA.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	c.serve(t, port, certs.Options{Mode: certs.ModeFiles, CertDir: certDir}, time.Second, func(o *webhook.ServerOptions) {
		o.ClientCAFile, o.ClientNames = caFile, []string{clientName}
	})

	t.Run("the API server's reviews succeed", func(t *testing.T) {
		for i := range 5 {
			pod, err := c.admin.CoreV1().Pods("enabled").Create(ctx, testPod(fmt.Sprintf("web-%d", i), nil, nil), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := initContainerNames(pod); len(got) != 2 || got[0] != webhook.ContainerName {
				t.Errorf("pod %s: init containers %q, want %s injected", pod.Name, got, webhook.ContainerName)
			}
		}
	})
	t.Run("other clients are refused at the TLS handshake", func(t *testing.T) {
		otherCertPEM, otherKeyPEM, err := newCA(t).IssueClient(clientName, time.Hour, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		wrongNamePEM, wrongNameKeyPEM, err := clientCA.IssueClient("someone-else", time.Hour, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name      string
			cert, key []byte
			refused   string // in the error; "" for an HTTP answer
		}{
			{"no certificate", nil, nil, "tls: certificate required"},
			{"another CA's certificate", otherCertPEM, otherKeyPEM, "tls: bad certificate"},
			{"a name not allowed", wrongNamePEM, wrongNameKeyPEM, "tls: bad certificate"},
			{"the API server's certificate", certPEM, keyPEM, ""},
		} {
			roots := x509.NewCertPool()
			roots.AddCert(servingCA.Certificate())
			tlsConfig := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
			if tc.cert != nil {
				pair, err := tls.X509KeyPair(tc.cert, tc.key)
				if err != nil {
					t.Fatal(err)
				}
				tlsConfig.Certificates = []tls.Certificate{pair}
			}
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
			resp, err := hc.Post(fmt.Sprintf("https://127.0.0.1:%d/inject", port), "application/json", strings.NewReader("{}"))
			if err == nil {
				resp.Body.Close()
			}
			if tc.refused == "" && err != nil || tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)) {
				t.Errorf("%s: %v, want refused: %q", tc.name, err, tc.refused)
			}
		}
	})
}
