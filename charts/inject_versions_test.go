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
	"strings"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
)

// mapServedFrom is the first Kubernetes minor version that serves
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, which
// injector: policy needs.
const mapServedFrom = 36

// policyInjectorServed says whether server serves what injector: policy
// needs. Where it does not (the older API servers of make test-matrix), it
// checks instead that Helm, reading the served APIs from that server,
// refuses to install the chart with injector: policy, naming the API and the
// server's version, and the caller's test ends there: what it tests does
// not exist on that version.
func policyInjectorServed(t *testing.T, server *testkit.APIServer) bool {
	t.Helper()
	if server.Minor >= mapServedFrom {
		return true
	}
	helm, ch := newHelm(t, server)
	in := newInstall(helm)
	in.DryRun = true // the refusal comes from rendering; nothing is sent either way
	_, err := in.Run(ch, map[string]any{"injector": "policy"})
	want := fmt.Sprintf("injector=policy needs an API server that serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36 or newer), and this one (v1.%d.", server.Minor)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("helm install with injector=policy on Kubernetes 1.%d: error %v, want one containing %q", server.Minor, err, want)
	}
	t.Logf("Kubernetes 1.%d does not serve MutatingAdmissionPolicy v1: Helm refused injector=policy as it should, so this test of the policy injector ends here", server.Minor)
	return false
}
