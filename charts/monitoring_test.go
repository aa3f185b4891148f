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

package charts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/hack/docs"
	"github.com/meshinit/meshinit/internal/testkit"
)

// monitoringValues enables every monitoring object, with the ServiceMonitor
// or (podMonitor) the PodMonitor.
func monitoringValues(podMonitor bool) map[string]any {
	return map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": !podMonitor},
		"podMonitor":     map[string]any{"enabled": podMonitor},
		"prometheusRule": map[string]any{"enabled": true},
		"dashboard":      map[string]any{"enabled": true},
	}}
}

// prometheusTools runs hack/prometheus/build.sh once (make test's stage
// built promtool and the CRDs before: then it only prints their paths) and
// returns promtool's path and the Prometheus Operator's CRD directory.
var prometheusTools = sync.OnceValues(func() ([2]string, error) {
	out, err := exec.Command("../hack/prometheus/build.sh").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return [2]string{}, fmt.Errorf("hack/prometheus/build.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return [2]string{}, fmt.Errorf("hack/prometheus/build.sh printed %q, want two lines (promtool, CRD directory)", out)
	}
	return [2]string{lines[0], lines[1]}, nil
})

func promtool(t *testing.T) string {
	t.Helper()
	tools, err := prometheusTools()
	if err != nil {
		t.Fatal(err)
	}
	return tools[0]
}

// TestMonitoringOffByDefault: no monitoring object renders unless asked
// for, nor any in policy mode (no webhook to scrape).
func TestMonitoringOffByDefault(t *testing.T) {
	policy := monitoringValues(false)
	policy["injector"] = "policy"
	for name, values := range map[string]map[string]any{"default": nil, "injector policy": policy} {
		objs, err := charts.Objects(charts.Options{Values: values, APIVersions: []string{mapAPI}}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "monitoring.coreos.com/v1" || o.GetLabels()["grafana_dashboard"] != "" || strings.Contains(o.GetName(), "metrics-scraper") {
				t.Errorf("%s: %s %s rendered", name, o.GetKind(), o.GetName())
			}
		}
	}
	if _, err := charts.Render(charts.Options{Values: map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true}, "podMonitor": map[string]any{"enabled": true},
	}}}); err == nil || !strings.Contains(err.Error(), "podMonitor") {
		t.Errorf("serviceMonitor and podMonitor both enabled: %v, want an error naming them", err)
	}
}

// TestPrometheusRule checks the rendered PrometheusRule's groups with
// `promtool check rules` and runs `promtool test rules` on them with
// testdata/alerts/alerts.test.yaml, which must have a case where each alert
// fires and one where it does not; every alert's runbook_url must name a
// section of docs/operations.md.
func TestPrometheusRule(t *testing.T) {
	objs := charts.MustObjects(t, charts.Options{Values: monitoringValues(false)}, false)
	rules := charts.Find(objs, "PrometheusRule", "meshinit-webhook")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules meshinit-webhook", len(rules))
	}
	groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
	dir := t.TempDir()
	rulesYAML, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	unitTests, err := os.ReadFile("testdata/alerts/alerts.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), unitTests, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "--lint=all", "--lint-fatal", "rules.yaml"}, {"test", "rules", "alerts.test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s\nrules:\n%s", strings.Join(args, " "), err, out, rulesYAML)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}

	// Each alert: a case that fires it, one that does not.
	var file struct {
		Tests []struct {
			Name          string
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		}
	}
	if err := yaml.Unmarshal(unitTests, &file); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	operations, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := docs.Anchors(string(operations))
	var alerts []string
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			name, _, _ := unstructured.NestedString(r.(map[string]any), "alert")
			runbook, _, _ := unstructured.NestedString(r.(map[string]any), "annotations", "runbook_url")
			alerts = append(alerts, name)
			if !fires[name] || !quiet[name] {
				t.Errorf("alert %s: testdata/alerts/alerts.test.yaml has a case where it fires: %v, where it does not: %v; want both", name, fires[name], quiet[name])
			}
			u, err := url.Parse(runbook)
			if err != nil || u.Fragment == "" || !strings.HasSuffix(u.Path, "/docs/operations.md") {
				t.Errorf("alert %s: runbook_url %q, want .../docs/operations.md#<section>", name, runbook)
				continue
			}
			if !anchors[u.Fragment] {
				t.Errorf("alert %s: runbook_url %q: docs/operations.md has no section #%s", name, runbook, u.Fragment)
			}
		}
	}
	for _, want := range []string{"MeshinitWebhookDown", "MeshinitReviewsDenied", "MeshinitWebhookErrors", "MeshinitWebhookReviewLatencyHigh", "MeshinitWebhookCertificateExpiring"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}
}

