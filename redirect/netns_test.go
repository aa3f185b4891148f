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

package redirect_test

// Real-kernel tests: each runs the real redirector binary inside a fresh
// network namespace ("pod") joined by a veth pair to a second one ("peer"),
// and checks where real TCP connections arrive, on both iptables backends.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/internal/testproxy"
)

var redirectorBin string

func TestMain(m *testing.M) {
	if ids := os.Getenv(asContainerEnv); ids != "" {
		execAsContainer(ids, os.Args[1:])
	}
	if spec := os.Getenv(clientEnv); spec != "" {
		os.Exit(clientMain(spec))
	}
	if spec := os.Getenv(processEnv); spec != "" {
		execAsProcess(spec)
	}
	if spec := os.Getenv(identityClientEnv); spec != "" {
		os.Exit(identityClient(spec))
	}
	os.Exit(func() int {
		if os.Geteuid() == 0 {
			dir, err := os.MkdirTemp("", "redirector")
			if err != nil {
				panic(err)
			}
			defer os.RemoveAll(dir)
			redirectorBin = filepath.Join(dir, "redirector")
			out, err := exec.Command("go", "build", "-o", redirectorBin, "github.com/meshinit/meshinit/initimage/cmd/redirector").CombinedOutput()
			if err != nil {
				panic(fmt.Sprintf("building redirector: %v\n%s", err, out))
			}
		}
		return m.Run()
	}())
}

// pod is a pod-like network namespace with a veth to a peer namespace.
type pod struct {
	t               *testing.T
	name, peer      string
	podNS, peerNS   netns.NsHandle
	podIP, peerIP   string // IPv4
	peerIP2         string // a second peer address, for CIDR tests
	podIP6, peerIP6 string
	peerIP6b        string // a second peer IPv6 address
	veth            string // the pod's end of the veth to the peer
	mode            string // iptables backend under test
}

// subnet numbers each pod's addresses (10.231.<subnet>.0/24 and
// fd31:<subnet>::/64), 1 to 250 and round again: every pod is a namespace
// pair of its own, so a number may come back once its pod is gone, and
// `go test -count=N` makes far more than 250 pods.
var subnet = 0

func newPod(t *testing.T, mode string) *pod {
	t.Helper()
	testkit.NeedRoot(t, "to create network namespaces and program iptables")
	subnet = subnet%250 + 1
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	id := hex.EncodeToString(suffix)
	p := &pod{t: t, name: "mi-pod-" + id, peer: "mi-peer-" + id, mode: mode,
		podIP: fmt.Sprintf("10.231.%d.2", subnet), peerIP: fmt.Sprintf("10.231.%d.1", subnet), peerIP2: fmt.Sprintf("10.231.%d.3", subnet),
		podIP6: fmt.Sprintf("fd31:%d::2", subnet), peerIP6: fmt.Sprintf("fd31:%d::1", subnet), peerIP6b: fmt.Sprintf("fd31:%d::3", subnet)}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", p.name).Run()
		exec.Command("ip", "netns", "del", p.peer).Run()
	})
	veth, peerVeth := "mp"+id, "mq"+id
	p.veth = veth
	for _, args := range [][]string{
		{"netns", "add", p.name},
		{"netns", "add", p.peer},
		{"link", "add", veth, "netns", p.name, "type", "veth", "peer", "name", peerVeth, "netns", p.peer},
		{"-n", p.name, "addr", "add", p.podIP + "/24", "dev", veth},
		{"-n", p.peer, "addr", "add", p.peerIP + "/24", "dev", peerVeth},
		{"-n", p.peer, "addr", "add", p.peerIP2 + "/24", "dev", peerVeth},
		{"-n", p.name, "addr", "add", p.podIP6 + "/64", "dev", veth, "nodad"},
		{"-n", p.peer, "addr", "add", p.peerIP6 + "/64", "dev", peerVeth, "nodad"},
		{"-n", p.peer, "addr", "add", p.peerIP6b + "/64", "dev", peerVeth, "nodad"},
		{"-n", p.name, "link", "set", veth, "up"},
		{"-n", p.peer, "link", "set", peerVeth, "up"},
		{"-n", p.name, "link", "set", "lo", "up"},
		{"-n", p.peer, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	var err error
	if p.podNS, err = netns.GetFromName(p.name); err != nil {
		t.Fatal(err)
	}
	if p.peerNS, err = netns.GetFromName(p.peer); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.podNS.Close(); p.peerNS.Close() })
	return p
}

