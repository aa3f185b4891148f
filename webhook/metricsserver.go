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
	"net/http"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/semaphore"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
)

// maxMetricsInFlight bounds the scrapes handled at once: each one the
// API server has not seen lately costs it a TokenReview and a
// SubjectAccessReview, and anything in the cluster can send them.
const maxMetricsInFlight = 4

// metricsHandler serves controller-runtime's registry (meshinit's metrics
// and controller-runtime's) at /metrics, to clients the API server
// authenticates (a bearer token, by TokenReview) and authorizes (get on
// the non-resource URL /metrics, by SubjectAccessReview), as
// controller-runtime's secure metrics server does; its decisions are
// cached a minute. Beyond maxMetricsInFlight at once it answers 429.
func metricsHandler(cfg *rest.Config, client *http.Client, log logr.Logger) (http.Handler, error) {
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, client)
	if err != nil {
		return nil, err
	}
	scrape, err := filter(log, promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	if err != nil {
		return nil, err
	}
	inFlight := semaphore.NewWeighted(maxMetricsInFlight)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if !inFlight.TryAcquire(1) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many scrapes in flight", http.StatusTooManyRequests)
			return
		}
		defer inFlight.Release(1)
		scrape.ServeHTTP(w, r)
	})
	return mux, nil
}
