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
	"testing"

	"github.com/meshinit/meshinit/charts"
)

// monitoringNamesServed checks that every metric the chart's PrometheusRule
// and Grafana dashboard name, and every series of the alerts' promtool unit
// tests, is among the samples of exposition, a running webhook's /metrics
// (charts.UnservedMonitoringNames).
func monitoringNamesServed(t *testing.T, exposition string) {
	t.Helper()
	named, unserved, err := charts.UnservedMonitoringNames(exposition, "../charts/testdata/alerts/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range unserved {
		t.Errorf("%s, which the webhook does not serve", u)
	}
	t.Logf("metrics named and served: %v", named)
}
