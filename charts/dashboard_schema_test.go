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
	"errors"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshinit/meshinit/charts"
)

// TestDashboardSchema reads the chart's Grafana dashboard with the types
// of Grafana's dashboard schema as the Grafana Foundation SDK generates
// them (github.com/grafana/grafana-foundation-sdk/go, Apache-2.0; Grafana
// itself is AGPL and is not linked): strictly, so a field the schema does
// not have, a value of the wrong type or a required field missing is an
// error, down to each panel's options and field config (by panel type:
// timeseries, stat) and each query (by data source type: prometheus); then
// the schema's own validation. The strict reader is checked to refuse a
// misspelt field, so the test can fail.
func TestDashboardSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	objs := charts.MustObjects(t, charts.Options{Values: monitoringValues(false)}, false)
	cms := charts.Find(objs, "ConfigMap", "meshinit-dashboard")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps meshinit-dashboard", len(cms))
	}
	raw, _, _ := unstructured.NestedString(cms[0].Object, "data", "meshinit-webhook.json")
	var d dashboard.Dashboard
	if err := sdkError(d.UnmarshalJSONStrict([]byte(raw))); err != nil {
		t.Fatalf("the dashboard does not read as Grafana's dashboard schema: %v", err)
	}
	if err := sdkError(d.Validate()); err != nil {
		t.Errorf("the dashboard does not validate against Grafana's dashboard schema: %v", err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels read")
	}

	// The reader refuses what the schema does not have, down to a panel's
	// options and a query's fields.
	for _, tc := range []struct{ from, to string }{
		{`"gridPos"`, `"gridPosition"`},
		{`"graphMode"`, `"graphModes"`},
		{`"legend"`, `"legends"`},
		{`"expr"`, `"expression"`},
	} {
		misspelt := strings.Replace(raw, tc.from, tc.to, 1)
		if misspelt == raw {
			t.Fatalf("the dashboard has no %s to misspell", tc.from)
		}
		if err := sdkError(new(dashboard.Dashboard).UnmarshalJSONStrict([]byte(misspelt))); err == nil || !strings.Contains(err.Error(), strings.Trim(tc.to, `"`)) {
			t.Errorf("%s for %s: error %v, want one naming it", tc.to, tc.from, err)
		}
	}
}

// sdkError is err, but nil for an empty cog.BuildErrors: the SDK's readers
// return their (nil) list of errors as an error, which is then not nil.
func sdkError(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}
