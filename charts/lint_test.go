package charts_test

import (
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/meshinit/meshinit/charts"
)

// TestLint runs helm lint's checks (Chart.yaml, values against the schema,
// templates rendered and parsed as Kubernetes objects) for each scenario;
// warnings and errors fail, information does not. Helm lints a directory:
// a copy of the chart's embedded files.
func TestLint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "meshinit")
	if err := os.CopyFS(dir, charts.Files()); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(dir, sc.values(t), "meshinit-system", nil)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("%s", m)
				} else {
					t.Logf("%s", m)
				}
			}
		})
	}
}
