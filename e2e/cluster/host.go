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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/meshinit/meshinit/redirect"
)

// What the cluster changes on the machine outside StateDir, and how Down
// undoes it: the address on lo, the bridge, iptables chains, kernel
// settings, mounts, and a few well-known directories.

// run runs a host command, returning its combined output in the error.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

func hasAddress(ctx context.Context, o *Options) (bool, error) {
	out, err := run(ctx, "ip", "-4", "-o", "addr", "show", "dev", "lo")
	return bytes.Contains(out, []byte(" "+o.Address.String()+"/32 ")), err
}

func addAddress(ctx context.Context, o *Options) error {
	if ok, err := hasAddress(ctx, o); ok || err != nil {
		return err
	}
	_, err := run(ctx, "ip", "addr", "add", o.Address.String()+"/32", "dev", "lo")
	return err
}

func removeAddress(ctx context.Context, o *Options) error {
	if ok, err := hasAddress(ctx, o); !ok || err != nil {
		return err
	}
	_, err := run(ctx, "ip", "addr", "del", o.Address.String()+"/32", "dev", "lo")
	return err
}

func hasLink(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

func removeBridge(ctx context.Context, o *Options) error {
	if !hasLink(o.Bridge) {
		return nil
	}
	_, err := run(ctx, "ip", "link", "del", o.Bridge)
	return err
}

// kubePrefix begins the name of every chain Kubernetes' components make.
const kubePrefix = "KUBE-"

// iptablesSaves are the programs that list every iptables backend and
// family; kube-proxy uses the `iptables` alternative (nft on Debian 12).
var iptablesSaves = []string{"iptables-nft-save", "ip6tables-nft-save", "iptables-legacy-save", "ip6tables-legacy-save"}

// kubeChains lists the chains named KUBE-* in every backend and family, as
// "<program> <table> <chain>". Kubernetes' chain names are fixed, so these
// belong to whichever node runs on this machine; Up refuses to start next
// to another one.
func kubeChains(ctx context.Context) ([]string, error) {
	var chains []string
	for _, save := range iptablesSaves {
		if _, err := exec.LookPath(save); err != nil {
			continue
		}
		out, err := run(ctx, save)
		if err != nil {
			return nil, err
		}
		for _, l := range redirect.ParseSave(string(out)) {
			if l.Rule == "" && strings.HasPrefix(l.Chain, kubePrefix) {
				chains = append(chains, save+" "+l.Table+" "+l.Chain)
			}
		}
	}
	return chains, nil
}

// removeKubeChains removes every KUBE-* chain, and the rules of other
// chains that jump to one, in every backend and family, each table in one
// atomic iptables-restore.
func removeKubeChains(ctx context.Context) error {
	var errs []error
	for _, save := range iptablesSaves {
		if _, err := exec.LookPath(save); err != nil {
			continue
		}
		out, err := run(ctx, save)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		script := kubeChainsRemoval(string(out))
		if script == "" {
			continue
		}
		restore := strings.TrimSuffix(save, "-save") + "-restore"
		cmd := exec.CommandContext(ctx, restore, "--noflush")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s\n%s", restore, err, out, script))
		}
	}
	return errors.Join(errs...)
}

// kubeChainsRemoval turns iptables-save output into the iptables-restore
// script that deletes the KUBE-* chains and the jumps to them.
func kubeChainsRemoval(save string) string {
	var tables []string
	chains, jumps := map[string][]string{}, map[string][]string{}
	for _, l := range redirect.ParseSave(save) {
		switch {
		case l.Rule == "" && strings.HasPrefix(l.Chain, kubePrefix):
			if !slices.Contains(tables, l.Table) {
				tables = append(tables, l.Table)
			}
			chains[l.Table] = append(chains[l.Table], l.Chain)
		case l.Rule != "" && !strings.HasPrefix(l.Chain, kubePrefix) && strings.HasPrefix(l.Target, kubePrefix):
			jumps[l.Table] = append(jumps[l.Table], "-D"+strings.TrimPrefix(l.Rule, "-A"))
		}
	}
	var script strings.Builder
	for _, t := range tables {
		script.WriteString("*" + t + "\n")
		for _, j := range jumps[t] {
			script.WriteString(j + "\n")
		}
		for _, c := range chains[t] {
			script.WriteString("-F " + c + "\n")
		}
		for _, c := range chains[t] {
			script.WriteString("-X " + c + "\n")
		}
		script.WriteString("COMMIT\n")
	}
	return script.String()
}

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// podCgroupParents are the cgroups containerd puts pods' containers in,
// one per hierarchy: without QoS cgroups (off, see kubeletConfig) the
// kubelet gives no parent and containerd uses /k8s.io/<container id>.
func podCgroupParents() []string {
	var parents []string
	hierarchies, _ := os.ReadDir(cgroupRoot)
	for _, h := range hierarchies {
		if h.IsDir() {
			parents = append(parents, filepath.Join(cgroupRoot, h.Name(), "k8s.io"))
		}
	}
	return parents
}

// removePodCgroups removes the cgroups of container id (runc removes them
// when a container is deleted; these are what a killed shim left).
func removePodCgroups(id string) error {
	var errs []error
	for _, parent := range podCgroupParents() {
		if err := os.Remove(filepath.Join(parent, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sysctls the components may change: the bridge plugin turns on
// forwarding; the kubelet sets its "kernel tunables" (vm.overcommit_memory,
// kernel.panic, ...). kube-proxy is told to leave conntrack and
// route_localnet alone, which is checked with the rest.
var sysctls = []string{
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/forwarding",
	"net/ipv4/conf/all/route_localnet",
	"net/ipv6/conf/all/forwarding",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

func readSysctls() map[string]string {
	values := map[string]string{}
	for _, s := range sysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", s)); err == nil {
			values[s] = strings.TrimSpace(string(b))
		}
	}
	return values
}

// restoreSysctls writes back every saved value that changed.
func restoreSysctls(saved map[string]string) error {
	var errs []error
	now := readSysctls()
	for _, s := range sysctls {
		v, ok := saved[s]
		if !ok || now[s] == v {
			continue
		}
		if err := os.WriteFile(filepath.Join("/proc/sys", s), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s=%s: %w", s, v, err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var mounts []string
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll detaches every mount at or below dir (pods' volumes, network
// namespaces, shm, container root file systems).
func unmountAll(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range mounts {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}
