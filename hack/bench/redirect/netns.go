//go:build linux

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

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// netnsDir is where `ip netns add` bind-mounts named namespaces.
const netnsDir = "/run/netns"

// nsPrefix starts every namespace this program creates; the pid after it
// lets a later run remove what a killed run left behind.
const nsPrefix = "meshinit-bench-"

// namespaces creates named network namespaces and removes every one of them
// in Close, whatever happened in between.
type namespaces struct {
	prefix  string // nsPrefix + pid + "-"
	node    string // the "node" side of every pod's veth pair
	created []string
	next    int
}

func newNamespaces(ctx context.Context) (*namespaces, error) {
	removeStale(ctx)
	ns := &namespaces{prefix: fmt.Sprintf("%s%d-", nsPrefix, os.Getpid())}
	ns.node = ns.prefix + "node"
	if err := ns.add(ctx, ns.node); err != nil {
		return ns, err
	}
	return ns, ipBatch(ctx, ns.node, "link set lo up")
}

// pod is a network namespace set up the way a CNI plugin leaves a pod: lo up,
// eth0 (one end of a veth pair whose other end is in the node namespace)
// with an address and a default route via the node.
type pod struct {
	name string
	ip   netip.Addr // eth0's address
	node netip.Addr // the node end's address, the default gateway
}

func (p pod) path() string { return filepath.Join(netnsDir, p.name) }

// newPod creates a fresh pod namespace. Each pod gets its own /30 and its own
// node-side interface name, so a pod being torn down asynchronously by the
// kernel never collides with the next one.
func (ns *namespaces) newPod(ctx context.Context, label string) (pod, error) {
	i := ns.next
	ns.next++
	if i >= 1<<14 {
		return pod{}, fmt.Errorf("more than %d pods: out of /30 subnets in 10.248.0.0/16", 1<<14)
	}
	base := netip.AddrFrom4([4]byte{10, 248, byte(i >> 6), byte(i&63) * 4})
	p := pod{name: fmt.Sprintf("%s%d-%s", ns.prefix, i, label), node: base.Next(), ip: base.Next().Next()}
	if err := ns.add(ctx, p.name); err != nil {
		return p, err
	}
	host := fmt.Sprintf("mb%d-%d", os.Getpid()%100000, i) // at most 15 bytes (IFNAMSIZ)
	if err := ipBatch(ctx, ns.node,
		fmt.Sprintf("link add %s type veth peer name eth0 netns %s", host, p.name),
		fmt.Sprintf("addr add %s/30 dev %s", p.node, host),
		fmt.Sprintf("link set %s up", host)); err != nil {
		return p, err
	}
	return p, ipBatch(ctx, p.name,
		"link set lo up",
		fmt.Sprintf("addr add %s/30 dev eth0", p.ip),
		"link set eth0 up",
		fmt.Sprintf("route add default via %s", p.node))
}

func (ns *namespaces) add(ctx context.Context, name string) error {
	if _, err := run(ctx, nil, "ip", "netns", "add", name); err != nil {
		return err
	}
	ns.created = append(ns.created, name)
	return nil
}

// remove deletes one pod's namespace now (its veth pair goes with it).
func (ns *namespaces) remove(p pod) error {
	for i, n := range ns.created {
		if n == p.name {
			ns.created = append(ns.created[:i], ns.created[i+1:]...)
			break
		}
	}
	_, err := run(context.Background(), nil, "ip", "netns", "del", p.name)
	return err
}

// Close deletes every namespace still present, the node last. It runs with a
// fresh context: it must work after the run's context was cancelled.
func (ns *namespaces) Close() error {
	var errs []string
	for i := len(ns.created) - 1; i >= 0; i-- {
		if _, err := run(context.Background(), nil, "ip", "netns", "del", ns.created[i]); err != nil {
			errs = append(errs, err.Error())
		}
	}
	ns.created = nil
	if len(errs) > 0 {
		return fmt.Errorf("removing network namespaces: %s", strings.Join(errs, "; "))
	}
	return nil
}

// removeStale deletes namespaces left by runs of this program that were
// killed before they could clean up (their pid no longer exists).
func removeStale(ctx context.Context) {
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), nsPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		if _, err := run(ctx, nil, "ip", "netns", "del", e.Name()); err == nil {
			fmt.Fprintf(os.Stderr, "removed network namespace %s left by an earlier run\n", e.Name())
		}
	}
}

// ipBatch runs ip commands in a namespace with one exec.
func ipBatch(ctx context.Context, ns string, cmds ...string) error {
	_, err := run(ctx, []byte(strings.Join(cmds, "\n")+"\n"), "ip", "-n", ns, "-batch", "-")
	return err
}

// run runs a program in this process's namespaces and returns its stdout.
func run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	return output(cmd, stdin)
}

func output(cmd *exec.Cmd, stdin []byte) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s: %w\n%s%s", strings.Join(cmd.Args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// inNetns runs f on an OS thread that has entered the network namespace at
// path. Processes started and sockets opened by f belong to that namespace.
// The thread is never given back to the Go scheduler: it exits with f's
// goroutine, so no other goroutine ever runs in the wrong namespace.
func inNetns(path string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // deliberately never unlocked
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			done <- fmt.Errorf("opening network namespace %s: %w", path, err)
			return
		}
		defer syscall.Close(fd)
		if _, _, errno := syscall.RawSyscall(sysSetns, uintptr(fd), syscall.CLONE_NEWNET, 0); errno != 0 {
			done <- fmt.Errorf("entering network namespace %s: %w", path, errno)
			return
		}
		done <- f()
	}()
	return <-done
}

// timeInNetns runs cmd inside the namespace and returns the wall time from
// starting the process to its exit, and its combined output.
func timeInNetns(path string, cmd *exec.Cmd) (time.Duration, []byte, error) {
	var d time.Duration
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := inNetns(path, func() error {
		start := time.Now()
		err := cmd.Run()
		d = time.Since(start)
		return err
	})
	if err != nil {
		err = fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	return d, out.Bytes(), err
}

// outputInNetns runs a program in the namespace and returns its stdout.
func outputInNetns(ctx context.Context, path string, name string, args ...string) ([]byte, error) {
	var out []byte
	err := inNetns(path, func() error {
		var err error
		out, err = run(ctx, nil, name, args...)
		return err
	})
	return out, err
}
