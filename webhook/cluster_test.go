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
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/certs"
	"github.com/meshinit/meshinit/internal/testkit"
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

	s, mwcName := c.serveInCluster(t, 2*time.Second)

	var injected *corev1.Pod
	t.Run("self-managed certificates", func(t *testing.T) {
		for _, name := range []string{"meshinit-webhook-serving", "meshinit-webhook-signer"} {
			if s, err := c.admin.CoreV1().Secrets(releaseNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil || len(s.Data) == 0 {
				t.Errorf("the shared Secret %s: %v, want filled", name, err)
			}
		}
		got, err := mwcs.Get(ctx, mwcName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range got.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				t.Errorf("%s: caBundle not patched", w.Name)
			}
		}
	})
	t.Run("the webhook's ServiceAccount creates no Secret and reads only its own", func(t *testing.T) {
		// With every rule the chart grants it: a stolen token must not mint
		// a service-account-token Secret for another ServiceAccount, nor
		// read other Secrets.
		asWebhook, err := kubernetes.NewForConfig(c.asWebhook)
		if err != nil {
			t.Fatal(err)
		}
		secrets := asWebhook.CoreV1().Secrets(releaseNamespace)
		token := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "minted", Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
			Type:       corev1.SecretTypeServiceAccountToken,
		}
		for _, o := range []*corev1.Secret{token, {ObjectMeta: metav1.ObjectMeta{Name: "meshinit-webhook-tls"}, Type: corev1.SecretTypeOpaque}} {
			if _, err := secrets.Create(ctx, o, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("creating Secret %s of type %s as the webhook: %v, want forbidden", o.Name, o.Type, err)
			}
		}
		if _, err := secrets.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("listing every Secret as the webhook: %v, want forbidden", err)
		}
		other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "another"}, StringData: map[string]string{"k": "v"}}
		if _, err := c.admin.CoreV1().Secrets(releaseNamespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := secrets.Get(ctx, other.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("reading another Secret as the webhook: %v, want forbidden", err)
		}
		if _, err := secrets.Get(ctx, "meshinit-webhook-serving", metav1.GetOptions{}); err != nil {
			t.Errorf("reading its serving Secret as the webhook: %v", err)
		}
	})
	t.Run("namespace opted in", func(t *testing.T) {
		injected = mustCreate(t, "enabled", testPod("web", nil, nil))
		wantInit(t, injected, webhook.ContainerName, "migrate")
		ic := injected.Spec.InitContainers[0]
		if caps := ic.SecurityContext.Capabilities; len(caps.Add) != 2 || caps.Drop[0] != "ALL" || *ic.SecurityContext.RunAsUser != 65532 || !*ic.SecurityContext.RunAsNonRoot || !*ic.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("securityContext %+v", ic.SecurityContext)
		}
		if ic.Args[0] != "apply" || injected.Annotations[webhook.StatusAnnotation] == "" {
			t.Errorf("args %q, status %q", ic.Args, injected.Annotations[webhook.StatusAnnotation])
		}
	})
	// A pod author copies the status annotation from a dry-run of an
	// ordinary pod and brings their own meshinit-redirect container.
	t.Run("forged container with a copied status", func(t *testing.T) {
		dry, err := c.admin.CoreV1().Pods("enabled").Create(ctx, testPod("forged", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		forged := testPod("forged", nil, dry.Annotations)
		forged.Spec.InitContainers = append([]corev1.Container{{Name: webhook.ContainerName, Image: "busybox:1.36", Command: []string{"sh", "-c", "exit 0"}}},
			forged.Spec.InitContainers...)
		p := mustCreate(t, "enabled", forged)
		wantInit(t, p, webhook.ContainerName, "migrate")
		if got, want := p.Spec.InitContainers[0], dry.Spec.InitContainers[0]; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("stored init container %+v\nwant the canonical one %+v", got, want)
		}
	})
	// The injected container as the API server stores it (defaults filled
	// in) is the canonical one: re-submitted, the pod is not changed, and the
	// API server does not even call the webhook (its match condition
	// not-injected sees the pod carry exactly what it would get).
	t.Run("dry-run of an injected pod re-submitted", func(t *testing.T) {
		dry, err := c.admin.CoreV1().Pods("enabled").Create(ctx, testPod("resubmitted", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		wantInit(t, dry, webhook.ContainerName, "migrate")
		const unchanged = `meshinit_webhook_reviews_total{outcome="unchanged",reason="namespace-opted-in"}`
		const injectedCount = `meshinit_webhook_reviews_total{outcome="injected",reason="namespace-opted-in"}`
		before, beforeInjected := counter(t, s, unchanged), counter(t, s, injectedCount)
		dry.ResourceVersion, dry.UID = "", ""
		p := mustCreate(t, "enabled", dry)
		if after := counter(t, s, unchanged); after != before {
			t.Errorf("unchanged reviews %v -> %v, want none (the match condition skips the webhook)", before, after)
		}
		if after := counter(t, s, injectedCount); after != beforeInjected {
			t.Errorf("injected reviews %v -> %v, want none", beforeInjected, after)
		}
		if !equality.Semantic.DeepEqual(p.Spec.InitContainers, dry.Spec.InitContainers) {
			t.Errorf("stored init containers %+v\nwant the dry-run's %+v", p.Spec.InitContainers, dry.Spec.InitContainers)
		}
	})
	t.Run("canonical container as the API server stores it, any configuration", func(t *testing.T) {
		for _, config := range []string{
			"image: r:1\n",
			"image: r:latest\nimagePullPolicy: Always\nplacement: last\nprivileged: true\n" +
				"resources: {limits: {cpu: '0.0001', memory: 64Mi}, requests: {ephemeral-storage: 1.5Ki}}\nredirect: {exclude-outbound-ports: '22,53'}\n",
		} {
			cfg, err := webhook.ParseConfig([]byte(config), releaseNamespace)
			if err != nil {
				t.Fatal(err)
			}
			h := webhook.NewHandler(cfg, func(context.Context, string) (map[string]string, error) {
				return map[string]string{webhook.NamespaceLabel: "enabled"}, nil
			})
			// Injected by the handler, stored by the API server (in a
			// namespace the registered webhook does not serve), reviewed
			// again: nothing to change.
			pod := reviewPod(t, h, testPod("canonical", nil, nil), true)
			stored, err := c.admin.CoreV1().Pods("plain").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			stored.ResourceVersion = ""
			reviewPod(t, h, stored, false)
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
		again.Spec.InitContainers, again.Spec.Volumes = injected.Spec.InitContainers, injected.Spec.Volumes
		p := mustCreate(t, "enabled", again)
		wantInit(t, p, webhook.ContainerName, "migrate")
		if p.Annotations[webhook.StatusAnnotation] != injected.Annotations[webhook.StatusAnnotation] {
			t.Errorf("status %q, want unchanged %q", p.Annotations[webhook.StatusAnnotation], injected.Annotations[webhook.StatusAnnotation])
		}
	})
	t.Run("reinvocation", func(t *testing.T) {
		// A later webhook that changes every pod makes the API server
		// reinvoke meshinit's (reinvocationPolicy: IfNeeded), unless the pod
		// still carries exactly meshinit's container at its placement (the
		// match condition not-injected): here it does, so meshinit's webhook
		// is not called again.
		relabel := relabelWebhook(t)
		if _, err := mwcs.Create(ctx, relabel, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer mwcs.Delete(ctx, relabel.Name, metav1.DeleteOptions{})
		testkit.Eventually(t, 30*time.Second, "the API server calls the other webhook", func() error {
			p, err := c.admin.CoreV1().Pods("enabled").Create(ctx, testPod("probe", nil, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil && p.Labels["relabelled"] != "true" {
				err = fmt.Errorf("labels %v", p.Labels)
			}
			return err
		})
		before := counter(t, s, `meshinit_webhook_reviews_total{outcome="unchanged",reason="namespace-opted-in"}`)
		p := mustCreate(t, "enabled", testPod("reinvoked", nil, nil))
		wantInit(t, p, webhook.ContainerName, "migrate")
		if p.Labels["relabelled"] != "true" {
			t.Errorf("the other webhook did not run: labels %v", p.Labels)
		}
		if after := counter(t, s, `meshinit_webhook_reviews_total{outcome="unchanged",reason="namespace-opted-in"}`); after != before {
			t.Errorf("unchanged reviews %v -> %v, want none (the pod was canonical after the other webhook)", before, after)
		}
	})
	t.Run("kubectl apply --dry-run=server", func(t *testing.T) {
		pod := testPod("dry-run", nil, nil)
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		manifest, _ := yaml.Marshal(pod)
		out := c.kubectl(t, manifest, "apply", "--dry-run=server", "-o", "yaml", "--namespace", "enabled", "-f", "-")
		if !strings.Contains(out, "name: "+webhook.ContainerName) || !strings.Contains(out, webhook.StatusAnnotation) {
			t.Errorf("dry-run output lacks the injected init container:\n%s", out)
		}
		if _, err := c.admin.CoreV1().Pods("enabled").Get(ctx, "dry-run", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the dry-run pod was stored: %v", err)
		}
	})
	t.Run("metrics only for scrapers the API server authenticates and authorizes", func(t *testing.T) {
		url := fmt.Sprintf("https://127.0.0.1:%d/metrics", s.metrics)
		for _, tc := range []struct {
			who   string
			token string
			codes []int
		}{
			{"no token", "", []int{http.StatusUnauthorized}},
			// controller-runtime's filter answers 500 when the TokenReview
			// says why the token is not valid.
			{"a token the API server does not know", "not-a-token", []int{http.StatusUnauthorized, http.StatusInternalServerError}},
			{"a ServiceAccount without the metrics-reader role", c.scraperToken(t, "not-a-scraper", false), []int{http.StatusForbidden}},
		} {
			if code, body := fetch(url, tc.token); !slices.Contains(tc.codes, code) || strings.Contains(body, "meshinit_webhook") {
				t.Errorf("%s: %d %.200s, want %d", tc.who, code, body, tc.codes)
			}
		}
		if code, _ := fetch(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metrics), ""); code == http.StatusOK {
			t.Error("metrics served over plain HTTP")
		}
	})
	t.Run("metrics", func(t *testing.T) {
		_, body := s.get("metrics", "/metrics")
		for _, want := range []string{
			`meshinit_webhook_reviews_total{outcome="injected",reason="namespace-opted-in"}`,
			`meshinit_webhook_reviews_total{outcome="denied",reason=`,
			`meshinit_webhook_reviews_total{outcome="skipped",reason=`,
			`meshinit_webhook_review_duration_seconds_bucket{outcome="injected",le="0.0001"}`,
			`controller_runtime_webhook_requests_total{code="200",webhook="/inject"}`,
			`controller_runtime_webhook_latency_seconds_bucket{webhook="/inject",le=`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		// The certificates' expiry: the one served on the webhook port, and
		// the CA of the caBundle that signed it.
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		served := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		got, err := mwcs.Get(ctx, mwcName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bundle, err := certs.ParseCertsPEM(got.Webhooks[0].ClientConfig.CABundle)
		if err != nil {
			t.Fatal(err)
		}
		ca := bundle[slices.IndexFunc(bundle, func(ca *x509.Certificate) bool { return served.CheckSignatureFrom(ca) == nil })]
		for certificate, notAfter := range map[string]time.Time{"serving": served.NotAfter, "ca": ca.NotAfter} {
			sample := fmt.Sprintf("%s{certificate=%q}", certs.ExpiryMetric, certificate)
			if v := counter(t, s, sample); v != float64(notAfter.Unix()) {
				t.Errorf("%s = %v, want %v (%s)", sample, v, float64(notAfter.Unix()), notAfter)
			}
		}
	})
	t.Run("the chart's alerts and dashboard name only served metrics", func(t *testing.T) {
		_, body := s.get("metrics", "/metrics")
		monitoringNamesServed(t, body)
	})
	t.Run("TLS 1.3 minimum, HTTP/2 off", func(t *testing.T) {
		addr := fmt.Sprintf("127.0.0.1:%d", s.port)
		if conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12}); err == nil {
			conn.Close()
			t.Error("a TLS 1.2 handshake succeeded")
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
		testkit.Eventually(t, time.Second, "not ready after stop", func() error {
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
		testRotation(t, c, mwcName)
	})
}

// reviewPod sends pod to h as the API server would and returns it patched;
// it fails the test unless the review is allowed with a patch when inject,
// without one otherwise.
func reviewPod(t *testing.T, h *webhook.Handler, pod *corev1.Pod, inject bool) *corev1.Pod {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp := h.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "plain",
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed || (len(resp.Patches) > 0) != inject {
		t.Fatalf("review: allowed %v, patches %v, want a patch: %v\npod: %s", resp.Allowed, resp.Patches, inject, raw)
	}
	if !inject {
		return pod
	}
	raw = webhook.ApplyPatch(t, raw, resp)
	var out corev1.Pod
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
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
	return testkit.PatchingWebhook(t, "zz-relabel", &metav1.LabelSelector{MatchLabels: map[string]string{webhook.NamespaceLabel: "enabled"}}, func([]byte) []byte {
		return []byte(`[{"op":"add","path":"/metadata/labels","value":{"relabelled":"true"}}]`)
	})
}
