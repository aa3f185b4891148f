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

package cluster

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshinit/meshinit/internal/images"
	"github.com/meshinit/meshinit/internal/poll"
)

// podSucceeds waits for a run-to-completion pod to end and fails the test
// unless it succeeded, printing what tells why: the pod's description and
// logs, the Service rules kube-proxy wrote and the end of its log.
func podSucceeds(t *testing.T, ctx context.Context, c *Cluster, ns, name string) {
	t.Helper()
	var phase string
	err := poll.Until(ctx, time.Second, 90*time.Second, func(ctx context.Context) error {
		out, err := c.Kubectl(ctx, "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.phase}")
		if phase = strings.TrimSpace(out); err != nil || (phase != "Succeeded" && phase != "Failed") {
			return fmt.Errorf("pod %s/%s is %q (%v)", ns, name, phase, err)
		}
		return nil
	})
	if err == nil && phase == "Succeeded" {
		return
	}
	describe, _ := c.Kubectl(ctx, "-n", ns, "describe", "pod", name)
	logs, _ := c.Kubectl(ctx, "-n", ns, "logs", name)
	rules, _ := run(ctx, "iptables-save", "-t", "nat")
	t.Fatalf("pod %s/%s did not succeed (phase %q, %v)\n--- describe\n%s\n--- logs\n%s\n--- nat rules\n%s\n--- kube-proxy's log (end)\n%s",
		ns, name, phase, err, describe, logs, rules, tail(c.opts.logFile("kube-proxy"), 40))
}

