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

package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// A Query is one PromQL expression of the chart's monitoring objects and
// where it is: an alert of the PrometheusRule or a panel or variable of the
// dashboard.
type Query struct {
	Where, Expr string
}

// MonitoringQueries returns the PromQL expressions of the PrometheusRule's
// rules and of the dashboard's panels and template variables (label_values'
// series selector) among objs, which the chart rendered with
// metrics.prometheusRule and metrics.dashboard enabled.
func MonitoringQueries(objs []*unstructured.Unstructured) ([]Query, error) {
	var out []Query
	for _, o := range Find(objs, "PrometheusRule", "") {
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				r := r.(map[string]any)
				out = append(out, Query{fmt.Sprintf("PrometheusRule %s, alert %v", o.GetName(), r["alert"]), fmt.Sprint(r["expr"])})
			}
		}
	}
	for _, o := range Find(objs, "ConfigMap", "") {
		if o.GetLabels()["grafana_dashboard"] != "1" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for file, text := range data {
			var d Dashboard
			if err := json.Unmarshal([]byte(text), &d); err != nil {
				return nil, fmt.Errorf("ConfigMap %s, %s: %w", o.GetName(), file, err)
			}
			for _, p := range d.Panels {
				for _, t := range p.Targets {
					out = append(out, Query{fmt.Sprintf("dashboard %s, panel %q, target %s", file, p.Title, t.RefID), t.Expr})
				}
			}
			for _, v := range d.Templating.List {
				if v.Type != "query" {
					continue
				}
				m := labelValues.FindStringSubmatch(v.Definition)
				if m == nil {
					return nil, fmt.Errorf("dashboard %s, variable %s: query %q is not label_values(<series>, <label>)", file, v.Name, v.Definition)
				}
				out = append(out, Query{fmt.Sprintf("dashboard %s, variable %s", file, v.Name), m[1]})
			}
		}
	}
	return out, nil
}

// labelValues is a Grafana Prometheus variable query label_values(series, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// Dashboard is the part of a Grafana dashboard's JSON the chart's tests
// read.
type Dashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Panels        []struct {
		ID         int            `json:"id"`
		Title      string         `json:"title"`
		Type       string         `json:"type"`
		Datasource map[string]any `json:"datasource"`
		GridPos    struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// PromQL's lexical parts MetricNames tells apart.
var (
	promqlString = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promqlBraces = regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]`)
	// grouping keywords are followed by a list of label names.
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlToken    = regexp.MustCompile(`[0-9][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*|\S`)
	promqlKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless", "atan2", "inf", "nan", "Inf", "NaN", "start", "end"}
)

// MetricNames returns the metric names expr selects, each once, in order:
// the names of its series selectors, without label matchers, ranges,
// strings, function and aggregation names, grouping labels and keywords.
// (A PromQL parser would link Prometheus into meshinit's module;
// promtool parses the rules themselves in charts' TestPrometheusRule.)
// Grafana's variables ($job, $__rate_interval) may stand in matchers and
// ranges.
func MetricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, `""`)
	for prev := ""; prev != s; {
		prev, s = s, promqlBraces.ReplaceAllString(s, " ")
	}
	s = promqlGrouping.ReplaceAllString(s, " ")
	tokens := promqlToken.FindAllString(s, -1)
	var out []string
	for i, tok := range tokens {
		c := tok[0]
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') || slices.Contains(promqlKeywords, tok) {
			continue
		}
		// A function or aggregation: followed by its arguments, or by a
		// grouping whose labels were removed (sum by (le) (...)).
		if i+1 < len(tokens) && tokens[i+1] == "(" {
			continue
		}
		if !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out
}

// SampleNames returns the sample names of a Prometheus text exposition (a
// histogram's as exposed: name_bucket, name_sum, name_count).
func SampleNames(exposition string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			out[line[:i]] = true
		}
	}
	return out
}

// UnservedMonitoringNames returns every metric the chart's PrometheusRule
// and Grafana dashboard name, and every series of the alerts' promtool unit
// tests (the file alertTests), with where each is named, and those of them
// that are not among the samples of exposition (a running webhook's
// /metrics): an alert or panel that would wait on a series that never
// comes. `up` is Prometheus's own, one per target it scrapes.
func UnservedMonitoringNames(exposition, alertTests string) (named, unserved []string, err error) {
	served := SampleNames(exposition)
	objs, err := Objects(Options{Values: map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true},
		"prometheusRule": map[string]any{"enabled": true},
		"dashboard":      map[string]any{"enabled": true},
	}}}, false)
	if err != nil {
		return nil, nil, err
	}
	queries, err := MonitoringQueries(objs)
	if err != nil {
		return nil, nil, err
	}
	raw, err := os.ReadFile(alertTests)
	if err != nil {
		return nil, nil, err
	}
	var unitTests struct {
		Tests []struct {
			Name        string
			InputSeries []struct{ Series string } `json:"input_series"`
		}
	}
	if err := yaml.Unmarshal(raw, &unitTests); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", alertTests, err)
	}
	for _, tc := range unitTests.Tests {
		for _, s := range tc.InputSeries {
			queries = append(queries, Query{Where: filepath.Base(alertTests) + ", " + tc.Name, Expr: s.Series})
		}
	}
	if len(queries) < 10 {
		return nil, nil, fmt.Errorf("only %d queries in the chart's monitoring objects: %v", len(queries), queries)
	}
	seen := map[string]bool{}
	for _, q := range queries {
		for _, name := range MetricNames(q.Expr) {
			if !seen[name] {
				seen[name] = true
				named = append(named, name)
			}
			if name != "up" && !served[name] {
				unserved = append(unserved, fmt.Sprintf("%s names %s", q.Where, name))
			}
		}
	}
	slices.Sort(named)
	return named, unserved, nil
}
