package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
		shimSockets := removeContainers(ctx, o, rec)
		keep(stopAll(named("kube-proxy", "containerd", "kube-apiserver")))
		keep(stopAll(named("etcd")))
		keep(stopAll(shimsOf(o.containerdSocket())))
		o.Logf("processes stopped (%.1fs)", time.Since(began).Seconds())
		if _, ok := rec.find("kube-proxy"); ok {
			_, err := run(ctx, o.bin("kube-proxy"), "--cleanup")
			keep(err)
		}
		for _, s := range shimSockets {
			keep(removeIfExists(s))
		}
	}
	keep(unmountAll(o.StateDir))
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
// (with kubelet stopped, nothing recreates them), so no container outlives
// the cluster. It returns the sockets of their shims, which live in
// containerd's fixed /run/containerd/s whatever the configuration says.
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
	if err != nil || len(ids) == 0 {
		return nil
	}
	tasks, _ := ctr("tasks", "ls", "-q")
	if len(tasks) > 0 {
		if _, err := ctr(append([]string{"tasks", "rm", "-f"}, tasks...)...); err != nil {
			o.Logf("removing containers: %v", err)
		}
	}
	var sockets []string
	for _, id := range ids {
		sockets = append(sockets, shimSocket(o.containerdSocket(), "k8s.io", id))
	}
	return sockets
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

// removeCNICache removes libcni's cache of the cluster's network
// (/var/lib/cni/results/<network>-<container>-<interface>): containerd
// offers no setting to move it.
func removeCNICache(o *Options) error {
	files, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", o.Name+"-*"))
	var errs []error
	for _, f := range files {
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

// removeCreated removes each path Up found absent, if only empty
// directories are left in it.
func removeCreated(paths []string) error {
	var errs []error
	for _, p := range paths {
		empty := true
		var dirs []string
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if !d.IsDir() {
				empty = false
				return filepath.SkipAll
			}
			dirs = append(dirs, q)
			return nil
		})
		if !empty {
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			errs = append(errs, removeIfExists(dirs[i]))
		}
	}
	return errors.Join(errs...)
}
