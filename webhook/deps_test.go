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
	"os/exec"
	"strings"
	"testing"
)

// shippedBinaries are the programs meshinit ships: those its images run,
// and the kubectl plugin.
var shippedBinaries = []string{
	"github.com/meshinit/meshinit/webhook/cmd/meshinit-webhook",
	"github.com/meshinit/meshinit/initimage/cmd/redirector",
	"github.com/meshinit/meshinit/kubectlplugin/cmd/kubectl-meshinit",
}

// toolingOnly are packages the module requires for its tests and tools
// only: rendering and installing the chart, building images, starting an
// API server, checking the chart's dashboard.
var toolingOnly = []string{
	"helm.sh/",
	"github.com/google/go-containerregistry",
	"sigs.k8s.io/controller-runtime/pkg/envtest",
	// The Grafana Foundation SDK: the types of Grafana's dashboard schema,
	// which the chart's dashboard is checked against.
	"github.com/grafana/grafana-foundation-sdk",
}

// chartRendering are the Helm packages that load and render a chart,
// without installing it: kubectl meshinit check --pre renders the chart it
// is built with, as helm install would on the user's cluster, to know what
// the install needs (kubectlplugin/preinstall.go). Only the plugin may link
// them.
var chartRendering = map[string]bool{
	"helm.sh/helm/v3/pkg/chart":        true,
	"helm.sh/helm/v3/pkg/chart/loader": true,
	"helm.sh/helm/v3/pkg/chartutil":    true,
	"helm.sh/helm/v3/pkg/engine":       true,
	"helm.sh/helm/v3/pkg/ignore":       true,
	"helm.sh/helm/v3/internal/sympath": true,
	"helm.sh/helm/v3/internal/version": true,
}

// TestShippedBinariesLinkNoTooling: one go.mod serves the product and its
// tooling; the binaries meshinit ships link none of the tooling (the
// plugin: only chartRendering of it).
func TestShippedBinariesLinkNoTooling(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	for _, bin := range shippedBinaries {
		out, err := exec.Command(goTool, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, bin).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", bin, err)
		}
		importers := map[string]string{} // package -> a package importing it
		var deps []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			deps = append(deps, fields[0])
			for _, imp := range fields[1:] {
				importers[imp] = fields[0]
			}
		}
		for _, dep := range deps {
			for _, bad := range toolingOnly {
				if strings.HasPrefix(dep, bad) && !(strings.HasSuffix(bin, "/kubectl-meshinit") && chartRendering[dep]) {
					t.Errorf("%s links %s (imported by %s)", bin, dep, importers[dep])
				}
			}
		}
	}
}
