package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshinit/meshinit/e2e/cluster"
)

// localKubeconfig and localContainerd are where the local cluster
// (cluster.Options' default StateDir) keeps its kubeconfig and socket.
const (
	localKubeconfig = "/var/lib/meshinit-e2e/kubeconfig"
	localContainerd = "/var/lib/meshinit-e2e/containerd/containerd.sock"
)

// env is the cluster the tests run against.
type env struct {
	kubeconfig string
	kubectlBin string
	// containerd is the socket of the node's containerd, where images are
	// loaded.
	containerd string
}

// binDir is where `make tools-cluster` puts the cluster's binaries
// (cluster.Options.BinDir's default).
func binDir() string {
	cache := os.Getenv("MESHINIT_CACHE")
	if cache == "" {
		cache = "/var/cache/meshinit"
	}
	return filepath.Join(cache, "kubernetes-"+cluster.KubernetesVersion, "bin")
}

// setup returns the cluster KUBECONFIG names, or else brings up the local
// one, which it takes down when the test ends unless it was running before.
// It skips, saying why, when that cannot work here.
func setup(t testing.TB, ctx context.Context) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: loading images into the node's containerd (and the local cluster) needs root")
	}
	if kc := os.Getenv("KUBECONFIG"); kc != "" && kc != localKubeconfig {
		e := &env{kubeconfig: kc, kubectlBin: filepath.Join(binDir(), "kubectl"),
			containerd: os.Getenv("MESHINIT_E2E_CONTAINERD")}
		if _, err := os.Stat(e.kubectlBin); err != nil {
			if e.kubectlBin, err = exec.LookPath("kubectl"); err != nil {
				t.Skip("skipped: no kubectl (run `make tools-cluster`)")
			}
		}
		if e.containerd == "" {
			e.containerd = "/run/containerd/containerd.sock"
		}
		if _, err := os.Stat(e.containerd); err != nil {
			t.Skipf("skipped: KUBECONFIG=%s, but the images these tests build cannot be loaded: no containerd socket %s (set MESHINIT_E2E_CONTAINERD to the node's)", kc, e.containerd)
		}
		t.Logf("cluster: KUBECONFIG=%s, images loaded through %s", kc, e.containerd)
		return e
	}
	var missing []string
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"} {
		if _, err := os.Stat(filepath.Join(binDir(), b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		t.Skipf("skipped: %s missing in %s (run `make tools-cluster`)", strings.Join(missing, ", "), binDir())
	}
	for _, b := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("skipped: %s is not installed (run `hack/install-debian-packages.sh --cluster`)", b)
		}
	}
	began := time.Now()
	c, err := cluster.Up(ctx, cluster.Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("timing: cluster up %.1fs (reused: %v)", time.Since(began).Seconds(), c.Reused())
	if !c.Reused() {
		t.Cleanup(func() {
			began := time.Now()
			if err := c.Down(context.Background()); err != nil {
				t.Errorf("cluster down: %v", err)
			}
			t.Logf("timing: cluster down %.1fs", time.Since(began).Seconds())
		})
	}
	return &env{kubeconfig: c.Kubeconfig(), kubectlBin: filepath.Join(c.Options().BinDir, "kubectl"), containerd: localContainerd}
}

// kubectl runs kubectl with stdin (may be empty) and returns its standard
// output; a failure's error holds the standard error.
func (e *env) kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.kubectlBin, append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// must is kubectl that fails the test on error.
func (e *env) must(t testing.TB, ctx context.Context, args ...string) string {
	t.Helper()
	out, err := e.kubectl(ctx, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply applies manifests from stdin (server-side), failing the test on error.
func (e *env) apply(t testing.TB, ctx context.Context, manifests string, args ...string) string {
	t.Helper()
	out, err := e.kubectl(ctx, manifests, append([]string{"apply", "--server-side", "--force-conflicts", "--field-manager", "meshinit-e2e", "-f", "-"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadImage imports an OCI archive into the node's containerd.
func (e *env) loadImage(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", e.containerd, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w: %s", archive, err, out)
	}
	return nil
}

// eventually calls f every second until it returns nil or timeout passes,
// and returns its last error.
func eventually(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}
