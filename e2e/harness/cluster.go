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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/meshinit/meshinit/e2e/cluster"
)

// Cluster is the cluster to run on.
type Cluster struct {
	// Kubeconfig is the path of its kubeconfig.
	Kubeconfig string
	// KubectlBin is the kubectl that talks to it.
	KubectlBin string
	// Containerd is the socket of the node's containerd, where images are
	// loaded, unless they are pushed to Registry.
	Containerd string
	// Registry is the registry prefix the images are pushed to, for a
	// cluster whose nodes pull them; "" loads them through Containerd.
	Registry string
	// imageValues point the chart at the images in Registry.
	imageValues map[string]any
	// policyValues are the policy values the tests and the demo are written
	// for: AppPod's proxy containers are the chart's proxy containers (they
	// run as the proxy UID), and pods may opt out (the default
	// RedirectPolicy's interception is AllowOptOut, not the chart's
	// Required).
	policyValues map[string]any
	// local is the local cluster, nil for one KUBECONFIG names (Existing).
	local *cluster.Cluster
}

// Unavailable says why no cluster can run here (not root, binaries or
// packages missing). Tests skip with it; the demo prints it.
type Unavailable struct{ Reason string }

func (u *Unavailable) Error() string { return u.Reason }

// localKubeconfig is where the local cluster (cluster.Options' default
// StateDir) keeps its kubeconfig.
const localKubeconfig = "/var/lib/meshinit-e2e/kubeconfig"

// binDir is where `make tools-cluster` puts the cluster's binaries
// (cluster.Options.BinDir's default).
func binDir() string {
	cache := os.Getenv("MESHINIT_CACHE")
	if cache == "" {
		cache = "/var/cache/meshinit"
	}
	return filepath.Join(cache, "kubernetes-"+cluster.KubernetesVersion, "bin")
}

// Existing returns the cluster KUBECONFIG names, for a caller that was
// asked to use it (CLUSTER=existing, see Choose). The images are pushed to
// the registry prefix MESHINIT_E2E_REGISTRY (e.g. registry.example/meshinit)
// when it is set, else loaded through the containerd socket
// MESHINIT_E2E_CONTAINERD (default /run/containerd/containerd.sock), which
// must be a node of that cluster.
func Existing(ctx context.Context, logf func(string, ...any)) (*Cluster, error) {
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		return nil, fmt.Errorf("%s=%s, but KUBECONFIG is unset: point it at the cluster to use", ClusterEnv, ClusterExisting)
	}
	c := &Cluster{Kubeconfig: kc, KubectlBin: filepath.Join(binDir(), "kubectl"), Registry: os.Getenv("MESHINIT_E2E_REGISTRY")}
	if _, err := os.Stat(c.KubectlBin); err != nil {
		if c.KubectlBin, err = exec.LookPath("kubectl"); err != nil {
			return nil, &Unavailable{"no kubectl (run `make tools-envtest`, or put one on PATH)"}
		}
	}
	if c.Registry != "" {
		logf("cluster: KUBECONFIG=%s, images pushed to %s", kc, c.Registry)
		return c, nil
	}
	if os.Geteuid() != 0 {
		return nil, &Unavailable{"loading images into the node's containerd needs root (or set MESHINIT_E2E_REGISTRY to a registry the cluster pulls from)"}
	}
	c.Containerd = os.Getenv("MESHINIT_E2E_CONTAINERD")
	if c.Containerd == "" {
		c.Containerd = "/run/containerd/containerd.sock"
	}
	if _, err := os.Stat(c.Containerd); err != nil {
		return nil, &Unavailable{fmt.Sprintf("KUBECONFIG=%s, but the images cannot be loaded: no containerd socket %s (set MESHINIT_E2E_CONTAINERD to the node's, or MESHINIT_E2E_REGISTRY to a registry the cluster pulls from)", kc, c.Containerd)}
	}
	logf("cluster: KUBECONFIG=%s, images loaded through %s", kc, c.Containerd)
	return c, nil
}

// Local brings up the local cluster (e2e/cluster), or returns it if it is
// already running.
func Local(ctx context.Context, logf func(string, ...any)) (*Cluster, error) {
	if os.Geteuid() != 0 {
		return nil, &Unavailable{"the local cluster needs root"}
	}
	var missing []string
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"} {
		if _, err := os.Stat(filepath.Join(binDir(), b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return nil, &Unavailable{fmt.Sprintf("%s missing in %s (run `make tools-cluster`)", strings.Join(missing, ", "), binDir())}
	}
	for _, b := range []string{"containerd", "ctr", "runc", "nsenter"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, &Unavailable{b + " is not installed (run `hack/install-debian-packages.sh --cluster`)"}
		}
	}
	lc, err := cluster.Up(ctx, cluster.Options{Logf: logf})
	if err != nil {
		return nil, err
	}
	return &Cluster{
		Kubeconfig: lc.Kubeconfig(),
		KubectlBin: filepath.Join(lc.Options().BinDir, "kubectl"),
		Containerd: lc.ContainerdSocket(),
		local:      lc,
	}, nil
}

// StartedHere says whether Local started the cluster (rather than finding
// it running, or it being one KUBECONFIG names): only then should its
// caller take it down.
func (c *Cluster) StartedHere() bool { return c.local != nil && !c.local.Reused() }

// IsLocal says whether this is the local cluster.
func (c *Cluster) IsLocal() bool { return c.local != nil }

// Down takes the local cluster down.
func (c *Cluster) Down(ctx context.Context) error {
	if c.local == nil {
		return errors.New("not the local cluster: not taking it down")
	}
	return c.local.Down(ctx)
}

// Kubectl runs kubectl with stdin (may be empty) and returns its standard
// output, trimmed; a failure's error holds the standard error.
func (c *Cluster) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.KubectlBin, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return strings.TrimSpace(string(out)), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Apply applies manifests server-side.
func (c *Cluster) Apply(ctx context.Context, manifests string, args ...string) (string, error) {
	return c.Kubectl(ctx, manifests, append([]string{"apply", "--server-side", "--force-conflicts", "--field-manager", "meshinit-e2e", "-f", "-"}, args...)...)
}

// APIServerPID is the process ID of the local cluster's kube-apiserver, for
// benchmarks that read its CPU time; an error on a cluster KUBECONFIG names.
func (c *Cluster) APIServerPID() (int, error) {
	if c.local == nil {
		return 0, errors.New("not the local cluster: its kube-apiserver's process cannot be read")
	}
	return c.local.PID("kube-apiserver")
}
