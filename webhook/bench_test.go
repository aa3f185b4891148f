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

// benchPod is the pod of bench-webhook's AdmissionReviews, as JSON: three
// containers and a dozen annotations.
func benchPod(b *testing.B) []byte {
	b.Helper()
	data, err := os.ReadFile("../hack/bench/webhook/pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pod, err := yaml.YAMLToJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	return pod
}

// benchReview is the AdmissionReview bench-webhook sends.
func benchReview(b *testing.B) []byte {
	return []byte(reviewBody(podRequest(string(benchPod(b)))))
}

// BenchmarkReadPod reads bench-webhook's pod: as sent (no init container
// of meshinit's), injected (the canonical container read whole, as on
// reinvocation), the same with the container renamed (read by name only,
// the cost of reading it whole is the difference) and with an invalid
// UTF-8 byte in an annotation (strings read by encoding/json).
func BenchmarkReadPod(b *testing.B) {
	pod := benchPod(b)
	h := testHandler(b, map[string]string{NamespaceLabel: "enabled"})
	injected := applyPatch(b, pod, review(b, h, "shop", pod))
	renamed := bytes.Replace(injected, []byte(`"name":"`+ContainerName+`"`), []byte(`"name":"meshinit-renamed"`), 1)
	invalid := bytes.Replace(pod, []byte("team-payments"), []byte("team-\x84ayments"), 1)
	for _, bc := range []struct {
		name string
		pod  []byte
	}{{"as sent", pod}, {"injected", injected}, {"injected, renamed", renamed}, {"invalid UTF-8", invalid}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.pod)))
			for b.Loop() {
				if _, err := readPod(bc.pod); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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
