package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"time"

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

// BenchmarkServe runs the review bench-webhook sends through meshinit's
// handler and through one that only answers "allowed", alternately, as
// controller-runtime's server would (decoding the AdmissionReview, encoding
// the answer) but without TLS, and reports the time of each and their
// ratio. make bench-webhook measures the same over TLS, CPU time included.
func BenchmarkServe(b *testing.B) {
	body := benchReview(b)
	hooks := []*admission.Webhook{
		{Handler: testHandler(b, map[string]string{NamespaceLabel: "enabled"})},
		{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("")
		})},
	}
	var spent [2]time.Duration
	b.ReportAllocs()
	for b.Loop() {
		for i, hook := range hooks {
			start := time.Now()
			req := httptest.NewRequest(http.MethodPost, "/inject", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			hook.ServeHTTP(rec, req)
			spent[i] += time.Since(start)
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Body.String())
			}
		}
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "meshinit-ns/review")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "noop-ns/review")
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "ratio")
}
