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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OutcomeError counts reviews that failed before a decision: malformed
// requests and namespace lookups that failed.
const OutcomeError Outcome = "error"

// Reasons of the error outcome: the review never reached a decision.
const (
	ReasonInvalidRequest       Reason = "invalid-request"
	ReasonNamespaceUnreadable  Reason = "namespace-unreadable"
	reviewsTotalName                  = "meshinit_webhook_reviews_total"
	reviewDurationName                = "meshinit_webhook_review_duration_seconds"
	reviewDurationNativeFactor        = 1.1
)

// reviews counts reviewed pods by outcome and by the reason of that outcome
// (metricReason): injected and unchanged by how the pod opted in, skipped
// by why it was left alone, denied by why it was refused, error by what
// failed. It is served with controller-runtime's own webhook metrics
// (controller_runtime_webhook_requests_total, ..._latency_seconds, ...).
// docs/operations.md lists the label values.
var reviews = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: reviewsTotalName,
	Help: "Pods reviewed by the meshinit webhook, by outcome (injected, unchanged, skipped, denied, error) and the reason of that outcome.",
}, []string{"outcome", "reason"})

// reviewDuration is the time the handler takes for one review, from the
// decoded request to the response. A review takes tens to hundreds of
// microseconds (webhook/bench_test.go), under controller-runtime's
// smallest latency bucket (5ms): the classic buckets start at 100µs, and
// a scraper that asks for native histograms gets one with 10% wide
// buckets instead.
var reviewDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:                            reviewDurationName,
	Help:                            "Time the meshinit webhook's handler took to review one pod, by outcome.",
	Buckets:                         []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
	NativeHistogramBucketFactor:     reviewDurationNativeFactor,
	NativeHistogramMaxBucketNumber:  100,
	NativeHistogramMinResetDuration: time.Hour,
}, []string{"outcome"})

// reviewReasons are the reasons each outcome is counted under (docs/operations.md
// lists them): every pair is exposed from the start, at 0, so a rate or an
// alert sees a series' first review (a series that appears at 1 shows no
// increase) and a dashboard shows every outcome before it happens.
var reviewReasons = map[Outcome][]Reason{
	OutcomeInjected:  {ReasonNamespaceOptedIn, ReasonPodOptedIn},
	OutcomeUnchanged: {ReasonNamespaceOptedIn, ReasonPodOptedIn},
	OutcomeSkipped:   {ReasonNotOptedIn, ReasonPodOptedOut, ReasonNamespaceOptedOut, ReasonExcludedNS, ReasonHostNetwork, ReasonPodSecurity},
	OutcomeDenied:    {ReasonInvalidLabel, ReasonInvalidAnnotation, ReasonPodSecurity},
	OutcomeError:     {ReasonInvalidRequest, ReasonNamespaceUnreadable},
}

func init() {
	metrics.Registry.MustRegister(reviews, reviewDuration)
	for o, reasons := range reviewReasons {
		reviewDuration.WithLabelValues(string(o))
		for _, r := range reasons {
			reviews.WithLabelValues(string(o), string(r))
		}
	}
}

// observe counts one review that ended with outcome o for reason r, and
// the time since start it took.
func observe(start time.Time, o Outcome, r Reason) {
	reviews.WithLabelValues(string(o), string(r)).Inc()
	reviewDuration.WithLabelValues(string(o)).Observe(time.Since(start).Seconds())
}

// metricReason is the reason label of a review's result: what stopped an
// opted-in pod (Result.Stopped) when something did, else the opt-in
// decision's reason.
func metricReason(r Result) Reason {
	if r.Stopped != "" {
		return r.Stopped
	}
	return r.Reason
}

// The listeners' bounds at work (connlimit.go, limit.go), so an operator
// sees an attack, or limits too tight for the API server's load.
var (
	connectionsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meshinit_webhook_connections_evicted_total",
		Help: "Connections closed to make room for a new one, by listener (webhook, metrics, probes) and what the closed one was doing (new: no request yet; idle; body: waiting for a request body).",
	}, []string{"listener", "phase"})
	connectionsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meshinit_webhook_connections_refused_total",
		Help: "New connections closed unserved because their source held its share of the listener's connections, by listener.",
	}, []string{"listener"})
	reviewsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meshinit_webhook_reviews_refused_total",
		Help: "Requests to the review path refused before the handler, by reason (too-large, no-length, busy: no room in the budget of bytes in flight, evicted: its body stalled while the budget was short, body: its body did not arrive).",
	}, []string{"reason"})
)

// refusedReasons are the reasons of reviewsRefused (limit.go), exposed from
// the start at 0, as reviewReasons are.
var refusedReasons = []string{"too-large", "no-length", "busy", "evicted", "body"}

func init() {
	metrics.Registry.MustRegister(connectionsEvicted, connectionsRefused, reviewsRefused)
	for _, r := range refusedReasons {
		reviewsRefused.WithLabelValues(r)
	}
}

// exposeListener exposes the connection counters of the listener name at 0
// (newConnLimit), as reviewReasons are: the phases a connection is evicted
// in are new, idle and body.
func exposeListener(name string) {
	connectionsRefused.WithLabelValues(name)
	for _, p := range []phase{phaseNew, phaseIdle, phaseBody} {
		connectionsEvicted.WithLabelValues(name, p.String())
	}
}