// TestLocalCluster brings the local cluster up (or reuses a running one),
// runs pods from images built here, and tears it down, checking that
// nothing is left. It needs root, `make tools-cluster` and
// `hack/install-debian-packages.sh --cluster`; it skips, saying why,
// without them.
func TestLocalCluster(t *testing.T) {
	opts := Options{Logf: t.Logf}
	skipUnlessRunnable(t, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()

	began := time.Now()
	c, err := Up(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	upTime := time.Since(began)
	owned := !c.Reused()
	t.Logf("timing: up %.1fs (%s)", upTime.Seconds(), map[bool]string{true: "cold: started here", false: "warm: already running"}[owned])
	downed := false
	if owned {
		t.Cleanup(func() {
			if !downed {
				if err := c.Down(context.Background()); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}
		})
	}
	kubectl := func(t *testing.T, args ...string) string {
		t.Helper()
		out, err := c.Kubectl(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}

	t.Run("node Ready", func(t *testing.T) {
		got := kubectl(t, "get", "node", c.Options().Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if got != "True" {
			t.Errorf("node Ready = %q", got)
		}
		if v := kubectl(t, "get", "node", c.Options().Name, "-o", "jsonpath={.status.nodeInfo.kubeletVersion}"); v != KubernetesVersion {
			t.Errorf("kubelet version %q, want %s", v, KubernetesVersion)
		}
	})

	// An image built here, loaded without a registry: the test server,
	// which is also a client with -dial.
	server := "localhost/meshinit-e2e/testserver:test"
	archive := filepath.Join(t.TempDir(), "testserver.oci.tar")
	if err := images.BuildGoImage(ctx, images.GoImage{Package: "github.com/meshinit/meshinit/internal/testproxy/cmd/testserver"},
		archive, images.GoImageOptions{Ref: server}); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("cluster-test-%d", time.Now().UnixNano()%1e6)
	kubectl(t, "create", "namespace", ns)
	if !owned {
		t.Cleanup(func() { _, _ = c.Kubectl(context.Background(), "delete", "namespace", ns, "--wait=false") })
	}

	var clusterIP string
	t.Run("pod from a loaded image runs", func(t *testing.T) {
		kubectl(t, "-n", ns, "run", "server", "--image", server, "--image-pull-policy", "Never",
			"--port", "8080", "--", "-listen", ":8080", "-name", "server")
		kubectl(t, "-n", ns, "wait", "pod/server", "--for", "condition=Ready", "--timeout", "90s")
		kubectl(t, "-n", ns, "expose", "pod", "server", "--port", "80", "--target-port", "8080")
		clusterIP = kubectl(t, "-n", ns, "get", "service", "server", "-o", "jsonpath={.spec.clusterIP}")
	})
	if clusterIP == "" {
		t.FailNow()
	}

	t.Run("another pod reaches it through its Service", func(t *testing.T) {
		kubectl(t, "-n", ns, "run", "client", "--image", server, "--image-pull-policy", "Never", "--restart", "Never",
			"--", "-dial", clusterIP+":80", "-timeout", "60s")
		podSucceeds(t, ctx, c, ns, "client")
		if got := strings.TrimSpace(kubectl(t, "-n", ns, "logs", "client")); got != "server" {
			t.Errorf("client's output %q, want the server's name", got)
		}
	})

	t.Run("the host reaches the Service (as the API server reaches webhooks)", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", clusterIP+":80", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "server") {
			t.Errorf("read %q, %v; want a line from the server", line, err)
		}
	})

	t.Run("kubectl logs", func(t *testing.T) {
		if got := kubectl(t, "-n", ns, "logs", "server"); !strings.Contains(got, "server listening on") {
			t.Errorf("server's logs: %q", got)
		}
	})

	t.Run("kubectl exec", func(t *testing.T) {
		// The usage goes to standard error, exit status 0.
		out, err := c.KubectlCommand(ctx, "-n", ns, "exec", "server", "--", "/usr/local/bin/testserver", "-h").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-listen") {
			t.Errorf("exec /usr/local/bin/testserver -h: %q, %v; want its usage", out, err)
		}
	})

	t.Run("a pod reaches the API server through the kubernetes Service", func(t *testing.T) {
		api := c.Options().ServiceCIDR.Addr().Next().String() + ":443"
		kubectl(t, "-n", ns, "run", "api-client", "--image", server, "--image-pull-policy", "Never", "--restart", "Never",
			"--", "-dial", api, "-connect", "-timeout", "60s")
		podSucceeds(t, ctx, c, ns, "api-client")
	})

	t.Run("Up again reuses it", func(t *testing.T) {
		began := time.Now()
		again, err := Up(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("timing: up again %.2fs", time.Since(began).Seconds())
		if !again.Reused() || !slices.Equal(again.rec.Processes, c.rec.Processes) {
			t.Errorf("Up again started a new cluster: reused=%v, processes %v, were %v", again.Reused(), again.rec.Processes, c.rec.Processes)
		}
	})

	if !owned {
		t.Log("the cluster ran before this test: left running, Down not tested")
		return
	}
	t.Run("Down leaves nothing", func(t *testing.T) {
		downed = true
		downLeavesNothing(t, ctx, c)
	})

	t.Run("Down after containerd died leaves nothing either", func(t *testing.T) {
		// containerd and the shims gone, the pods' processes live on: Down
		// finds them through runc's state instead.
		c, err := Up(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		downed := false
		t.Cleanup(func() {
			if !downed {
				_ = c.Down(context.Background())
			}
		})
		if _, err := c.Kubectl(ctx, "run", "p", "--image", c.Options().SandboxImage, "--image-pull-policy", "Never"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Kubectl(ctx, "wait", "pod/p", "--for", "condition=Ready", "--timeout", "90s"); err != nil {
			t.Fatal(err)
		}
		var pods []proc
		tasks, err := run(ctx, "ctr", "--address", c.ContainerdSocket(), "-n", "k8s.io", "tasks", "ls")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(tasks), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] != "TASK" {
				pid, err := strconv.Atoi(f[1])
				if err != nil {
					t.Fatal(err)
				}
				start, err := startTime(pid)
				if err != nil {
					t.Fatal(err)
				}
				pods = append(pods, proc{Name: "task " + f[0], PID: pid, Start: start})
			}
		}
		if len(pods) != 2 {
			t.Fatalf("pod p's tasks (sandbox and container): %v, want 2", pods)
		}
		containerd, _ := c.rec.find("containerd")
		if err := syscall.Kill(containerd.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		downed = true
		downLeavesNothing(t, ctx, c)
		for _, p := range pods {
			if p.alive() {
				t.Errorf("%s (pid %d) still runs", p.Name, p.PID)
			}
		}
	})
}

// downLeavesNothing takes c down and checks that none of its processes,
// its address, bridge, state, iptables chains, kernel settings or the
// paths it created are left.
func downLeavesNothing(t *testing.T, ctx context.Context, c *Cluster) {
	t.Helper()
	o := c.Options()
	rec := c.rec
	began := time.Now()
	if err := c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("timing: down %.1fs", time.Since(began).Seconds())
	for _, p := range rec.Processes {
		if p.alive() {
			t.Errorf("%s (pid %d) still runs", p.Name, p.PID)
		}
	}
	if left := processesNaming(o.StateDir); len(left) > 0 {
		t.Errorf("processes naming %s still run: %v", o.StateDir, left)
	}
	if ok, err := hasAddress(ctx, &o); ok || err != nil {
		t.Errorf("address %s still on lo (%v)", o.Address, err)
	}
	if hasLink(o.Bridge) {
		t.Errorf("bridge %s still exists", o.Bridge)
	}
	if _, err := os.Stat(o.StateDir); err == nil {
		t.Errorf("%s still exists", o.StateDir)
	}
	if chains, err := kubeChains(ctx); err != nil || len(chains) > 0 {
		t.Errorf("Kubernetes iptables chains left: %v (%v)", chains, err)
	}
	if now := readSysctls(); !maps.Equal(now, rec.Sysctls) {
		t.Errorf("kernel settings not restored: now %v, before %v", now, rec.Sysctls)
	}
	for _, p := range rec.Created {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, created by the cluster, still exists", p)
		}
	}
}

func skipUnlessRunnable(t *testing.T, opts Options) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the local cluster needs root")
	}
	if err := opts.setDefaults(); err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, b := range binaries {
		if _, err := os.Stat(opts.bin(b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		t.Skipf("skipped: %s missing in %s (run `make tools-cluster`)", strings.Join(missing, ", "), opts.BinDir)
	}
	if _, err := os.Stat("/usr/bin/containerd"); err != nil {
		t.Skip("skipped: containerd is not installed (run `hack/install-debian-packages.sh --cluster`)")
	}
}

// processesNaming lists the processes whose command line mentions s.
func processesNaming(s string) []string {
	var found []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) && d.Name() != fmt.Sprint(os.Getpid()) {
			found = append(found, d.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}
