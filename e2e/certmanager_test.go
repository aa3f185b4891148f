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
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshinit/meshinit/e2e/harness"
)

// The chart's cert-manager objects (release meshinit): the serving
// Certificate and its Secret, and the CA Certificate (and Secret) of its
// own issuer chain.
const (
	servingCertificate = release + "-webhook"
	servingSecret      = release + "-webhook-tls"
	caCertificate      = release + "-webhook-ca"
	webhookPort        = "9443"
)

// TestCertManager installs the chart with certManager.enabled=true while
// the real cert-manager runs: its controller and cainjector, built from its
// Go packages (hack/cert-manager), as the ServiceAccounts and RBAC its own
// chart creates. cert-manager issues the chart's CA and serving
// Certificates, the webhook serves what it issued, its cainjector writes the
// caBundle, pods are injected, renewals under a steady stream of pod creates
// fail none of them, and certManager.issuerRef works with an issuer the test
// creates.
func TestCertManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	e := setup(t, ctx)
	if !e.IsLocal() {
		t.Skip("skipped: runs its own cert-manager and dials the webhook's pods from this machine: local cluster only")
	}
	began := time.Now()
	cm, err := e.StartCertManager(ctx, "..", t.Logf)
	var unavailable *harness.Unavailable
	if errors.As(err, &unavailable) {
		t.Skip("skipped: " + unavailable.Reason)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cm.Logs())
		}
		if err := cm.Stop(context.Background()); err != nil {
			t.Errorf("stopping cert-manager: %v", err)
		}
	})
	t.Logf("timing: cert-manager %s built and started %.1fs", cm.Version, time.Since(began).Seconds())
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The load creates 10 pods a second: client-go's default limit (5 a
	// second, bursts of 10) would queue them on this side instead.
	cfg.QPS, cfg.Burst = 100, 200
	k := &certManagerEnv{env: e, cm: cm, client: kubernetes.NewForConfigOrDie(cfg)}

	timed := func(name string, f func(t *testing.T)) bool {
		step := time.Now()
		ok := t.Run(name, f)
		t.Logf("timing: %q %.1fs", name, time.Since(step).Seconds())
		if err := cm.Exited(); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	installed := false
	t.Cleanup(func() {
		if installed {
			e.uninstall(t, context.Background())
			// cert-manager's Secrets outlive the Certificates (no owner
			// references, its default); the next install would find them.
			e.must(t, context.Background(), "-n", releaseNamespace, "delete", "secret", servingSecret, caCertificate, "--ignore-not-found")
		}
	})
	certManager := func(extra map[string]any) map[string]any {
		v := map[string]any{"enabled": true}
		for key, value := range extra {
			v[key] = value
		}
		return map[string]any{"certManager": v}
	}

	if !timed("chart installed with certManager.enabled: cert-manager issues the CA and serving Certificates, both Ready", func(t *testing.T) {
		installed = true
		e.install(t, ctx, certManager(nil))
		for _, name := range []string{caCertificate, servingCertificate} {
			k.awaitReady(t, ctx, name)
		}
		k.checkSecret(t, ctx, k.caPEM(t, ctx))
	}) {
		t.FailNow()
	}

	timed("the webhook serves the certificate cert-manager issued", func(t *testing.T) {
		k.awaitServing(t, ctx, k.leaf(t, ctx))
	})

	timed("the caBundle was written by cert-manager's cainjector, not by meshinit", func(t *testing.T) {
		k.checkCABundle(t, ctx, k.caPEM(t, ctx), false)
	})

	labelled := e.createNamespace(t, ctx, "e2e-cert-manager", map[string]string{injectionLabel: "enabled"})
	timed("a pod in a labelled namespace is injected and runs", func(t *testing.T) {
		e.apply(t, ctx, e.images.PlainPod("app", nil, nil), "-n", labelled)
		e.ready(t, ctx, labelled, "app")
		if got := e.initContainers(t, ctx, labelled, "app"); !slices.Equal(got, []string{redirectName}) {
			t.Errorf("init containers %v, want [%s]", got, redirectName)
		}
	})

	timed("renewals (duration 1h, renewBefore 59m) while pods are created at a steady rate fail none of them", func(t *testing.T) {
		before := k.revision(t, ctx)
		served := k.servedSerials(t)
		load := k.steadyCreates(ctx, labelled, 100*time.Millisecond)
		// A new duration applies from the next issue, so trigger one as
		// cmctl renew does; then cert-manager renews the certificate a
		// minute after each issue.
		e.install(t, ctx, certManager(map[string]any{"duration": "1h", "renewBefore": "59m"}))
		k.renew(t, ctx, servingCertificate)
		// Until cert-manager has issued twice and every replica has
		// switched to a certificate it issued after the load began.
		// cert-manager deletes a CertificateRequest at the next renewal
		// (a minute later here) while replicas may still serve its
		// certificate, so what it issued is gathered at every poll.
		issued := map[string]bool{}
		err := eventually(ctx, 6*time.Minute, func() error {
			maps.Copy(issued, k.issuedSerials(t, ctx))
			if rev := k.revision(t, ctx); rev < before+2 {
				return fmt.Errorf("certificate revision %d, want at least %d", rev, before+2)
			}
			now := k.servedSerials(t)
			for ip, serial := range served {
				if now[ip] == serial {
					return fmt.Errorf("replica %s still serves the certificate it served before the renewals", ip)
				}
			}
			return nil
		})
		creates, failures, first := load.stop()
		t.Logf("renewals: revision %d -> %d; %d pod creates, %d failed", before, k.revision(t, ctx), creates, failures)
		if err != nil {
			t.Fatal(err)
		}
		if failures > 0 {
			t.Errorf("%d of %d pod creates failed during the renewals; the first: %s", failures, creates, first)
		}
		if creates < 500 {
			t.Errorf("only %d pod creates: not a steady stream", creates)
		}
		// What the replicas serve now is a certificate cert-manager issued.
		now := k.servedSerials(t)
		maps.Copy(issued, k.issuedSerials(t, ctx))
		for ip, serial := range now {
			if !issued[serial] {
				t.Errorf("replica %s serves serial %s, which none of the Certificate's CertificateRequests issued", ip, serial)
			}
		}
	})

	timed("certManager.issuerRef: a ClusterIssuer the test creates issues the serving certificate", func(t *testing.T) {
		caPEM := k.createClusterIssuer(t, ctx, "e2e-ca")
		load := k.steadyCreates(ctx, labelled, 100*time.Millisecond)
		e.install(t, ctx, certManager(map[string]any{
			"issuerRef": map[string]any{"name": "e2e-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"},
		}))
		if got := e.must(t, ctx, "-n", releaseNamespace, "get", "issuers", "-o", "name"); got != "" {
			t.Errorf("the chart's own issuers are left: %s", got)
		}
		k.awaitIssuedBy(t, ctx, "e2e-ca", caPEM)
		k.checkSecret(t, ctx, caPEM)
		k.checkCABundle(t, ctx, caPEM, true)
		k.awaitServing(t, ctx, k.leaf(t, ctx))
		creates, failures, first := load.stop()
		// The CA changes: the replicas serve the old CA's certificate
		// until the kubelet updates their mounted Secret, and the caBundle
		// keeps the old CA beside the new one meanwhile.
		t.Logf("switching issuers: %d pod creates, %d failed", creates, failures)
		if failures > 0 {
			t.Errorf("%d of %d pod creates failed while switching issuers; the first: %s", failures, creates, first)
		}
		if _, err := k.createDryRun(ctx, labelled, "after-switch"); err != nil {
			t.Errorf("a pod create after the switch: %v", err)
		}
	})
}

