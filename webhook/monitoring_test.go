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
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
)

// monitoringNamesServed checks that every metric the chart's PrometheusRule
// and Grafana dashboard name, and every series of the alerts' promtool unit
// tests (charts/testdata/alerts), is among the samples of exposition, a
// running webhook's /metrics, so no alert or panel waits on a series that
// never comes. `up` is Prometheus's own, one per target it scrapes.
func monitoringNamesServed(t *testing.T, exposition string) {
	t.Helper()
	served := charts.SampleNames(exposition)
	objs := charts.MustObjects(t, charts.Options{Values: map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true},
		"dashboard":      map[string]any{"enabled": true},
	}}}, false)
	queries, err := charts.MonitoringQueries(objs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../charts/testdata/alerts/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var unitTests struct {
		Tests []struct {
			Name        string
			InputSeries []struct{ Series string } `json:"input_series"`
		}
	}
	if err := yaml.Unmarshal(raw, &unitTests); err != nil {
		t.Fatal(err)
	}
	for _, tc := range unitTests.Tests {
		for _, s := range tc.InputSeries {
			queries = append(queries, charts.Query{Where: "alerts.test.yaml, " + tc.Name, Expr: s.Series})
		}
	}
	if len(queries) < 10 {
		t.Fatalf("%d queries in the chart's monitoring objects: %v", len(queries), queries)
	}
	checked := map[string]bool{}
	for _, q := range queries {
		for _, name := range charts.MetricNames(q.Expr) {
			checked[name] = true
			if name != "up" && !served[name] {
				t.Errorf("%s names %s, which the webhook does not serve", q.Where, name)
			}
		}
	}
	t.Logf("metrics named and served: %v", checked)
}
