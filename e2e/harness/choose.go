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
	"os"
)

// ClusterEnv chooses the cluster the end-to-end tests and `make demo` run
// on: ClusterLocal (the default) or ClusterExisting. The Makefile sets it
// from CLUSTER.
const ClusterEnv = "MESHINIT_CLUSTER"

const (
	// ClusterLocal is the local single-node cluster (e2e/cluster), brought
	// up as needed. KUBECONFIG is not used: a KUBECONFIG a user has set for
	// other work must not become the tests' cluster unasked.
	ClusterLocal = "local"
	// ClusterExisting is the cluster KUBECONFIG names (Existing).
	ClusterExisting = "existing"
)

// E2ECreates is what the end-to-end tests create on a cluster, and remove
// when they end.
var E2ECreates = []string{
	"the Helm release " + Release + " in namespace " + ReleaseNamespace + " (created), installed, upgraded and uninstalled many times: " +
		"its cluster-wide objects too (the RedirectPolicy CRD, which stays after uninstall as with helm, mutating and validating webhook and admission policy configurations, ClusterRoles and bindings)",
	"the chart's helm test pod, in namespace " + Release + "-test",
	"namespaces named e2e-<test>-<number>, with pods, Deployments and RedirectPolicies in them, deleted at the end of each test",
	"the images redirector, webhook, test-app and test-proxy, pushed to MESHINIT_E2E_REGISTRY or loaded into the node's containerd",
	"(TestCertManager, TestDemo and TestImagesFromARegistry run on the local cluster only and skip here)",
}

// Choose returns the cluster ClusterEnv asks for: the local one (Local),
// or the one KUBECONFIG names (Existing). On an existing cluster it first
// says, through logf, which cluster it is and what who (the caller: "the
// end-to-end tests", "the demo") will create there (creates), so that
// nothing appears on a cluster unannounced.
func Choose(ctx context.Context, logf func(string, ...any), who string, creates []string) (*Cluster, error) {
	switch choice := os.Getenv(ClusterEnv); choice {
	case "", ClusterLocal:
		if kc := os.Getenv("KUBECONFIG"); kc != "" && kc != localKubeconfig {
			logf("KUBECONFIG=%s is not used: %s run on the local cluster; CLUSTER=existing (%s=%s) runs them on that cluster", kc, who, ClusterEnv, ClusterExisting)
		}
		return Local(ctx, logf)
	case ClusterExisting:
		c, err := Existing(ctx, logf)
		if err != nil {
			return nil, err
		}
		where, err := c.Kubectl(ctx, "", "config", "view", "--minify", "-o", `jsonpath=context {.current-context}, API server {.clusters[0].cluster.server}`)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster KUBECONFIG=%s names: %w", c.Kubeconfig, err)
		}
		logf("%s run on the existing cluster KUBECONFIG=%s names (%s), and will create there:", who, c.Kubeconfig, where)
		for _, what := range creates {
			logf("  - %s", what)
		}
		return c, nil
	default:
		return nil, fmt.Errorf("%s=%q (CLUSTER): want %s or %s", ClusterEnv, choice, ClusterLocal, ClusterExisting)
	}
}

// FromEnv is Choose for the end-to-end tests.
func FromEnv(ctx context.Context, logf func(string, ...any)) (*Cluster, error) {
	return Choose(ctx, logf, "the end-to-end tests", E2ECreates)
}
