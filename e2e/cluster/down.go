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
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// down stops what rec records and removes everything the cluster made.
// Without a record (none was written, or it is unreadable) it removes what
// the options alone name: the bridge, the address and StateDir.
func down(ctx context.Context, o *Options, rec *record) error {
	began := time.Now()
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if rec != nil {
		named := func(names ...string) []proc {
			var ps []proc
			for _, n := range names {
				if p, ok := rec.find(n); ok {
					ps = append(ps, p)
				}
			}
			return ps
		}
		// Nothing may start or restart pods while they are removed.
		keep(stopAll(named("kube-controller-manager", "kube-scheduler", "kubelet")))
		containers := removeContainers(ctx, o, rec)
		keep(stopAll(named("kube-proxy", "containerd", "kube-apiserver")))
		keep(stopAll(named("etcd")))
		keep(stopAll(shimsOf(o.containerdSocket())))
		containers = append(containers, killOrphans(ctx, o)...)
		o.Logf("processes stopped (%.1fs)", time.Since(began).Seconds())
		if _, ok := rec.find("kube-proxy"); ok {
			_, err := run(ctx, o.bin("kube-proxy"), "--cleanup")
			keep(err)
			// What --cleanup leaves: KUBE-FIREWALL, which kube-proxy
			// shares with kubelets. Up saw no KUBE-* chain before.
			keep(removeKubeChains(ctx))
			o.Logf("iptables rules removed (%.1fs)", time.Since(began).Seconds())
		}
		for _, id := range containers {
			keep(removeIfExists(shimSocket(o.containerdSocket(), "k8s.io", id)))
			keep(removePodCgroups(id))
		}
	}
	keep(unmountAll(o.StateDir))
	o.Logf("mounts removed (%.1fs)", time.Since(began).Seconds())
	keep(removeBridge(ctx, o))
	keep(removeAddress(ctx, o))
	keep(removeCNICache(o))
	keep(removeContainerLogLinks(o))
	if rec != nil {
		keep(removeCreated(rec.Created))
		keep(restoreSysctls(rec.Sysctls))
	}
	keep(os.RemoveAll(o.StateDir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: down: %w", err)
	}
	o.Logf("cluster %s down in %.1fs", o.Name, time.Since(began).Seconds())
	return nil
}

// removeContainers force-deletes every task in the cluster's containerd
// (with the kubelet stopped, nothing recreates them): the pods' containers
// first, then their sandboxes, so no container outlives the cluster. It
// returns the ids of every container containerd knew.
func removeContainers(ctx context.Context, o *Options, rec *record) []string {
	p, ok := rec.find("containerd")
	if !ok || !p.alive() {
		return nil
	}
	ctr := func(args ...string) ([]string, error) {
		out, err := run(ctx, "ctr", append([]string{"--address", o.containerdSocket(), "-n", "k8s.io"}, args...)...)
		return strings.Fields(string(out)), err
	}
	ids, err := ctr("containers", "ls", "-q")
	if err != nil {
		o.Logf("listing containers: %v", err)
		return nil
	}
	sandboxes, _ := ctr("containers", "ls", "-q", `labels."io.cri-containerd.kind"==sandbox`)
	tasks, _ := ctr("tasks", "ls", "-q")
	slices.SortStableFunc(tasks, func(a, b string) int {
		return cmp.Compare(b2i(slices.Contains(sandboxes, a)), b2i(slices.Contains(sandboxes, b)))
	})
	for _, id := range tasks {
		// containerd's CRI plugin deletes the task itself once it sees it
		// exit, and may be first: then ctr says "not found".
		if _, err := ctr("tasks", "rm", "-f", id); err != nil && !strings.Contains(err.Error(), "not found") {
			o.Logf("removing container %s: %v", id, err)
		}
	}
	return ids
}

// killOrphans force-deletes, through runc's state under StateDir, the
// containers that outlived containerd and their shims (containerd died
// before Down, so removeContainers found none to remove) and returns their
// ids. With containerd alive to the end there are none.
func killOrphans(ctx context.Context, o *Options) []string {
	root := o.path("containerd", "runc", "k8s.io")
	out, err := run(ctx, "runc", "--root", root, "list", "-q")
	if err != nil {
		o.Logf("listing containers left in %s: %v", root, err)
		return nil
	}
	ids := strings.Fields(string(out))
	for _, id := range ids {
		if _, err := run(ctx, "runc", "--root", root, "delete", "--force", id); err != nil {
			o.Logf("removing container %s left by containerd: %v", id, err)
		}
	}
	if len(ids) > 0 {
		o.Logf("%d containers outlived containerd: removed", len(ids))
	}
	return ids
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shimSocket is where containerd 1.6 puts the socket of the shim of
// container id (runtime/v2/shim.SocketAddress).
func shimSocket(containerdSocket, namespace, id string) string {
	sum := sha256.Sum256([]byte(filepath.Join(containerdSocket, namespace, id)))
	return fmt.Sprintf("/run/containerd/s/%x", sum)
}

func removeIfExists(file string) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// cniResults is libcni's cache (<network>-<container>-<interface>):
// containerd offers no setting to move it.
const cniResults = "/var/lib/cni/results"

// removeCNICache removes libcni's cache of the cluster's network and the
// loopback results of the same sandboxes, found by the ids in the
// network's results: containerd may be gone and unable to list them (a
// Down interrupted after stopping it).
func removeCNICache(o *Options) error {
	files, _ := filepath.Glob(filepath.Join(cniResults, o.Name+"-*"))
	var errs []error
	for _, f := range files {
		// <network>-<64 hex digit container id>-<interface>
		rest := strings.TrimPrefix(filepath.Base(f), o.Name+"-")
		if id, _, ok := strings.Cut(rest, "-"); ok && len(id) == 64 {
			errs = append(errs, removeIfExists(filepath.Join(cniResults, "cni-loopback-"+id+"-lo")))
		}
		errs = append(errs, removeIfExists(f))
	}
	return errors.Join(errs...)
}

// removeContainerLogLinks removes the kubelet's links in its fixed
// /var/log/containers to the cluster's pod logs.
func removeContainerLogLinks(o *Options) error {
	entries, _ := os.ReadDir("/var/log/containers")
	var errs []error
	for _, e := range entries {
		link := filepath.Join("/var/log/containers", e.Name())
		if target, err := os.Readlink(link); err == nil && strings.HasPrefix(target, o.StateDir+"/") {
			errs = append(errs, removeIfExists(link))
		}
	}
	return errors.Join(errs...)
}

// removeCreated removes each path Up found absent, if only directories,
// sockets, fifos and the kubelet's device plugin checkpoint are left in it (a
// cgroup, whose files are the kernel's, if it has no child left).
func removeCreated(paths []string) error {
	var errs []error
	for _, p := range paths {
		if strings.HasPrefix(p, cgroupRoot+"/") {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		var remove []string
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && d.Type()&(fs.ModeSocket|fs.ModeNamedPipe) == 0 && d.Name() != "kubelet_internal_checkpoint" {
				return fmt.Errorf("%s holds %s, not made by the cluster", p, q)
			}
			remove = append(remove, q)
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := len(remove) - 1; i >= 0; i-- {
			errs = append(errs, removeIfExists(remove[i]))
		}
	}
	return errors.Join(errs...)
}
