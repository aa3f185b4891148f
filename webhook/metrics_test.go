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
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestReviewMetrics: each review is counted once under its outcome and the
// reason of that outcome (an injection by how the pod opted in, a refusal
// or skip by what stopped it), and timed in a histogram whose buckets
// resolve the tens to hundreds of microseconds a review takes.
func TestReviewMetrics(t *testing.T) {
	optedIn := map[string]string{"meshinit.io/injection": "enabled"}
	baseline := map[string]string{"meshinit.io/injection": "enabled", "pod-security.kubernetes.io/enforce": "baseline"}
	badAnnotation := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","annotations":{"traffic.meshinit.io/exclude-inbound-ports":"http"}},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`
	for _, c := range []struct {
		name      string
		labels    map[string]string
		pod       string
		outcome   Outcome
		reason    Reason
		notReason Reason
	}{
		{"injected", optedIn, plainPod, OutcomeInjected, ReasonNamespaceOptedIn, ""},
		{"an invalid annotation refused", optedIn, badAnnotation, OutcomeDenied, ReasonInvalidAnnotation, ReasonNamespaceOptedIn},
		{"PodSecurity baseline skipped", baseline, plainPod, OutcomeSkipped, ReasonPodSecurity, ReasonNamespaceOptedIn},
		{"not opted in skipped", nil, plainPod, OutcomeSkipped, ReasonNotOptedIn, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			counted := reviews.WithLabelValues(string(c.outcome), string(c.reason))
			other := reviews.WithLabelValues(string(c.outcome), string(c.notReason))
			before, otherBefore, timed := testutil.ToFloat64(counted), testutil.ToFloat64(other), sampleCount(t, c.outcome)
			resp := review(t, testHandler(t, c.labels), "app", []byte(c.pod))
			if c.outcome == OutcomeDenied && resp.Allowed {
				t.Fatalf("allowed: %+v", resp.Result)
			}
			if got := testutil.ToFloat64(counted) - before; got != 1 {
				t.Errorf("%s{outcome=%q,reason=%q} rose by %v, want 1", reviewsTotalName, c.outcome, c.reason, got)
			}
			if c.notReason != "" {
				if got := testutil.ToFloat64(other) - otherBefore; got != 0 {
					t.Errorf("%s{outcome=%q,reason=%q} rose by %v, want 0: the reason is what stopped the pod", reviewsTotalName, c.outcome, c.notReason, got)
				}
			}
			if got := sampleCount(t, c.outcome) - timed; got != 1 {
				t.Errorf("%s{outcome=%q} observed %d reviews, want 1", reviewDurationName, c.outcome, got)
			}
		})
	}
	// The classic buckets start under a millisecond's tenth, so the
	// sub-millisecond reviews are told apart.
	var bounds []float64
	for _, b := range histogram(t, OutcomeInjected).GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if below := len(bounds) - len(slices.DeleteFunc(slices.Clone(bounds), func(b float64) bool { return b < 0.001 })); below < 3 {
		t.Errorf("%s buckets %v: %d under 1ms, want at least 3", reviewDurationName, bounds, below)
	}
}

// sampleCount is how many reviews with outcome o reviewDuration observed.
func sampleCount(t *testing.T, o Outcome) uint64 {
	return histogram(t, o).GetSampleCount()
}

// histogram is reviewDuration's histogram of outcome o as it is exposed.
func histogram(t *testing.T, o Outcome) *dto.Histogram {
	t.Helper()
	h, err := reviewDuration.GetMetricWithLabelValues(string(o))
	if err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := h.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}