// certManagerEnv is the cluster with cert-manager running, and a client.
type certManagerEnv struct {
	*env
	cm     *harness.CertManager
	client *kubernetes.Clientset
}

// awaitReady waits for the Certificate to be Ready.
func (k *certManagerEnv) awaitReady(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := eventually(ctx, 2*time.Minute, func() error {
		ready, err := k.Kubectl(ctx, "", "-n", releaseNamespace, "get", "certificate", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || ready != "True" {
			return fmt.Errorf("Certificate %s Ready=%q (%v)", name, ready, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// awaitIssuedBy waits until the serving Certificate names the ClusterIssuer
// and is Ready for its current spec, with the issuer's CA in its Secret.
func (k *certManagerEnv) awaitIssuedBy(t *testing.T, ctx context.Context, issuer string, caPEM []byte) {
	t.Helper()
	if err := eventually(ctx, 2*time.Minute, func() error {
		got, err := k.Kubectl(ctx, "", "-n", releaseNamespace, "get", "certificate", servingCertificate, "-o",
			`jsonpath={.spec.issuerRef.kind}/{.spec.issuerRef.name} {.metadata.generation} {.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].observedGeneration}`)
		if err != nil {
			return err
		}
		f := strings.Fields(got)
		if len(f) != 3 || f[0] != "ClusterIssuer/"+issuer || f[2] != "True/"+f[1] {
			return fmt.Errorf("Certificate %s: issuerRef, generation, Ready/observedGeneration %q; want ClusterIssuer/%s, Ready for its generation", servingCertificate, got, issuer)
		}
		if !sameCerts(t, k.secret(t, ctx).Data["ca.crt"], caPEM) {
			return fmt.Errorf("Secret %s: ca.crt is not yet the ClusterIssuer's CA", servingSecret)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// renew triggers the Certificate's issuance now, as cmctl renew does: an
// Issuing condition, reason ManuallyTriggered, in its status.
func (k *certManagerEnv) renew(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	gen := k.must(t, ctx, "-n", releaseNamespace, "get", "certificate", name, "-o", "jsonpath={.metadata.generation}")
	patch := fmt.Sprintf(`[{"op": "add", "path": "/status/conditions/-", "value": {"type": "Issuing", "status": "True", "reason": "ManuallyTriggered", "message": "Certificate re-issuance manually triggered", "lastTransitionTime": %q, "observedGeneration": %s}}]`,
		time.Now().UTC().Format(time.RFC3339), gen)
	k.must(t, ctx, "-n", releaseNamespace, "patch", "certificate", name, "--subresource", "status", "--type", "json", "-p", patch)
}

// revision is the serving Certificate's status.revision: how many times
// cert-manager has issued it.
func (k *certManagerEnv) revision(t *testing.T, ctx context.Context) int {
	t.Helper()
	var rev int
	out := k.must(t, ctx, "-n", releaseNamespace, "get", "certificate", servingCertificate, "-o", "jsonpath={.status.revision}")
	if _, err := fmt.Sscan(out, &rev); err != nil {
		t.Fatalf("Certificate %s revision %q: %v", servingCertificate, out, err)
	}
	return rev
}

// secret is the serving certificate's Secret.
func (k *certManagerEnv) secret(t *testing.T, ctx context.Context) *corev1.Secret {
	t.Helper()
	s, err := k.client.CoreV1().Secrets(releaseNamespace).Get(ctx, servingSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// leaf is the serving certificate in the Secret.
func (k *certManagerEnv) leaf(t *testing.T, ctx context.Context) *x509.Certificate {
	t.Helper()
	return parsePEM(t, k.secret(t, ctx).Data[corev1.TLSCertKey])[0]
}

// caPEM is the CA certificate of the chart's own chain (the CA
// Certificate's Secret).
func (k *certManagerEnv) caPEM(t *testing.T, ctx context.Context) []byte {
	t.Helper()
	s, err := k.client.CoreV1().Secrets(releaseNamespace).Get(ctx, caCertificate, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data[corev1.TLSCertKey]
}

// checkSecret checks the serving Secret as the webhook reads it: tls.crt,
// tls.key and ca.crt, a key pair, for the Service's names, signed by the CA
// in caPEM, which ca.crt holds.
func (k *certManagerEnv) checkSecret(t *testing.T, ctx context.Context, caPEM []byte) {
	t.Helper()
	s := k.secret(t, ctx)
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret %s type %s, want %s", s.Name, s.Type, corev1.SecretTypeTLS)
	}
	if _, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]); err != nil {
		t.Errorf("Secret %s: tls.crt and tls.key: %v", s.Name, err)
	}
	if !sameCerts(t, s.Data["ca.crt"], caPEM) {
		t.Errorf("Secret %s: ca.crt is not the issuer's CA", s.Name)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	name := fmt.Sprintf("%s.%s.svc", webhookName, releaseNamespace)
	if _, err := k.leaf(t, ctx).Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("Secret %s: the serving certificate for %s: %v", s.Name, name, err)
	}
}

// checkCABundle checks that every webhook's caBundle holds caPEM (is
// exactly caPEM unless also) and that cert-manager's cainjector, and nothing
// else, wrote it (the field's manager in managedFields: it applies the
// caBundle server-side as cert-manager-cainjector). also: the cainjector
// merges a new CA into the bundle (its CAInjectorMerging feature, GA and on
// in v1.21), so after a change of CA the old one stays beside it.
func (k *certManagerEnv) checkCABundle(t *testing.T, ctx context.Context, caPEM []byte, also bool) {
	t.Helper()
	if err := eventually(ctx, time.Minute, func() error {
		mwc, err := k.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, w := range mwc.Webhooks {
			bundle := w.ClientConfig.CABundle
			if len(bytes.TrimSpace(bundle)) == 0 {
				return fmt.Errorf("webhook %s: no caBundle", w.Name)
			}
			if also && !containsCerts(t, bundle, caPEM) {
				return fmt.Errorf("webhook %s: caBundle (%d certificates) lacks the issuer's CA", w.Name, len(parsePEM(t, bundle)))
			}
			if !also && !sameCerts(t, bundle, caPEM) {
				return fmt.Errorf("webhook %s: caBundle is not the issuer's CA (%d certificates)", w.Name, len(parsePEM(t, bundle)))
			}
		}
		var owners []string
		for _, f := range mwc.ManagedFields {
			if f.FieldsV1 != nil && bytes.Contains(f.FieldsV1.Raw, []byte(`"f:caBundle"`)) {
				owners = append(owners, fmt.Sprintf("%s (%s)", f.Manager, f.Operation))
			}
		}
		if want := []string{"cert-manager-cainjector (Apply)"}; !slices.Equal(owners, want) {
			return fmt.Errorf("the caBundle's managers %v, want %v", owners, want)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// servedSerials dials every webhook replica's port and returns the serial
// of the certificate each serves, by pod IP.
func (k *certManagerEnv) servedSerials(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ip := range strings.Fields(k.must(t, context.Background(), "-n", releaseNamespace, "get", "pods", "-l", webhookSelector, "-o", "jsonpath={.items[*].status.podIP}")) {
		leaf, err := served(ip)
		if err != nil {
			t.Fatal(err)
		}
		out[ip] = leaf.SerialNumber.String()
	}
	if len(out) == 0 {
		t.Fatal("no webhook pods")
	}
	return out
}

// awaitServing waits until every replica serves want.
func (k *certManagerEnv) awaitServing(t *testing.T, ctx context.Context, want *x509.Certificate) {
	t.Helper()
	// The kubelet updates a mounted Secret within about a minute.
	if err := eventually(ctx, 3*time.Minute, func() error {
		for ip, serial := range k.servedSerials(t) {
			if serial != want.SerialNumber.String() {
				return fmt.Errorf("replica %s serves serial %s, the Secret holds %s", ip, serial, want.SerialNumber)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// served is the certificate a webhook replica serves.
func served(ip string) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(ip, webhookPort), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return nil, fmt.Errorf("dialling webhook replica %s: %w", ip, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// issuedSerials are the serials of the certificates cert-manager issued for
// the serving Certificate (its CertificateRequests').
func (k *certManagerEnv) issuedSerials(t *testing.T, ctx context.Context) map[string]bool {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Status struct {
				Certificate []byte `json:"certificate"`
			} `json:"status"`
		} `json:"items"`
	}
	out := k.must(t, ctx, "-n", releaseNamespace, "get", "certificaterequests", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	issued := map[string]bool{}
	for _, cr := range list.Items {
		if cr.Metadata.Annotations["cert-manager.io/certificate-name"] == servingCertificate && len(cr.Status.Certificate) > 0 {
			issued[parsePEM(t, cr.Status.Certificate)[0].SerialNumber.String()] = true
		}
	}
	return issued
}

// createClusterIssuer creates a CA ClusterIssuer of a new CA (its Secret in
// cert-manager's cluster resource namespace), waits for it to be Ready and
// returns the CA's certificate.
func (k *certManagerEnv) createClusterIssuer(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "meshinit e2e " + name},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: harness.CertManagerNamespace, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       caPEM,
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		},
	}
	if _, err := k.client.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k.apply(t, ctx, fmt.Sprintf(`{"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": %q}, "spec": {"ca": {"secretName": %q}}}`, name, name))
	t.Cleanup(func() {
		_, _ = k.Kubectl(context.Background(), "", "delete", "clusterissuer", name, "--ignore-not-found")
	})
	if err := eventually(ctx, time.Minute, func() error {
		ready, err := k.Kubectl(ctx, "", "get", "clusterissuer", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || ready != "True" {
			return fmt.Errorf("ClusterIssuer %s Ready=%q (%v)", name, ready, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return caPEM
}

// createDryRun creates a pod in ns with dryRun=All (admission runs in
// full, nothing is stored) and fails unless it came back injected.
func (k *certManagerEnv) createDryRun(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
	}
	got, err := k.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, err
	}
	if len(got.Spec.InitContainers) == 0 || got.Spec.InitContainers[0].Name != redirectName {
		return got, fmt.Errorf("pod %s/%s admitted without %s", ns, name, redirectName)
	}
	return got, nil
}

// load is pod creates at a steady rate.
type load struct {
	creates, failures atomic.Int64
	first             atomic.Value
	cancel            context.CancelFunc
	done              sync.WaitGroup
}

// steadyCreates starts creating pods in ns (dry run), one every interval,
// each on its own goroutine, until stop.
func (k *certManagerEnv) steadyCreates(ctx context.Context, ns string, interval time.Duration) *load {
	l := &load{}
	ctx, l.cancel = context.WithCancel(ctx)
	l.done.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			l.done.Go(func() {
				_, err := k.createDryRun(context.WithoutCancel(ctx), ns, fmt.Sprintf("load-%d", i))
				l.creates.Add(1)
				if err != nil {
					l.failures.Add(1)
					l.first.CompareAndSwap(nil, err.Error())
				}
			})
		}
	})
	return l
}

// stop stops the creates, waits for those in flight, and returns the
// counts and the first failure.
func (l *load) stop() (creates, failures int64, first string) {
	l.cancel()
	l.done.Wait()
	first, _ = l.first.Load().(string)
	return l.creates.Load(), l.failures.Load(), first
}

// containsCerts says whether the PEM bundle holds every certificate of
// want.
func containsCerts(t *testing.T, bundle, want []byte) bool {
	t.Helper()
	have := parsePEM(t, bundle)
	for _, w := range parsePEM(t, want) {
		if !slices.ContainsFunc(have, w.Equal) {
			return false
		}
	}
	return true
}

// sameCerts says whether two PEM bundles hold the same certificates.
func sameCerts(t *testing.T, a, b []byte) bool {
	t.Helper()
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return false
	}
	ca, cb := parsePEM(t, a), parsePEM(t, b)
	return slices.EqualFunc(ca, cb, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

// parsePEM parses the certificates in data.
func parsePEM(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		t.Fatal("no certificate in PEM data")
	}
	return certs
}
