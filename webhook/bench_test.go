package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"
)

// benchReview is the AdmissionReview bench-webhook sends: its pod of three
// containers and a dozen annotations.
func benchReview(b *testing.B) []byte {
	b.Helper()
	data, err := os.ReadFile("../hack/bench/webhook/pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pod, err := yaml.YAMLToJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	return []byte(reviewBody(podRequest(string(pod))))
}

// benchServe runs reviews through h as controller-runtime's server would
// (decoding the AdmissionReview, encoding the answer), without TLS.
func benchServe(b *testing.B, h admission.Handler) {
	body := benchReview(b)
	hook := &admission.Webhook{Handler: h}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/inject", bytesReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		hook.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
	}
}

// BenchmarkServe compares meshinit's handler with one that only answers
// "allowed": see ns/op of each; bench-webhook measures the same over TLS.
func BenchmarkServe(b *testing.B) {
	b.Run("meshinit", func(b *testing.B) {
		benchServe(b, testHandler(b, map[string]string{NamespaceLabel: "enabled"}))
	})
	b.Run("noop", func(b *testing.B) {
		benchServe(b, admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("")
		}))
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
