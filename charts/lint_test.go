package chart

import (
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestLint runs helm lint's checks (Chart.yaml, values against the schema,
// templates rendered and parsed as Kubernetes objects) for each scenario;
// warnings and errors fail, information does not.
func TestLint(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			l := lint.AllWithKubeVersion(Dir(), sc.values(t), "meshinit-system", nil)
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
