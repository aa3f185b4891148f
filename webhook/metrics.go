package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OutcomeError counts reviews that failed before a decision: malformed
// requests and namespace lookups that failed.
const OutcomeError Outcome = "error"

// injections counts reviewed pods by outcome and opt-in reason. It is served
// with controller-runtime's own webhook metrics
// (controller_runtime_webhook_requests_total, ..._latency_seconds, ...).
var injections = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "meshinit_webhook_injections_total",
	Help: "Pods reviewed by the meshinit webhook, by outcome (injected, unchanged, skipped, denied, error) and opt-in reason.",
}, []string{"outcome", "reason"})

func init() {
	metrics.Registry.MustRegister(injections)
}

func observe(o Outcome, r Reason) {
	injections.WithLabelValues(string(o), string(r)).Inc()
}