// TestDashboard checks the dashboard ConfigMap: the label the Grafana
// sidecar loads it by, JSON that parses into a dashboard (a title and uid;
// panels with unique ids inside the 24-column grid, each querying the
// dashboard's data source variable with a PromQL expression), and that every
// query names at least one metric. (Which metrics the webhook serves:
// webhook's TestAgainstAPIServer, "the chart's alerts and dashboard".)
// Grafana's schema: TestDashboardSchema.
func TestDashboard(t *testing.T) {
	objs := charts.MustObjects(t, charts.Options{Values: monitoringValues(false)}, false)
	cms := charts.Find(objs, "ConfigMap", "meshinit-dashboard")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps meshinit-dashboard", len(cms))
	}
	if got := cms[0].GetLabels()["grafana_dashboard"]; got != "1" {
		t.Errorf("label grafana_dashboard=%q, want 1", got)
	}
	data, _, _ := unstructured.NestedStringMap(cms[0].Object, "data")
	raw, ok := data["meshinit-webhook.json"]
	if !ok || len(data) != 1 {
		t.Fatalf("data keys %v, want meshinit-webhook.json", data)
	}
	var d charts.Dashboard
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("the dashboard's JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 || len(d.Panels) == 0 {
		t.Errorf("dashboard title %q, uid %q, schemaVersion %d, %d panels", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d repeated or zero", p.Title, p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Datasource["uid"] != "${datasource}" || len(p.Targets) == 0 || !slices.Contains([]string{"stat", "timeseries"}, p.Type) {
			t.Errorf("panel %q: type %q, datasource %v, %d targets", p.Title, p.Type, p.Datasource, len(p.Targets))
		}
	}
	queries, err := charts.MonitoringQueries(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if len(charts.MetricNames(q.Expr)) == 0 {
			t.Errorf("%s: %q names no metric", q.Where, q.Expr)
		}
	}
}

// TestMetricNames: the metric names of PromQL expressions as the chart's
// rules and dashboard write them.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`absent(up{job="j", namespace="n"} == 1)`:                                                            {"up"},
		`sum by (reason) (increase(a_total{job="j", outcome="denied"}[10m])) > 5`:                            {"a_total"},
		`(sum(increase(a_total{x="y"}[10m])) or vector(0)) + (sum(increase(b_total[10m])) or vector(0)) > 0`: {"a_total", "b_total"},
		`histogram_quantile(0.99, sum by (le) (rate(h_bucket{job=~"$job"}[$__rate_interval]))) > 0.1`:        {"h_bucket"},
		`min by (certificate) (c_seconds{job="j"}) - time() < 14 * 86400`:                                    {"c_seconds"},
		`sum(rate(a_total[5m])) by (le) / on (pod) group_left (node) b_info offset 5m`:                       {"a_total", "b_info"},
		`count(up{job="x", label="by (le)"}) without (pod) unless ignoring (x) 1e3 > bool d:recorded:rate5m`: {"up", "d:recorded:rate5m"},
		`label_replace(a_total{x="{}"}, "dst", "$1", "src", "(.*)")`:                                         {"a_total"},
	} {
		if got := charts.MetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("MetricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// TestMonitoringObjectsAgainstCRDs creates the rendered ServiceMonitor,
// PodMonitor and PrometheusRule, server-side dry runs with strict field
// validation (a field the schema does not know is an error, not pruned), on a real API server serving the Prometheus Operator's own
// CRDs (hack/prometheus/build.sh generates them from the operator's API
// module at the pinned version), so a field the operator does not know or
// a value its schema refuses fails here.
func TestMonitoringObjectsAgainstCRDs(t *testing.T) {
	testkit.NeedAPIServer(t)
	tools, err := prometheusTools()
	if err != nil {
		t.Fatal(err)
	}
	s := testkit.StartAPIServer(t, testkit.Options{})
	crds, err := envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{Paths: []string{tools[1]}, ErrorIfPathMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	for _, want := range []string{"servicemonitors.monitoring.coreos.com", "podmonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s lacks %s: %v", tools[1], want, names)
		}
	}
	dc, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := dc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx,
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "meshinit-system"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resources := map[string]string{"ServiceMonitor": "servicemonitors", "PodMonitor": "podmonitors", "PrometheusRule": "prometheusrules"}
	checked := map[string]bool{}
	for _, podMonitor := range []bool{false, true} {
		for _, o := range charts.MustObjects(t, charts.Options{Values: monitoringValues(podMonitor)}, false) {
			resource, ok := resources[o.GetKind()]
			if !ok || o.GetAPIVersion() != "monitoring.coreos.com/v1" {
				continue
			}
			gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: resource}
			_, err := dc.Resource(gvr).Namespace(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
			if err != nil {
				t.Errorf("%s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				continue
			}
			checked[o.GetKind()] = true
		}
	}
	if len(checked) != len(resources) {
		t.Errorf("checked %v, want each of %v", checked, resources)
	}
	// The check can fail: a misspelt field, and a value the schema refuses.
	sm := charts.Find(charts.MustObjects(t, charts.Options{Values: monitoringValues(false)}, false), "ServiceMonitor", "")[0]
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	gvr := schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}
	for name, change := range map[string]func(map[string]any){
		"tlsConfig.severName":                func(e map[string]any) { e["tlsConfig"].(map[string]any)["severName"] = "x" },
		"scheme gopher":                      func(e map[string]any) { e["scheme"] = "gopher" },
		"authorization.credentials a string": func(e map[string]any) { e["authorization"].(map[string]any)["credentials"] = "token" },
	} {
		bad := sm.DeepCopy()
		e := runtime.DeepCopyJSONValue(endpoints[0]).(map[string]any)
		change(e)
		_ = unstructured.SetNestedSlice(bad.Object, []any{e}, "spec", "endpoints")
		if _, err := dc.Resource(gvr).Namespace(bad.GetNamespace()).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err == nil {
			t.Errorf("a ServiceMonitor with %s was accepted", name)
		}
	}
}
