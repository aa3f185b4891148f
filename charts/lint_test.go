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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/meshinit/meshinit/charts"
)

// TestLint runs helm lint's checks (Chart.yaml, values against the schema,
// templates rendered and parsed as Kubernetes objects) for each scenario;
// warnings and errors fail, information does not. Helm lints a directory:
// a copy of the chart's embedded files. helm lint cannot say which APIs the
// cluster serves, so injector: policy fails it with the chart's own
// message, and only that.
func TestLint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "meshinit")
	if err := os.CopyFS(dir, charts.Files()); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			values := sc.values(t)
			l := lint.AllWithKubeVersion(dir, values, "meshinit-system", nil)
			for _, m := range l.Messages {
				if values["injector"] == "policy" && m.Severity == support.ErrorSev && strings.Contains(m.Err.Error(), "injector=policy needs an API server that serves") {
					continue
				}
				if m.Severity >= support.WarningSev {
					t.Errorf("%s", m)
				} else {
					t.Logf("%s", m)
				}
			}
		})
	}
}
