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
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/meshinit/meshinit/internal/images"
	"github.com/meshinit/meshinit/internal/poll"
)

// hostPrograms are what Up needs from Debian's packages (see
// hack/install-debian-packages.sh --cluster).
var hostPrograms = []string{"/usr/bin/containerd", "/usr/bin/containerd-shim-runc-v2", "/usr/bin/ctr",
	"/usr/sbin/runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "/usr/lib/cni/loopback", "ip", "iptables", "iptables-save"}

// binaries are what Up needs in BinDir (`make tools-cluster`).
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"}

// globalPaths are directories outside StateDir that containerd, the CNI
// plugins or the kubelet create whatever their configuration says: shim
// sockets, libcni's cache, links to pod logs, the device plugin socket.
var globalPaths = []string{"/run/containerd", "/var/lib/cni", "/var/log/containers", "/var/lib/kubelet"}

// The timeouts of Up's waits are generous: on a machine whose cores are
// all busy (compiling, say) the API server alone can take minutes.

// up starts a cluster from nothing, once preflight passed. Its record is
// returned, even on failure, for Down.
func up(ctx context.Context, o *Options) (*record, error) {
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, err
	}
	rec := &record{Options: *o, Sysctls: readSysctls()}
	for _, p := range append(globalPaths, podCgroupParents()...) {
		if _, err := os.Lstat(p); err != nil {
			rec.Created = append(rec.Created, p)
		}
	}
	if err := rec.save(); err != nil {
		return nil, err
	}

	// The sandbox image builds while the control plane starts.
	pauseArchive := o.path("pause.oci.tar")
	pauseBuilt := make(chan error, 1)
	go func() {
		pauseBuilt <- images.BuildGoImage(ctx, images.GoImage{Package: "github.com/meshinit/meshinit/e2e/cmd/pause"},
			pauseArchive, images.GoImageOptions{Ref: o.SandboxImage, Go: o.Go})
	}()

	ca, err := writePKI(o)
	if err != nil {
		return rec, err
	}
	tokens := map[string]string{}
	for _, u := range tokenUsers {
		tokens[u] = newToken()
	}
	files, err := configFiles(o, ca, tokens)
	if err != nil {
		return rec, err
	}
	if err := writeFiles(files); err != nil {
		return rec, err
	}
	if err := addAddress(ctx, o); err != nil {
		return rec, err
	}
	o.Logf("address %s added to lo", o.Address)

	cs, err := newClient(o)
	if err != nil {
		return rec, err
	}
	s := starter{o: o, rec: rec}
	s.start(etcd(o))
	s.start(containerd(o))
	s.await(ctx, "etcd", 2*time.Minute, func(ctx context.Context) error {
		return httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", o.Ports.EtcdClient))
	})
	s.start(apiServer(o))
	s.await(ctx, "kube-apiserver", 5*time.Minute, func(ctx context.Context) error { return apiServerReady(ctx, cs) })
	s.start(controllerManager(o))
	s.start(scheduler(o))
	s.await(ctx, "containerd", 2*time.Minute, func(ctx context.Context) error {
		_, err := run(ctx, "ctr", "--address", o.containerdSocket(), "version")
		return err
	})
	if s.err == nil {
		began := time.Now()
		if s.err = <-pauseBuilt; s.err == nil {
			s.err = (&Cluster{opts: *o}).LoadImage(ctx, pauseArchive)
		}
		o.Logf("sandbox image %s built and loaded (%.1fs more)", o.SandboxImage, time.Since(began).Seconds())
	}
	s.start(kubelet(o))
	s.start(kubeProxy(o))
	s.await(ctx, "node Ready, default ServiceAccount, kube-proxy synced", 5*time.Minute, func(ctx context.Context) error {
		return ready(ctx, o, cs)
	})
	if s.err != nil {
		return rec, s.err
	}
	rec.Ready = true
	return rec, rec.save()
}

// starter starts components and awaits conditions until the first error,
// recording every process as soon as it runs.
type starter struct {
	o     *Options
	rec   *record
	err   error
	began time.Time
}

func (s *starter) start(c component) {
	if s.err != nil {
		return
	}
	if s.began.IsZero() {
		s.began = time.Now()
	}
	p, err := start(s.o, c)
	if err != nil {
		s.err = err
		return
	}
	s.rec.Processes = append(s.rec.Processes, p)
	s.err = s.rec.save()
}

// await polls cond until it returns nil, a started process exits, or
// timeout passes.
func (s *starter) await(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) error) {
	if s.err != nil {
		return
	}
	began := time.Now()
	err := poll.Until(ctx, pollInterval, timeout, func(ctx context.Context) error {
		err := cond(ctx)
		if err != nil && len(s.dead()) > 0 {
			return nil // settled: reported below
		}
		return err
	})
	if dead := s.dead(); len(dead) > 0 {
		var msgs []string
		for _, p := range dead {
			msgs = append(msgs, fmt.Sprintf("%s exited; the end of %s:\n%s", p.Name, s.o.logFile(p.Name), tail(s.o.logFile(p.Name), 15)))
		}
		s.err = fmt.Errorf("waiting for %s: %s", what, strings.Join(msgs, "\n"))
		return
	}
	if err != nil {
		s.err = fmt.Errorf("waiting for %s (%.0fs): %w", what, time.Since(began).Seconds(), err)
		return
	}
	s.o.Logf("%s: ready after %.1fs (%.1fs since the first start)", what, time.Since(began).Seconds(), time.Since(s.began).Seconds())
}

func (s *starter) dead() []proc {
	var dead []proc
	for _, p := range s.rec.Processes {
		if !p.alive() {
			dead = append(dead, p)
		}
	}
	return dead
}

// preflight checks what Up needs and what would collide with it, saying
// how to fix each problem.
func preflight(ctx context.Context, o *Options) error {
	var errs []error
	var missing []string
	for _, b := range binaries {
		if _, err := os.Stat(o.bin(b)); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing in %s: %s (run `make tools-cluster`)", o.BinDir, strings.Join(missing, ", ")))
	}
	missing = nil
	for _, p := range hostPrograms {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing: %s (run `hack/install-debian-packages.sh --cluster`)", strings.Join(missing, ", ")))
	}
	if chains, err := kubeChains(ctx); err != nil {
		errs = append(errs, err)
	} else if len(chains) > 0 {
		errs = append(errs, fmt.Errorf("iptables already holds Kubernetes chains (%s, ...): another node or kube-proxy runs on this machine, "+
			"and Kubernetes' chain names are fixed; stop it (or run `kube-proxy --cleanup` if it is gone)", chains[0]))
	}
	if hasLink(o.Bridge) {
		errs = append(errs, fmt.Errorf("network interface %s already exists (left by a cluster? `localcluster down` removes it)", o.Bridge))
	}
	if ok, err := hasAddress(ctx, o); err != nil {
		errs = append(errs, err)
	} else if ok {
		errs = append(errs, fmt.Errorf("address %s is already on lo (left by a cluster? `localcluster down` removes it)", o.Address))
	}
	for _, p := range o.Ports.list() {
		host := "127.0.0.1"
		if p.name == "APIServer" || p.name == "Kubelet" {
			host = "0.0.0.0" // Address is not up yet; any listener on the port collides.
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(p.port)))
		if err != nil {
			errs = append(errs, fmt.Errorf("port %d (Ports.%s) is taken: %w", p.port, p.name, err))
			continue
		}
		l.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	return nil
}