// inNS runs fn on a thread switched into ns with the given effective
// UID/GID (root when 0). The thread is never unlocked, so Go discards it
// afterwards instead of reusing a thread in the wrong namespace.
func inNS[T any](ns netns.NsHandle, uid, gid int, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var zero T
		if err := netns.Set(ns); err != nil {
			ch <- result{zero, err}
			return
		}
		if gid != 0 {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
				ch <- result{zero, e}
				return
			}
		}
		if uid != 0 {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
				ch <- result{zero, e}
				return
			}
		}
		v, err := fn()
		ch <- result{v, err}
	}()
	r := <-ch
	return r.v, r.err
}

// serve starts testproxy servers named name on port inside ns, one IPv4 and
// one IPv6-only socket, so each reads its own family's original destination.
func (p *pod) serve(ns netns.NsHandle, port int, name string) {
	p.t.Helper()
	for _, addr := range []string{fmt.Sprintf("0.0.0.0:%d", port), fmt.Sprintf("[::]:%d", port)} {
		network := "tcp4"
		if strings.HasPrefix(addr, "[") {
			network = "tcp6"
		}
		l, err := inNS(ns, 0, 0, func() (net.Listener, error) { return net.Listen(network, addr) })
		if err != nil {
			p.t.Fatalf("listen %s: %v", addr, err)
		}
		p.t.Cleanup(func() { l.Close() })
		go testproxy.Serve(l, name)
	}
}

// startServers runs the pod's proxy and app listeners and the peer's servers.
func (p *pod) startServers(appPorts ...int) {
	p.serve(p.podNS, 15001, "proxy-outbound")
	p.serve(p.podNS, 15006, "proxy-inbound")
	for _, port := range appPorts {
		p.serve(p.podNS, port, fmt.Sprintf("app-%d", port))
	}
	for _, port := range []int{9090, 9091} {
		p.serve(p.peerNS, port, fmt.Sprintf("peer-%d", port))
	}
}

// ask connects from ns as uid/gid to addr and returns the server's answer.
func (p *pod) ask(ns netns.NsHandle, uid, gid int, addr string) string {
	p.t.Helper()
	line, err := inNS(ns, uid, gid, func() (string, error) {
		return testproxy.Ask(func() (net.Conn, error) { return net.Dial("tcp", addr) })
	})
	if err != nil {
		p.t.Fatalf("connecting to %s as uid %d: %v", addr, uid, err)
	}
	return line
}

// redirector runs the redirector binary inside the pod namespace with extra
// environment variables.
func (p *pod) redirector(env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(context.Background(), "ip", append([]string{"netns", "exec", p.name, redirectorBin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// redirectorCmd runs an arbitrary command line inside the pod namespace.
func (p *pod) redirectorCmd(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", p.name}, args...)...).CombinedOutput()
	return string(out), err
}

func (p *pod) mustApply(args ...string) string {
	p.t.Helper()
	out, err := p.redirector(nil, append([]string{"apply", "--iptables-mode=" + p.mode}, args...)...)
	if err != nil {
		p.t.Fatalf("redirector apply %v: %v\n%s", args, err, out)
	}
	return out
}

// save returns one family's nat table (or all tables with table "")
// of the backend under test, without comment lines and counters: the
// rules and chains as meshinit and the tests wrote them, none of what the
// kernel changes by itself. iptables-save without -c still prints each
// built-in chain's policy counters (":OUTPUT ACCEPT [1:96]"), and the
// kernel sends packets of its own in a new namespace (IPv6 router
// solicitations, MLD reports), so they differ between two reads.
func (p *pod) save(ipv6 bool, table string) string {
	p.t.Helper()
	bin := "iptables-" + p.mode + "-save"
	if ipv6 {
		bin = "ip6tables-" + p.mode + "-save"
	}
	args := []string{"netns", "exec", p.name, bin}
	if table != "" {
		args = append(args, "-t", table)
	}
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	var lines []string
	for l := range strings.Lines(string(out)) {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, chainCounters.ReplaceAllString(strings.TrimRight(l, "\n"), "$1"))
		}
	}
	return strings.Join(lines, "\n")
}

// chainCounters matches a chain line of iptables-save (":CHAIN POLICY
// [packets:bytes]") up to its counters.
var chainCounters = regexp.MustCompile(`^(:\S+ \S+) \[\d+:\d+\]$`)

func (p *pod) iptables(ipv6 bool, args ...string) {
	p.t.Helper()
	bin := "iptables-" + p.mode
	if ipv6 {
		bin = "ip6tables-" + p.mode
	}
	if out, err := exec.Command("ip", append([]string{"netns", "exec", p.name, bin}, args...)...).CombinedOutput(); err != nil {
		p.t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
}

var backends = []string{"nft", "legacy"}

func expect(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: answered %q, want %q", what, got, want)
	}
}
