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
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

const releaseNamespace = "meshinit-system"

// cluster is a kube-apiserver and etcd with the chart's webhook objects.
type cluster struct {
	server     *testkit.APIServer
	admin      *kubernetes.Clientset
	warnings   *warningLog
	kubeconfig string                       // the admin's, for kubectl and the webhook command
	objects    []*unstructured.Unstructured // the chart's
	asWebhook  *rest.Config                 // the webhook ServiceAccount's credentials
}

// startCluster starts kube-apiserver (with apiServerFlags, each
// name=value) and etcd, skipping the test without them, and creates the
// release namespace, the chart's RBAC and its certificates' Secrets.
func startCluster(t *testing.T, apiServerFlags ...string) *cluster {
	t.Helper()
	server := testkit.StartAPIServer(t, testkit.Options{Flags: apiServerFlags})
	c := &cluster{server: server, warnings: &warningLog{}, kubeconfig: server.Kubeconfig}
	cfg := rest.CopyConfig(server.Config)
	cfg.WarningHandlerWithContext = c.warnings
	c.admin = kubernetes.NewForConfigOrDie(cfg)
	createNamespace(t, c.admin, releaseNamespace, nil)
	c.objects = charts.MustObjects(t, charts.Options{Namespace: releaseNamespace}, false)
	for _, o := range c.objects {
		if o.GroupVersionKind().Group == "rbac.authorization.k8s.io" || o.GetKind() == "Secret" {
			c.apply(t, o) // the certificates' Secrets, which the webhook may not create
		}
	}
	c.asWebhook = server.User(t, "system:serviceaccount:"+releaseNamespace+":meshinit-webhook", "system:serviceaccounts", "system:serviceaccounts:"+releaseNamespace)
	return c
}

// apply creates one of the chart's objects with kubectl.
func (c *cluster) apply(t *testing.T, o runtime.Object) {
	t.Helper()
	data, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	c.kubectl(t, data, "apply", "-f", "-")
}

// kubectl runs kubectl with manifest as its input, and returns its output.
func (c *cluster) kubectl(t *testing.T, manifest []byte, args ...string) string {
	t.Helper()
	out, stderr, err := c.server.Kubectl(string(manifest), args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// webhookConfig is the chart's MutatingWebhookConfiguration, sent to url
// instead of the Service (the API server here cannot reach Services).
func (c *cluster) webhookConfig(t *testing.T, url string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	charts.DecodeOne(t, c.objects, "MutatingWebhookConfiguration", "", &mwc)
	for i := range mwc.Webhooks {
		cc := &mwc.Webhooks[i].ClientConfig
		cc.URL = ptr.To(url + *cc.Service.Path)
		cc.Service = nil
	}
	return &mwc
}

// configFile writes the chart's webhook config file.
func (c *cluster) configFile(t *testing.T) string {
	t.Helper()
	var cm corev1.ConfigMap
	charts.DecodeOne(t, c.objects, "ConfigMap", "meshinit-webhook", &cm)
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cm.Data["config.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveInCluster registers the chart's webhook configuration, sent to a
// free local port (a Service named localhost makes one of the serving
// certificate's names the one this API server dials), and serves it there
// as serve does with self-managed certificates; the configuration is
// deleted when the test ends.
func (c *cluster) serveInCluster(t *testing.T, delay time.Duration) (*server, string) {
	t.Helper()
	ctx := context.Background()
	mwcs := c.admin.AdmissionregistrationV1().MutatingWebhookConfigurations()
	port := testkit.FreePort(t)
	mwc, err := mwcs.Create(ctx, c.webhookConfig(t, fmt.Sprintf("https://localhost:%d", port)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mwcs.Delete(ctx, mwc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	s := c.serve(t, port, certs.Options{
		SecretName:        "meshinit-webhook-serving",
		CASecretName:      "meshinit-webhook-signer",
		ServiceName:       "localhost",
		ServiceNamespace:  releaseNamespace,
		WebhookConfigName: mwc.Name,
		CertDir:           t.TempDir(),
		StartupTimeout:    time.Minute,
	}, delay)
	return s, mwc.Name
}

// server is one running webhook.Serve.
type server struct {
	port, metrics, probes int
	// token is a bearer token of a ServiceAccount bound to the chart's
	// metrics-reader ClusterRole, for the metrics port.
	token string
	stop  context.CancelFunc
	done  chan error
}

// serve runs webhook.Serve as the webhook ServiceAccount with certificates
// from opts (and the server options configure sets), and waits until it is
// ready.
func (c *cluster) serve(t *testing.T, port int, opts certs.Options, delay time.Duration, configure ...func(*webhook.ServerOptions)) *server {
	t.Helper()
	s := &server{port: port, metrics: testkit.FreePort(t), probes: testkit.FreePort(t), token: c.scraperToken(t, "scraper", true), done: make(chan error, 1)}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	config := c.configFile(t)
	o := webhook.ServerOptions{
		ConfigFile:    config,
		Namespace:     releaseNamespace,
		Port:          port,
		MetricsAddr:   fmt.Sprintf("127.0.0.1:%d", s.metrics),
		ProbeAddr:     fmt.Sprintf("127.0.0.1:%d", s.probes),
		ShutdownDelay: delay,
		Certs:         opts,
		Log:           testr.New(t),
	}
	for _, f := range configure {
		f(&o)
	}
	// AwaitReady takes what Serve returned early from a channel of its
	// own, so that the cleanup still finds it in done.
	returned := make(chan error, 1)
	go func() {
		err := webhook.Serve(ctx, c.asWebhook, o)
		returned <- err
		s.done <- err
	}()
	t.Cleanup(func() {
		stop()
		<-s.done
	})
	testkit.AwaitReady(t, 90*time.Second, "webhook.Serve", fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", s.probes), returned)
	return s
}

// get fetches path from the probes port, or the metrics port (HTTPS, as
// a scraper the chart's metrics-reader ClusterRole is bound to).
func (s *server) get(which, path string) (int, string) {
	if which == "probes" {
		return fetch(fmt.Sprintf("http://127.0.0.1:%d%s", s.probes, path), "")
	}
	return fetch(fmt.Sprintf("https://127.0.0.1:%d%s", s.metrics, path), s.token)
}

// fetch GETs url with token as its bearer token, if any, trusting any
// server certificate, and returns the status and the body (or the error).
func fetch(url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the tests check other things of the metrics port
		DisableKeepAlives: true,                                  // a connection per request: none is left idle
	}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// scraperToken creates the ServiceAccount name in the release namespace,
// bound (with bound) to the chart's metrics-reader ClusterRole, and
// returns a token of it.
func (c *cluster) scraperToken(t *testing.T, name string, bound bool) string {
	t.Helper()
	ctx := context.Background()
	sa, err := c.admin.CoreV1().ServiceAccounts(releaseNamespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sa, err = c.admin.CoreV1().ServiceAccounts(releaseNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if bound {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "meshinit-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: releaseNamespace}},
		}
		if _, err := c.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tr, err := c.admin.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func createNamespace(t *testing.T, c *kubernetes.Clientset, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitForServiceAccount(t, c, name)
}

func testPod(name string, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "migrate:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
}

// warningLog keeps the API server's warnings.
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (w *warningLog) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

func initContainerNames(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	return names
}

// servedSerial is the serial number of the certificate served on port.
func servedSerial(port int) (string, error) {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}
