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
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meshinit/meshinit/internal/poll"
)

// Cluster is a running local cluster.
type Cluster struct {
	opts   Options
	rec    *record
	reused bool
}

// Up starts the cluster Options describe and waits until it is ready for
// pods: node Ready, ServiceAccounts and Services working. If that cluster
// already runs and is healthy, Up returns it as it is; if a previous one is
// left half up or broken, Up tears it down first. Up must run as root.
//
// If Up fails, it tears down what it started, keeping the logs in a
// directory its error names.
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	o := &opts
	if os.Geteuid() != 0 {
		return nil, errors.New("cluster: Up needs root (it runs a kubelet, containerd and kube-proxy)")
	}
	release, err := lock(ctx, o)
	if err != nil {
		return nil, err
	}
	defer release()

	rec, err := load(o)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if rec != nil {
		if healthy(ctx, rec) {
			if err := sameOptions(rec.Options, *o); err != nil {
				return nil, err
			}
			o.Logf("cluster %s already running and healthy: reusing it", o.Name)
			rec.Options.Logf = o.Logf
			return &Cluster{opts: rec.Options, rec: rec, reused: true}, nil
		}
		o.Logf("cluster %s in %s is not healthy: tearing it down first", o.Name, o.StateDir)
		rec.Options.Logf = o.Logf
		if err := down(ctx, &rec.Options, rec); err != nil {
			return nil, fmt.Errorf("cluster: tear down the unhealthy cluster: %w", err)
		}
	} else if _, err := os.Stat(o.StateDir); err == nil {
		o.Logf("%s exists without a record of a cluster: removing it", o.StateDir)
		if err := down(ctx, o, nil); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}

	if err := preflight(ctx, o); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	began := time.Now()
	rec, err = up(ctx, o)
	if err != nil {
		logs := keepLogs(o)
		if derr := down(context.WithoutCancel(ctx), o, rec); derr != nil {
			err = errors.Join(err, fmt.Errorf("tear down after the failure: %w", derr))
		}
		return nil, fmt.Errorf("cluster: up: %w (logs kept in %s)", err, logs)
	}
	c := &Cluster{opts: *o, rec: rec}
	o.Logf("cluster %s ready in %.1fs", o.Name, time.Since(began).Seconds())
	return c, nil
}

// healthy says whether every recorded process still runs and the cluster
// answers as ready. A live cluster gets a minute to answer: on a loaded
// machine a request can time out, and tearing down a cluster that others
// use because of one slow answer would be worse than waiting.
func healthy(ctx context.Context, rec *record) bool {
	if !rec.Ready {
		return false
	}
	cs, err := newClient(&rec.Options)
	if err != nil {
		return false
	}
	dead := false
	err = poll.Until(ctx, pollInterval, time.Minute, func(ctx context.Context) error {
		if dead = slices.ContainsFunc(rec.Processes, func(p proc) bool { return !p.alive() }); dead {
			return nil // settled: not healthy
		}
		return ready(ctx, &rec.Options, cs)
	})
	return err == nil && !dead
}

// sameOptions refuses to reuse a running cluster that Up would not have
// started the same way.
func sameOptions(running, want Options) error {
	running.Logf, want.Logf = nil, nil
	running.Go, want.Go = "", "" // only used while starting
	if fmt.Sprint(running) != fmt.Sprint(want) {
		return fmt.Errorf("cluster: a cluster with other options runs in %s (run Down first):\nrunning: %+v\nwanted:  %+v",
			want.StateDir, running, want)
	}
	return nil
}

// Down stops the cluster Options describe, if any, and removes everything
// it made (see Cluster.Down). It is what `localcluster down` runs.
func Down(ctx context.Context, opts Options) error {
	if err := opts.setDefaults(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	o := &opts
	if os.Geteuid() != 0 {
		return errors.New("cluster: Down needs root")
	}
	release, err := lock(ctx, o)
	if err != nil {
		return err
	}
	defer release()
	rec, err := load(o)
	if err != nil {
		o.Logf("%v: tearing down what the options name", err)
	}
	if rec != nil {
		rec.Options.Logf = o.Logf
		o = &rec.Options
	}
	return down(ctx, o, rec)
}

// Down stops exactly the processes Up started (SIGTERM, then SIGKILL after
// 10 s), the pods' containers, and removes the cluster's iptables rules
// (`kube-proxy --cleanup`), bridge, address, mounts, state directory, and
// the kernel settings its components changed.
func (c *Cluster) Down(ctx context.Context) error { return Down(ctx, c.opts) }

// Kubeconfig is the path of the admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.opts.kubeconfig() }

// Options are the options the cluster runs with, defaults filled in.
func (c *Cluster) Options() Options { return c.opts }

// ContainerdSocket is the socket of the node's containerd.
func (c *Cluster) ContainerdSocket() string { return c.opts.containerdSocket() }

// Reused says whether Up found the cluster already running.
func (c *Cluster) Reused() bool { return c.reused }

// LoadImage imports an OCI archive into the cluster's containerd, where
// pods with imagePullPolicy Never find it by the name it was written with.
func (c *Cluster) LoadImage(ctx context.Context, archive string) error {
	_, err := run(ctx, "ctr", "--address", c.opts.containerdSocket(), "-n", "k8s.io", "images", "import", archive)
	if err != nil {
		return fmt.Errorf("cluster: load image: %w", err)
	}
	return nil
}

// Kubectl runs the cluster's kubectl with its kubeconfig and returns the
// standard output; a failure's error holds the standard error.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := c.KubectlCommand(ctx, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// KubectlCommand is the command Kubectl runs, for callers that need its
// standard input or streams.
func (c *Cluster) KubectlCommand(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, c.opts.bin("kubectl"), append([]string{"--kubeconfig", c.Kubeconfig()}, args...)...)
}

// keepLogs copies StateDir/logs to a fresh temporary directory, for a
// failed Up's error.
func keepLogs(o *Options) string {
	dir, err := os.MkdirTemp("", "meshinit-e2e-logs-")
	if err != nil {
		return "(nowhere: " + err.Error() + ")"
	}
	_ = filepath.WalkDir(o.path("logs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				_ = os.WriteFile(filepath.Join(dir, d.Name()), b, 0o644)
			}
		}
		return nil
	})
	return dir
}

// PID is the process ID of the running component named name
// ("kube-apiserver", ...), as Up recorded it: for benchmarks that read a
// component's CPU time.
func (c *Cluster) PID(name string) (int, error) {
	rec, err := load(&c.opts)
	if err != nil {
		return 0, err
	}
	p, ok := rec.find(name)
	if !ok {
		return 0, fmt.Errorf("the local cluster runs no %s", name)
	}
	return p.PID, nil
}
