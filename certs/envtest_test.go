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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
)

// apiServer is the kube-apiserver and etcd every envtest test of the
// package shares.
var apiServer testkit.Shared

func TestMain(m *testing.M) {
	// The replicas log to their tests; the webhook server's certwatcher
	// logs through controller-runtime's global logger.
	logf.SetLogger(logr.Discard())
	code := m.Run()
	apiServer.Stop()
	os.Exit(code)
}

// install is one installation of the chart's certs part in its own
// namespace: the chart's certs RBAC, the ValidatingAdmissionPolicy that
// confines the caBundle's writers, the MutatingWebhookConfiguration, and the
// webhook ServiceAccount's credentials the replicas use, so RBAC and the
// policy are tested too.
type install struct {
	admin     client.Client
	name      string // release name = namespace = MutatingWebhookConfiguration
	asWebhook *rest.Config
}

func newInstall(t *testing.T, name string, values map[string]any) *install {
	t.Helper()
	name = testkit.RunName(name) // go test -count=N: the chart's cluster-scoped objects are named after it
	server := apiServer.Get(t)
	admin, err := client.New(server.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range renderCerts(t, name, name, values) {
		if g := o.GroupVersionKind().Group; g != rbacv1.GroupName && g != admissionregistrationv1.GroupName && o.GetKind() != "Secret" {
			continue // cert-manager's objects: the tests install its CRDs later, if at all
		}
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("creating %s/%s from the chart: %v", o.GetKind(), o.GetName(), err)
		}
	}
	mwc := webhookConfig(t, name)
	if err := admin.Create(ctx, mwc); err != nil {
		t.Fatal(err)
	}
	// Its selectors match every opted-in namespace: it must not outlive the
	// test and review another test's pods.
	t.Cleanup(func() {
		if err := admin.Delete(context.Background(), mwc); err != nil {
			t.Errorf("deleting mutatingwebhookconfiguration %s: %v", name, err)
		}
	})
	asWebhook := server.User(t, "system:serviceaccount:"+name+":"+name+"-webhook", "system:serviceaccounts", "system:serviceaccounts:"+name)
	return &install{admin: admin, name: name, asWebhook: asWebhook}
}

// webhookConfig is the chart's MutatingWebhookConfiguration.
func webhookConfig(t *testing.T, name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	charts.MustObject(t, charts.Options{ReleaseName: name, Namespace: name}, "MutatingWebhookConfiguration", "", &cfg)
	if len(cfg.Webhooks) < 2 {
		t.Fatalf("the chart's MutatingWebhookConfiguration has %d webhooks; the tests want several to check every caBundle", len(cfg.Webhooks))
	}
	return &cfg
}

// options are a replica's options as the chart's args give them.
func (r *install) options(t *testing.T, replica string) Options {
	return Options{
		SecretName:        r.name + "-webhook-serving",
		CASecretName:      r.name + "-webhook-signer",
		LegacySecretName:  r.name + "-webhook-tls",
		ServiceName:       r.name + "-webhook",
		ServiceNamespace:  r.name,
		WebhookConfigName: r.name,
		CertDir:           filepath.Join(t.TempDir(), replica),
		StartupTimeout:    30 * time.Second,
		Log:               testr.NewWithOptions(t, testr.Options{Verbosity: 1}).WithName(replica),
	}
}

// startReplicas runs Setup of every provider at the same instant, then
// Start until the test ends.
func startReplicas(t *testing.T, providers ...*Provider) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })

	ready := make(chan struct{})
	errs := make([]error, len(providers))
	var setup sync.WaitGroup
	for i, p := range providers {
		setup.Go(func() { <-ready; errs[i] = p.Setup(ctx) })
	}
	close(ready)
	setup.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: Setup: %v", i, err)
		}
	}
	for _, p := range providers {
		running.Go(func() {
			if err := p.Start(ctx); err != nil {
				t.Errorf("Start: %v", err)
			}
		})
	}
}

// secret is the serving Secret (tls.crt, tls.key and ca.crt).
func (r *install) secret(t *testing.T) *corev1.Secret { return r.get(t, r.name+"-webhook-serving") }

// caSecret is the CA's Secret (ca.crt, ca.key).
func (r *install) caSecret(t *testing.T) *corev1.Secret { return r.get(t, r.name+"-webhook-signer") }

func (r *install) get(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := r.admin.Get(context.Background(), client.ObjectKey{Namespace: r.name, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func (r *install) webhookConfig(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := r.admin.Get(context.Background(), client.ObjectKey{Name: r.name}, &cfg); err != nil {
		t.Fatal(err)
	}
	return &cfg
}

// caBundles are the distinct caBundles of the configuration's webhooks.
func caBundles(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []string {
	var out []string
	for _, w := range cfg.Webhooks {
		if !slices.Contains(out, string(w.ClientConfig.CABundle)) {
			out = append(out, string(w.ClientConfig.CABundle))
		}
	}
	return out
}

// caBundleIs says how cfg's caBundles differ from the one bundle want.
func caBundleIs(cfg *admissionregistrationv1.MutatingWebhookConfiguration, want string) error {
	if b := caBundles(cfg); len(b) != 1 || b[0] != want {
		return fmt.Errorf("%d distinct caBundles, want only the Secret's ca.crt", len(b))
	}
	return nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
