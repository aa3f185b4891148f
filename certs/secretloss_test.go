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

package certs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestSelfManagedSecretDeletedWhilePodsAreCreated runs two replicas (their
// certificate loops and controller-runtime's webhook server on their cert
// dirs) behind a round-robin TCP balancer, as a Service spreads connections,
// with the chart's MutatingWebhookConfiguration (failurePolicy Fail) sent to
// it. Pods are created without pause while the two Secrets are deleted
// three times (the webhook, which may not create Secrets, keeps serving
// what it has), and a second later re-created empty as helm upgrade does
// (the replicas issue a new CA and switch to it once it has propagated):
// every create must be reviewed and admitted. Each review is
// answered with Connection: close, so every one is a new TLS handshake the
// API server verifies against the caBundle it holds at that moment.
func TestSelfManagedSecretDeletedWhilePodsAreCreated(t *testing.T) {
	in := newInstall(t, "meshinit-loss", map[string]any{})
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(apiServer.Get(t).Config)

	// The replicas, each serving reviews from its own cert dir. The serving
	// certificate is for the Service's names; a Service named localhost
	// makes one of them the name this API server dials.
	var providers []*Provider
	var backends []string
	reviews := make([]*atomic.Int64, 2)
	for i, name := range []string{"a", "b"} {
		o := in.options(t, name)
		o.ServiceName = "localhost"
		// The delay is the test's assumption of how long this API server
		// takes to act on a caBundle it was sent: 2 s was once not enough
		// under CI's load (one create of 5,090 refused, the API server
		// rejecting the new certificate a second after the handover).
		o.PropagationDelay, o.ResyncPeriod = 5*time.Second, 2*time.Second
		p, err := New(in.asWebhook, o)
		if err != nil {
			t.Fatal(err)
		}
		providers = append(providers, p)
		reviews[i] = &atomic.Int64{}
	}
	lb := roundRobin(t)
	cfg := in.webhookConfig(t)
	for i := range cfg.Webhooks {
		cc := &cfg.Webhooks[i].ClientConfig
		cc.URL, cc.Service = ptr.To("https://localhost:"+strconv.Itoa(lb.port)+"/review"), nil
	}
	if err := in.admin.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	startReplicas(t, providers...)
	for i, p := range providers {
		backends = append(backends, serveReviews(t, p.CertDir(), reviews[i]))
	}
	lb.setBackends(backends)

	ns := in.name + "-pods"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"meshinit.io/injection": "enabled"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitForServiceAccount(t, admin, ns)
	create := func(name string) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	testkit.Eventually(t, 30*time.Second, "a pod create reviewed by the replicas", func() error { return create("first") })

	var creates, failures atomic.Int64
	var failed sync.Mutex
	var failureLog []string // the first few, with when they happened
	stop := make(chan struct{})
	var workers sync.WaitGroup
	for w := range 4 {
		workers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				err := create(fmt.Sprintf("pod-%d-%d", w, i))
				creates.Add(1)
				if err != nil && failures.Add(1) <= 3 {
					failed.Lock()
					failureLog = append(failureLog, time.Now().UTC().Format("15:04:05.000")+" "+err.Error())
					failed.Unlock()
				}
			}
		})
	}

	secrets := admin.CoreV1().Secrets(in.name)
	bundleSizes := map[string]bool{}
	for round := range 3 {
		time.Sleep(2 * time.Second)
		old, oldCA := in.secret(t), in.caSecret(t)
		for _, s := range []*corev1.Secret{old, oldCA} {
			if err := secrets.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		for _, s := range []*corev1.Secret{old, oldCA} {
			chart := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: s.Labels}, Type: s.Type}
			if _, err := secrets.Create(ctx, chart, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Until the replicas serve a certificate of the new Secret and the
		// caBundle is down to its CA again.
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("round %d: both replicas serve the re-created Secret's certificate", round), func() error {
			var s corev1.Secret
			if err := in.admin.Get(ctx, client.ObjectKeyFromObject(old), &s); err != nil {
				return err
			} else if s.UID == old.UID {
				return errors.New("the Secret is not re-created yet")
			} else if len(s.Data[keyTLSCert]) == 0 {
				return errors.New("the re-created Secret is not filled yet")
			}
			bundle, err := ParseCertsPEM([]byte(caBundles(in.webhookConfig(t))[0]))
			if err != nil {
				return err
			}
			bundleSizes[strconv.Itoa(len(bundle))] = true
			for i, p := range providers {
				if readFile(t, filepath.Join(p.CertDir(), keyTLSCert)) != string(s.Data[keyTLSCert]) {
					return fmt.Errorf("replica %d serves another certificate", i)
				}
			}
			if len(bundle) != 1 {
				return fmt.Errorf("the caBundle holds %d CAs", len(bundle))
			}
			return nil
		})
	}
	time.Sleep(time.Second)
	close(stop)
	workers.Wait()

	if failures.Load() > 0 {
		t.Errorf("%d of %d pod creates failed; the first:\n%s", failures.Load(), creates.Load(), strings.Join(failureLog, "\n"))
	}
	t.Logf("%d pod creates while the Secrets were deleted and re-created 3 times, %d failed; replicas reviewed %d and %d; caBundle sizes seen %v",
		creates.Load(), failures.Load(), reviews[0].Load(), reviews[1].Load(), keys(bundleSizes))
	if creates.Load() < 100 || reviews[0].Load() == 0 || reviews[1].Load() == 0 {
		t.Errorf("%d creates, %d and %d reviews per replica: want at least 100 creates reviewed by both replicas", creates.Load(), reviews[0].Load(), reviews[1].Load())
	}
	for i, p := range providers {
		if err := p.ReadyCheck(nil); err != nil {
			t.Errorf("replica %d not ready: %v", i, err)
		}
	}
}

// serveReviews serves reviews at /review on certDir (serveWebhook),
// admitting every one (counted), and returns the server's host:port. Each
// response closes its connection.
func serveReviews(t *testing.T, certDir string, reviewed *atomic.Int64) string {
	t.Helper()
	admit := &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		reviewed.Add(1)
		return admission.Allowed("")
	})}
	return serveWebhook(t, certDir, "/review", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		admit.ServeHTTP(w, r)
	}))
}

// balancer passes each TCP connection on to the next backend in turn, as
// kube-proxy does for a Service; TLS is between the API server and the
// replica.
type balancer struct {
	port     int
	mu       sync.Mutex
	backends []string
	next     int
}

func roundRobin(t *testing.T) *balancer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{port: l.Addr().(*net.TCPAddr).Port}
	var conns sync.WaitGroup
	t.Cleanup(func() { l.Close(); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Go(func() { b.pass(c) })
		}
	}()
	return b
}

func (b *balancer) setBackends(addrs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = addrs
}

func (b *balancer) pass(c net.Conn) {
	defer c.Close()
	b.mu.Lock()
	if len(b.backends) == 0 {
		b.mu.Unlock()
		return
	}
	addr := b.backends[b.next%len(b.backends)]
	b.next++
	b.mu.Unlock()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, up)
	c.(*net.TCPConn).CloseWrite()
	<-done
}
