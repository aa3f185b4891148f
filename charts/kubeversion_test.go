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
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/meshinit/meshinit/charts"
)

// TestKubeVersion: the chart's kubeVersion is the oldest Kubernetes the
// version matrix of make test (the Makefile's KUBERNETES_MATRIX) proves,
// and Helm refuses the minor version before it, naming the requirement.
// Older API servers reject the chart's RedirectPolicy CRD (tried with
// make test-matrix's packages, see docs/install.md): v1.30.14 compiles CRD rules
// without the CIDR library ("undeclared reference to 'isCIDR'"), v1.31.14
// estimates the CIDR rule's cost as over budget by more than 100x.
func TestKubeVersion(t *testing.T) {
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^KUBERNETES_MATRIX := (.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("no KUBERNETES_MATRIX := ... line in the Makefile")
	}
	var minors []int
	for _, v := range strings.Fields(string(m[1])) {
		kv, err := chartutil.ParseKubeVersion(v)
		if err != nil {
			t.Fatalf("KUBERNETES_MATRIX: %v", err)
		}
		minor, _ := strconv.Atoi(kv.Minor)
		minors = append(minors, minor)
	}
	oldest := slices.Min(minors)

	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(">=1.%d.0-0", oldest); ch.Metadata.KubeVersion != want {
		t.Errorf("Chart.yaml kubeVersion %q, want %q: the oldest version KUBERNETES_MATRIX tests", ch.Metadata.KubeVersion, want)
	}
	for _, tc := range []struct {
		version string
		err     string // "" when installed
	}{
		{fmt.Sprintf("v1.%d.14", oldest-1), fmt.Sprintf("chart requires kubeVersion: %s which is incompatible with Kubernetes v1.%d.14", ch.Metadata.KubeVersion, oldest-1)},
		{fmt.Sprintf("v1.%d.0", oldest), ""},
		{"v1.37.2", ""},
	} {
		t.Run(tc.version, func(t *testing.T) {
			in := action.NewInstall(&action.Configuration{})
			in.ReleaseName, in.Namespace = "meshinit", "meshinit-system"
			in.DryRun, in.ClientOnly = true, true
			kv, err := chartutil.ParseKubeVersion(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			in.KubeVersion = kv
			_, err = in.Run(ch, nil)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("helm install on Kubernetes %s: %v", tc.version, err)
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Errorf("helm install on Kubernetes %s: error %v, want %q", tc.version, err, tc.err)
			}
		})
	}
}
