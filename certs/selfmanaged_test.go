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
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestSelfManagedReplicasShareOneSecret: two replicas start at once against
// an empty namespace, with only the chart's RBAC, and end up serving the
// same certificate from one Secret, its CA in the caBundle of every webhook.
// A caBundle reset (helm upgrade) is re-asserted, and a Secret another
// replica updated reaches both cert dirs, through the watches.
func TestSelfManagedReplicasShareOneSecret(t *testing.T) {
	in := newInstall(t, "meshinit-share", map[string]any{})
	var providers []*Provider
	for _, name := range []string{"a", "b"} {
		p, err := New(in.asWebhook, in.options(t, name))
		if err != nil {
			t.Fatal(err)
		}
		providers = append(providers, p)
	}
	startReplicas(t, providers...)

	secret := in.secret(t)
	for i, p := range providers {
		if got := readFile(t, filepath.Join(p.CertDir(), keyTLSCert)); got != string(secret.Data[keyTLSCert]) {
			t.Errorf("replica %d serves another certificate than the Secret's", i)
		}
		if err := p.ReadyCheck(nil); err != nil {
			t.Errorf("replica %d not ready: %v", i, err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the caBundle of every webhook is the Secret's ca.crt", func() error {
		return caBundleIs(in.webhookConfig(t), string(secret.Data[keyCACert]))
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(secret.Data[keyCACert])
	served := parseStored(secret.Data).serving.cert
	if _, err := served.Verify(x509.VerifyOptions{DNSName: in.name + "-webhook." + in.name + ".svc", Roots: roots}); err != nil {
		t.Errorf("the served certificate does not verify against the caBundle: %v", err)
	}

	t.Run("caBundle reset is re-asserted", func(t *testing.T) {
		cfg := in.webhookConfig(t)
		setCABundle(cfg, nil)
		if err := in.admin.Update(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 10*time.Second, "caBundle re-asserted after a reset", func() error {
			return caBundleIs(in.webhookConfig(t), string(secret.Data[keyCACert]))
		})
	})

	t.Run("a Secret updated elsewhere reaches both cert dirs", func(t *testing.T) {
		s := parseStored(joined(in.caSecret(t), secret))
		renewed, err := newServing(s.signer, DNSNames(in.name+"-webhook", in.name), nil, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		secret.Data[keyTLSCert], secret.Data[keyTLSKey] = renewed.certPEM, renewed.keyPEM
		if err := in.admin.Update(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		for i, p := range providers {
			testkit.Eventually(t, 10*time.Second, fmt.Sprintf("replica %d serves the updated certificate", i), func() error {
				if readFile(t, filepath.Join(p.CertDir(), keyTLSCert)) != string(renewed.certPEM) {
					return errors.New("its cert dir holds another certificate")
				}
				return nil
			})
		}
	})
}

// TestSelfManagedRotationWithoutFailedRequests runs two replicas with short
// lifetimes, each behind controller-runtime's webhook server serving from its
// cert dir, and a client that trusts what the caBundle says (refreshed as an
// API server would) calling both without pause. Across serving certificate
// renewals and a CA rotation no request may fail, and no server restarts.
func TestSelfManagedRotationWithoutFailedRequests(t *testing.T) {
	in := newInstall(t, "meshinit-rotate", map[string]any{})
	serverName := in.name + "-webhook." + in.name + ".svc"
	var providers []*Provider
	var urls []string
	for _, name := range []string{"a", "b"} {
		o := in.options(t, name)
		// The CA is replaced at 24s, served from at 27.5s, dropped at 36s;
		// serving certificates live 18s at most.
		o.CAValidity, o.ServingValidity, o.PropagationDelay = 36*time.Second, 18*time.Second, 3500*time.Millisecond
		p, err := New(in.asWebhook, o)
		if err != nil {
			t.Fatal(err)
		}
		providers = append(providers, p)
	}
	start := time.Now()
	startReplicas(t, providers...)
	for _, p := range providers {
		urls = append(urls, "https://"+serveWebhook(t, p.CertDir(), "/ping", nil)+"/ping")
	}

	// What the API server trusts: the caBundle, re-read every 500ms (less
	// than the propagation delay), as its informer would.
	var mu sync.Mutex
	trusted := x509.NewCertPool()
	maxCAs := 0
	refresh := func() int {
		b := caBundles(in.webhookConfig(t))
		if len(b) != 1 {
			t.Fatalf("webhooks disagree on the caBundle: %d different ones", len(b))
		}
		certs, err := ParseCertsPEM([]byte(b[0]))
		if err != nil {
			t.Fatalf("caBundle: %v", err)
		}
		pool := x509.NewCertPool()
		for _, c := range certs {
			pool.AddCert(c)
		}
		mu.Lock()
		trusted, maxCAs = pool, max(maxCAs, len(certs))
		mu.Unlock()
		return len(certs)
	}
	testkit.Eventually(t, 10*time.Second, "caBundle published", func() error {
		if len(caBundles(in.webhookConfig(t))[0]) == 0 {
			return errors.New("the caBundle is empty")
		}
		return nil
	})

	issuers := map[string]bool{}
	servedCerts := map[string]bool{}
	requests, failures := 0, 0
	lastRefresh := time.Time{}
	for time.Since(start) < 40*time.Second {
		if time.Since(lastRefresh) > 500*time.Millisecond {
			refresh()
			lastRefresh = time.Now()
		}
		mu.Lock()
		pool := trusted
		mu.Unlock()
		for _, url := range urls {
			requests++
			leaf, err := call(url, serverName, pool)
			if err != nil {
				failures++
				t.Errorf("%s after %s: %v", url, time.Since(start).Round(time.Millisecond), err)
				continue
			}
			issuers[leaf.Issuer.CommonName] = true
			servedCerts[leaf.SerialNumber.String()] = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d requests, %d failed; served %d certificates from %d CAs; caBundle held up to %d CAs", requests, failures, len(servedCerts), len(issuers), maxCAs)
	if len(issuers) < 2 || len(servedCerts) < 4 || maxCAs != 2 {
		t.Errorf("want certificates served from 2 CAs (got %d), at least 4 certificates served (got %d), the caBundle holding both CAs during the rotation (max %d)", len(issuers), len(servedCerts), maxCAs)
	}
	testkit.Eventually(t, 10*time.Second, "the caBundle drops the old CA once it expired", func() error {
		if n := refresh(); n != 1 {
			return fmt.Errorf("the caBundle holds %d CAs", n)
		}
		return nil
	})
	for i, p := range providers {
		if err := p.ReadyCheck(nil); err != nil {
			t.Errorf("replica %d not ready: %v", i, err)
		}
	}
}

// serveWebhook starts controller-runtime's webhook server on certDir, as the
// webhook command does, with h at path (a handler answering "pong" when nil),
// and returns the server's host:port.
func serveWebhook(t *testing.T, certDir, path string, h http.Handler) string {
	t.Helper()
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("pong")) })
	}
	port := testkit.FreePort(t)
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	srv.Register(path, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Start(ctx); err != nil {
			t.Errorf("webhook server: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	testkit.Eventually(t, 10*time.Second, "webhook server listening", func() error { return srv.StartedChecker()(nil) })
	return "127.0.0.1:" + strconv.Itoa(port)
}

// call makes one request on a new connection, verifying the server as the
// API server does (its caBundle, the Service's DNS name), and returns the
// certificate served.
func call(url, serverName string, roots *x509.CertPool) (*x509.Certificate, error) {
	c := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		},
	}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	return resp.TLS.PeerCertificates[0], nil
}

// TestSelfManagedMovesThePreviousLayout: a release upgraded from the one
// Secret of before (its CA already in the caBundle, served by the old
// replicas) to the chart's two: replicas with the chart's RBAC move the CA
// and serving certificate, unchanged, into the two, serve that same
// certificate, leave the caBundle as it was, and delete the old Secret, so
// the CA key is kept in one Secret only and never in the serving one.
func TestSelfManagedMovesThePreviousLayout(t *testing.T) {
	in := newInstall(t, "meshinit-upgrade", map[string]any{})
	ctx := context.Background()
	now := time.Now()
	names := DNSNames(in.name+"-webhook", in.name)
	none := parseStored(nil)
	old, err := issue(none, decide(none, policy{now: now, dnsNames: names, published: publishedAll}), now, names, 24*time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: in.name, Name: in.name + "-webhook-tls"}, Type: corev1.SecretTypeTLS, Data: old}
	if err := in.admin.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	cfg := in.webhookConfig(t)
	setCABundle(cfg, old[keyCACert])
	if err := in.admin.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	var providers []*Provider
	for _, name := range []string{"a", "b"} {
		p, err := New(in.asWebhook, in.options(t, name))
		if err != nil {
			t.Fatal(err)
		}
		providers = append(providers, p)
	}
	startReplicas(t, providers...)

	for i, p := range providers {
		if got := readFile(t, filepath.Join(p.CertDir(), keyTLSCert)); got != string(old[keyTLSCert]) {
			t.Errorf("replica %d serves another certificate than the previous layout's", i)
		}
	}
	ca, serving := in.caSecret(t), in.secret(t)
	if !sameData(joined(ca, serving), old) {
		t.Error("the two Secrets do not hold the previous layout's certificates")
	}
	if _, ok := serving.Data[keyCAKey]; ok {
		t.Error("the serving Secret holds the CA key")
	}
	if err := caBundleIs(in.webhookConfig(t), string(old[keyCACert])); err != nil {
		t.Error(err)
	}
	testkit.Eventually(t, 10*time.Second, "the previous layout's Secret is deleted", func() error {
		var s corev1.Secret
		if err := in.admin.Get(ctx, client.ObjectKeyFromObject(legacy), &s); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
}
