package webhook_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/webhook"
)

// TestAgainstAPIServer runs the webhook server against a real kube-apiserver
// with the chart's MutatingWebhookConfiguration: first with self-managed
// certificates, then with certificates from files that are rotated while
// pods are being created.
func TestAgainstAPIServer(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	mwcs := c.admin.AdmissionregistrationV1().MutatingWebhookConfigurations()
	for name, labels := range map[string]map[string]string{
		"enabled":  {webhook.NamespaceLabel: "enabled"},
		"plain":    nil,
		"disabled": {webhook.NamespaceLabel: "disabled"},
		"baseline": {webhook.NamespaceLabel: "enabled", webhook.EnforceLabel: "baseline"},
	} {
		createNamespace(t, c.admin, name, labels)
	}
	create := func(t *testing.T, ns string, pod *corev1.Pod) (*corev1.Pod, error) {
		t.Helper()
		return c.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	}
	mustCreate := func(t *testing.T, ns string, pod *corev1.Pod) *corev1.Pod {
		t.Helper()
		stored, err := create(t, ns, pod)
		if err != nil {
			t.Fatalf("creating pod %s/%s: %v", ns, pod.Name, err)
		}
		return stored
	}
	wantInit := func(t *testing.T, p *corev1.Pod, want ...string) {
		t.Helper()
		if got := initContainerNames(p); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("pod %s/%s: init containers %q, want %q", p.Namespace, p.Name, got, want)
		}
	}

	port := freePort(t)
	// The serving certificate is for the Service's names; a Service named
	// localhost makes one of them the name this API server dials.
	mwc, err := mwcs.Create(ctx, c.webhookConfig(t, fmt.Sprintf("https://localhost:%d", port)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := c.serve(t, port, certs.Options{
		SecretName:        "meshinit-webhook-tls",
		ServiceName:       "localhost",
		ServiceNamespace:  releaseNamespace,
		WebhookConfigName: mwc.Name,
		CertDir:           t.TempDir(),
		StartupTimeout:    time.Minute,
	}, 2*time.Second)

	var injected *corev1.Pod
	t.Run("self-managed certificates", func(t *testing.T) {
		if _, err := c.admin.CoreV1().Secrets(releaseNamespace).Get(ctx, "meshinit-webhook-tls", metav1.GetOptions{}); err != nil {
			t.Errorf("the shared Secret: %v", err)
		}
		got, err := mwcs.Get(ctx, mwc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range got.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				t.Errorf("%s: caBundle not patched", w.Name)
			}
		}
	})
	t.Run("namespace opted in", func(t *testing.T) {
		injected = mustCreate(t, "enabled", testPod("web", nil, nil))
		wantInit(t, injected, webhook.ContainerName, "migrate")
		ic := injected.Spec.InitContainers[0]
		if caps := ic.SecurityContext.Capabilities; len(caps.Add) != 2 || caps.Drop[0] != "ALL" || *ic.SecurityContext.RunAsUser != 0 {
			t.Errorf("securityContext %+v", ic.SecurityContext)
		}
		if ic.Args[0] != "apply" || injected.Annotations[webhook.StatusAnnotation] == "" {
			t.Errorf("args %q, status %q", ic.Args, injected.Annotations[webhook.StatusAnnotation])
		}
	})
	t.Run("not opted in", func(t *testing.T) {
		wantInit(t, mustCreate(t, "plain", testPod("web", nil, nil)), "migrate")
	})
	t.Run("pod opted in", func(t *testing.T) {
		wantInit(t, mustCreate(t, "plain", testPod("opted-in", map[string]string{webhook.PodLabel: "true"}, nil)), webhook.ContainerName, "migrate")
	})
	t.Run("namespace opted out", func(t *testing.T) {
		wantInit(t, mustCreate(t, "disabled", testPod("opted-in", map[string]string{webhook.PodLabel: "true"}, nil)), "migrate")
	})
	t.Run("pod opted out", func(t *testing.T) {
		wantInit(t, mustCreate(t, "enabled", testPod("opted-out", map[string]string{webhook.PodLabel: "false"}, nil)), "migrate")
	})
	t.Run("every annotation", func(t *testing.T) {
		p := mustCreate(t, "enabled", testPod("annotated", nil, map[string]string{
			"traffic.meshinit.io/include-inbound-ports":  "8080,9090",
			"traffic.meshinit.io/exclude-inbound-ports":  "",
			"traffic.meshinit.io/exclude-outbound-ports": "5432",
			"traffic.meshinit.io/include-outbound-cidrs": "10.0.0.0/8",
			"traffic.meshinit.io/exclude-outbound-cidrs": "10.96.0.1",
		}))
		args := strings.Join(p.Spec.InitContainers[0].Args, " ")
		for _, want := range []string{"--include-inbound-ports=8080,9090", "--exclude-outbound-ports=5432", "--include-outbound-cidrs=10.0.0.0/8", "--exclude-outbound-cidrs=10.96.0.1/32"} {
			if !strings.Contains(args, want) {
				t.Errorf("args %q lack %q", args, want)
			}
		}
	})
	t.Run("invalid annotation", func(t *testing.T) {
		_, err := create(t, "enabled", testPod("invalid", nil, map[string]string{"traffic.meshinit.io/exclude-inbound-ports": "http"}))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `invalid annotation traffic.meshinit.io/exclude-inbound-ports "http"`) {
			t.Errorf("error %v, want Forbidden naming the annotation and its value", err)
		}
	})
	t.Run("PodSecurity baseline", func(t *testing.T) {
		c.warnings.take()
		wantInit(t, mustCreate(t, "baseline", testPod("web", nil, nil)), "migrate")
		warnings := strings.Join(c.warnings.take(), "\n")
		if !strings.Contains(warnings, `namespace baseline enforces PodSecurity "baseline"`) {
			t.Errorf("warnings %q lack the PodSecurity explanation", warnings)
		}
	})
	t.Run("re-created from a template that carries the container", func(t *testing.T) {
		again := testPod("web-again", nil, injected.Annotations)
		again.Spec.InitContainers = injected.Spec.InitContainers
		p := mustCreate(t, "enabled", again)
		wantInit(t, p, webhook.ContainerName, "migrate")
		if p.Annotations[webhook.StatusAnnotation] != injected.Annotations[webhook.StatusAnnotation] {
			t.Errorf("status %q, want unchanged %q", p.Annotations[webhook.StatusAnnotation], injected.Annotations[webhook.StatusAnnotation])
		}
	})
	t.Run("reinvocation", func(t *testing.T) {
		// A later webhook that changes every pod makes the API server call
		// meshinit's again (reinvocationPolicy: IfNeeded).
		relabel := relabelWebhook(t)
		if _, err := mwcs.Create(ctx, relabel, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer mwcs.Delete(ctx, relabel.Name, metav1.DeleteOptions{})
		waitUntil(t, 30*time.Second, "the API server calls the other webhook", func() error {
			p, err := c.admin.CoreV1().Pods("enabled").Create(ctx, testPod("probe", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil && p.Labels["relabelled"] != "true" {
				err = fmt.Errorf("labels %v", p.Labels)
			}
			return err
		})
		before := counter(t, s, `meshinit_webhook_injections_total{outcome="unchanged",reason="namespace-opted-in"}`)
		p := mustCreate(t, "enabled", testPod("reinvoked", nil, nil))
		wantInit(t, p, webhook.ContainerName, "migrate")
		if p.Labels["relabelled"] != "true" {
			t.Errorf("the other webhook did not run: labels %v", p.Labels)
		}
		if after := counter(t, s, `meshinit_webhook_injections_total{outcome="unchanged",reason="namespace-opted-in"}`); after != before+1 {
			t.Errorf("unchanged reviews %v -> %v, want one reinvocation", before, after)
		}
	})
	t.Run("kubectl apply --dry-run=server", func(t *testing.T) {
		pod := testPod("dry-run", nil, nil)
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		manifest, _ := yaml.Marshal(pod)
		out := c.kubectlRun(t, manifest, "apply", "--dry-run=server", "-o", "yaml", "--namespace", "enabled", "-f")
		if !strings.Contains(out, "name: "+webhook.ContainerName) || !strings.Contains(out, webhook.StatusAnnotation) {
			t.Errorf("dry-run output lacks the injected init container:\n%s", out)
		}
		if _, err := c.admin.CoreV1().Pods("enabled").Get(ctx, "dry-run", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the dry-run pod was stored: %v", err)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		_, body := s.get("metrics", "/metrics")
		for _, want := range []string{
			`meshinit_webhook_injections_total{outcome="injected",reason="namespace-opted-in"}`,
			`meshinit_webhook_injections_total{outcome="denied",reason="namespace-opted-in"} 1`,
			`meshinit_webhook_injections_total{outcome="skipped",reason="namespace-opted-in"} 1`,
			`controller_runtime_webhook_requests_total{code="200",webhook="/inject"}`,
			`controller_runtime_webhook_latency_seconds_bucket{webhook="/inject",le=`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
	t.Run("TLS 1.2 minimum, HTTP/2 off", func(t *testing.T) {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS11}); err == nil {
			conn.Close()
			t.Error("a TLS 1.1 handshake succeeded")
		}
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
			t.Errorf("negotiated %q, want http/1.1", p)
		}
	})
	t.Run("graceful shutdown", func(t *testing.T) {
		s.stop()
		waitUntil(t, time.Second, "not ready after stop", func() error {
			if code, _ := s.get("probes", "/readyz"); code == http.StatusOK {
				return fmt.Errorf("readyz %d", code)
			}
			return nil
		})
		// Still serving during the shutdown delay.
		wantInit(t, mustCreate(t, "enabled", testPod("during-shutdown", nil, nil)), webhook.ContainerName, "migrate")
		select {
		case err := <-s.done:
			s.done <- err // for the cleanup
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Serve did not return a minute after its context ended")
		}
	})

	t.Run("rotation without a restart or failed requests", func(t *testing.T) {
		dir := t.TempDir()
		ca := newCA(t)
		first := ca.issue(t, dir)
		port := freePort(t)
		cfg := c.webhookConfig(t, fmt.Sprintf("https://localhost:%d", port))
		cfg.ResourceVersion = ""
		current, err := mwcs.Get(ctx, mwc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.ResourceVersion = current.ResourceVersion
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig.CABundle = ca.pem
		}
		if _, err := mwcs.Update(ctx, cfg, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.serve(t, port, certs.Options{Mode: certs.ModeFiles, CertDir: dir}, time.Second)
		if serial, _ := servedSerial(port); serial != first {
			t.Fatalf("serving %s, want the first certificate %s", serial, first)
		}

		var reviews, failures atomic.Int64
		var firstFailure atomic.Value
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					p := testPod(fmt.Sprintf("rotation-%d-%d", w, i), nil, nil)
					got, err := c.admin.CoreV1().Pods("enabled").Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					reviews.Add(1)
					if err == nil && len(got.Spec.InitContainers) != 2 {
						err = fmt.Errorf("pod not injected: %q", initContainerNames(got))
					}
					if err != nil {
						failures.Add(1)
						firstFailure.CompareAndSwap(nil, err.Error())
					}
				}
			})
		}
		time.Sleep(time.Second)
		second := ca.issue(t, dir)
		waitUntil(t, 30*time.Second, "the rotated certificate served", func() error {
			if serial, err := servedSerial(port); err != nil || serial != second {
				return fmt.Errorf("serving %s (%v), want %s", serial, err, second)
			}
			return nil
		})
		time.Sleep(time.Second)
		close(stop)
		wg.Wait()
		t.Logf("%d reviews during the rotation, %d failed", reviews.Load(), failures.Load())
		if failures.Load() > 0 || reviews.Load() < 10 {
			t.Errorf("%d of %d reviews failed (first: %v)", failures.Load(), reviews.Load(), firstFailure.Load())
		}
	})
}

