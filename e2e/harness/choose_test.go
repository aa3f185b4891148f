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

package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
)

// TestChooseExisting: with CLUSTER=existing the harness uses the cluster
// KUBECONFIG names (a real API server here) and, before anything is
// created, says which cluster that is (its context and API server) and
// everything the caller will create there; it creates nothing itself.
func TestChooseExisting(t *testing.T) {
	server := testkit.StartAPIServer(t, testkit.Options{})
	t.Setenv(ClusterEnv, ClusterExisting)
	t.Setenv("KUBECONFIG", server.Kubeconfig)
	t.Setenv("MESHINIT_E2E_REGISTRY", "registry.invalid/meshinit")
	before, _, err := server.Kubectl("", "get", "namespaces", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	logf := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	c, err := Choose(t.Context(), logf, "the checks", []string{"namespace checked-1", "a pod in it"})
	if err != nil {
		t.Fatal(err)
	}
	if c.IsLocal() || c.Kubeconfig != server.Kubeconfig || c.Registry != "registry.invalid/meshinit" {
		t.Errorf("chose %+v, want the cluster of %s with the images in the registry", c, server.Kubeconfig)
	}
	log := strings.Join(said, "\n")
	host := strings.TrimSuffix(strings.TrimPrefix(server.Config.Host, "https://"), "/")
	for _, want := range []string{"the checks run on the existing cluster KUBECONFIG=" + server.Kubeconfig, "API server https://" + host,
		"will create there:", "  - namespace checked-1", "  - a pod in it"} {
		if !strings.Contains(log, want) {
			t.Errorf("what it said lacks %q:\n%s", want, log)
		}
	}
	if after, _, _ := server.Kubectl("", "get", "namespaces", "-o", "name"); after != before {
		t.Errorf("choosing the cluster changed its namespaces:\n%s\nbefore:\n%s", after, before)
	}
}

// TestChooseRefuses: an unknown CLUSTER, or CLUSTER=existing without a
// KUBECONFIG, is an error that names the setting and the value.
func TestChooseRefuses(t *testing.T) {
	for _, tc := range []struct{ cluster, kubeconfig, want string }{
		{"remote", "/tmp/kubeconfig", `MESHINIT_CLUSTER="remote" (CLUSTER): want local or existing`},
		{ClusterExisting, "", "MESHINIT_CLUSTER=existing, but KUBECONFIG is unset"},
	} {
		t.Setenv(ClusterEnv, tc.cluster)
		t.Setenv("KUBECONFIG", tc.kubeconfig)
		_, err := Choose(context.Background(), t.Logf, "the checks", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CLUSTER=%s KUBECONFIG=%q: %v, want an error saying %q", tc.cluster, tc.kubeconfig, err, tc.want)
		}
	}
}