// counter reads one sample of the server's metrics; 0 when absent.
func counter(t *testing.T, s *server, sample string) float64 {
	t.Helper()
	_, body := s.get("metrics", "/metrics")
	m := regexp.MustCompile(regexp.QuoteMeta(sample) + ` (\S+)`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// relabelWebhook serves a mutating webhook that labels every pod
// relabelled=true, registered after meshinit's.
func relabelWebhook(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"relabelled":"true"}}]`)}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-relabel"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         "relabel.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/"), CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{webhook.NamespaceLabel: "enabled"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		}},
	}
}

// testCA issues serving certificates for localhost.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

var serial atomic.Int64

// issue writes a new serving certificate into dir (tls.key, then tls.crt,
// each replaced by a rename) and returns its serial number.
func (ca *testCA) issue(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	n := big.NewInt(100 + serial.Add(1))
	tmpl := &x509.Certificate{
		SerialNumber: n, Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name  string
		block *pem.Block
	}{{"tls.key", &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}}, {"tls.crt", &pem.Block{Type: "CERTIFICATE", Bytes: der}}} {
		tmp := filepath.Join(dir, "."+f.name)
		if err := os.WriteFile(tmp, pem.EncodeToMemory(f.block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			t.Fatal(err)
		}
	}
	return n.String()
}
