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
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Ports of the behaviour check. Listeners answer with their own port, and the
// two proxy ports add the original destination (SO_ORIGINAL_DST), so the
// reply says where a connection really went.
const (
	outboundProxyPort = 15001
	inboundProxyPort  = 15006
	appPort           = 8080  // an ordinary application port: captured
	healthPort        = 15021 // one of -d 15090,15021,15020: never captured
	remotePort        = 9090  // a server outside the pod, in the node namespace
	appUID            = 1000
	proxyUID          = 1337
)

// check is one TCP connection and what it should reach.
type check struct {
	name string
	from string // "node" or "pod"
	uid  int    // the dialing process's UID and GID (pod side)
	to   func(p pod) netip.AddrPort
	// want is what the connection must reach; nil shows each tool's result
	// without judging it (the tools are known to differ there).
	want func(p pod) string
}

var checks = []check{
	{name: "inbound to an app port (node -> pod:8080)", from: "node",
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(p.ip, appPort) },
		want: func(p pod) string { return reply(inboundProxyPort, netip.AddrPortFrom(p.ip, appPort)) }},
	{name: "inbound to the proxy's health port (node -> pod:15021)", from: "node",
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(p.ip, healthPort) },
		want: func(p pod) string { return reply(healthPort, netip.AddrPort{}) }},
	{name: "outbound from an app, uid 1000 (pod -> node:9090)", from: "pod", uid: appUID,
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(p.node, remotePort) },
		want: func(p pod) string { return reply(outboundProxyPort, netip.AddrPortFrom(p.node, remotePort)) }},
	{name: "outbound from the proxy, uid 1337 (pod -> node:9090)", from: "pod", uid: proxyUID,
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(p.node, remotePort) },
		want: func(p pod) string { return reply(remotePort, netip.AddrPort{}) }},
	{name: "app to localhost, uid 1000 (pod -> 127.0.0.1:8080)", from: "pod", uid: appUID,
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), appPort) },
		want: func(p pod) string { return reply(appPort, netip.AddrPort{}) }},
	{name: "app to its own pod IP, uid 1000 (pod -> pod:8080)", from: "pod", uid: appUID,
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(p.ip, appPort) },
		want: func(p pod) string { return reply(appPort, netip.AddrPort{}) }},
	// Istio sends the proxy's own connections to its pod IP (over lo) to the
	// inbound port, so inbound policy applies to a pod calling itself through
	// a service; the result of each tool is shown as it is.
	{name: "proxy to its own pod IP, uid 1337 (pod -> pod:8080)", from: "pod", uid: proxyUID,
		to:   func(p pod) netip.AddrPort { return netip.AddrPortFrom(p.ip, appPort) },
		want: nil},
}

// reply is what the listener on port answers; orig is set for the proxies.
func reply(port int, orig netip.AddrPort) string {
	if orig.IsValid() {
		return fmt.Sprintf(":%d original-dst=%s", port, orig)
	}
	return fmt.Sprintf(":%d", port)
}

// compareBehaviour applies each tool once in its own fresh pod, runs the
// checks against it with real TCP connections, and prints a table and both
// nat tables. It fails when a tool fails a check with a fixed expectation.
func compareBehaviour(ctx context.Context, w io.Writer, nss *namespaces, tools []tool, verbose bool) error {
	results := make([][]string, len(tools))
	dumps := make([]natDump, len(tools))
	var failed []string
	for i, t := range tools {
		p, err := nss.newPod(ctx, t.name+"-check")
		if err != nil {
			return err
		}
		stop, err := startListeners(p, nss.node)
		if err != nil {
			return err
		}
		d, out, err := timeInNetns(p.path(), t.command(ctx))
		if err != nil {
			stop()
			return fmt.Errorf("%s: %w", t.name, err)
		}
		fmt.Fprintf(w, "first %s apply (cold, not counted): %s\n", t.name, ms(d))
		if len(out) > 0 && verbose {
			fmt.Fprintf(w, "%s output:\n%s\n", t.name, indent(string(out)))
		}
		for _, c := range checks {
			got := dial(ctx, nss, p, c)
			results[i] = append(results[i], got)
			if c.want != nil && got != c.want(p) {
				failed = append(failed, fmt.Sprintf("%s: %s: got %q, want %q", t.name, c.name, got, c.want(p)))
			}
		}
		stop()
		if dumps[i], err = natTables(ctx, p); err != nil {
			return err
		}
		if err := nss.remove(p); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nsame traffic behaviour? real TCP connections, one fresh pod per tool (replies: the port that\n"+
		"accepted the connection; the proxy ports add the original destination read with SO_ORIGINAL_DST):\n")
	fmt.Fprintf(w, "%-56s", "connection")
	for _, t := range tools {
		fmt.Fprintf(w, " %-36s", t.name)
	}
	fmt.Fprintln(w)
	for ci, c := range checks {
		fmt.Fprintf(w, "%-56s", c.name)
		same := true
		for ti := range tools {
			fmt.Fprintf(w, " %-36s", maskPod(results[ti][ci]))
			same = same && maskPod(results[ti][ci]) == maskPod(results[0][ci])
		}
		if !same {
			fmt.Fprint(w, " DIFFERENT")
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintf(w, "\nnat tables after apply (counters and iptables-save comments dropped; pod addresses differ per pod):\n")
	for i, t := range tools {
		fmt.Fprintf(w, "--- %s: %s\n", t.name, dumps[i].summary())
		fmt.Fprint(w, indent(dumps[i].String()))
	}
	if len(failed) > 0 {
		return fmt.Errorf("behaviour check failed:\n  %s", strings.Join(failed, "\n  "))
	}
	return nil
}

// maskPod replaces the per-pod 10.248.x.y addresses so the tools' columns
// compare equal when they behave the same.
var podAddr = regexp.MustCompile(`10\.248\.\d+\.(\d+)`)

func maskPod(s string) string {
	return podAddr.ReplaceAllStringFunc(s, func(a string) string {
		last, _ := strconv.Atoi(a[strings.LastIndexByte(a, '.')+1:])
		if last%4 == 1 {
			return "node"
		}
		return "pod"
	})
}

// startListeners opens the pod's proxy and app listeners and the node's
// remote server. Sockets stay in the namespace they were opened in.
func startListeners(p pod, node string) (stop func(), err error) {
	var ls []net.Listener
	stop = func() {
		for _, l := range ls {
			l.Close()
		}
	}
	listen := func(nsPath string, addr netip.AddrPort, proxy bool) error {
		return inNetns(nsPath, func() error {
			l, err := net.Listen("tcp4", addr.String())
			if err != nil {
				return err
			}
			ls = append(ls, l)
			go serve(l, int(addr.Port()), proxy)
			return nil
		})
	}
	any4 := netip.IPv4Unspecified()
	for _, l := range []struct {
		ns    string
		addr  netip.AddrPort
		proxy bool
	}{
		{p.path(), netip.AddrPortFrom(any4, inboundProxyPort), true},
		{p.path(), netip.AddrPortFrom(any4, outboundProxyPort), true},
		{p.path(), netip.AddrPortFrom(any4, appPort), false},
		{p.path(), netip.AddrPortFrom(any4, healthPort), false},
		{filepath.Join(netnsDir, node), netip.AddrPortFrom(p.node, remotePort), false},
	} {
		if err := listen(l.ns, l.addr, l.proxy); err != nil {
			stop()
			return nil, fmt.Errorf("listening on %s in %s: %w", l.addr, l.ns, err)
		}
	}
	return stop, nil
}

func serve(l net.Listener, port int, proxy bool) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		var orig netip.AddrPort
		if proxy {
			orig, err = originalDst(c.(*net.TCPConn))
			if err != nil {
				fmt.Fprintf(c, ":%d original-dst=error(%v)\n", port, err)
				c.Close()
				continue
			}
		}
		fmt.Fprintln(c, reply(port, orig))
		c.Close()
	}
}

// originalDst reads where a redirected connection was going before NAT
// (SO_ORIGINAL_DST, as Envoy does).
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	const soOriginalDst = 80
	raw, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var sa syscall.RawSockaddrInet4
	var serr error
	err = raw.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(sa))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.SOL_IP, soOriginalDst,
			uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			serr = errno
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return netip.AddrPort{}, err
	}
	port := uint16(sa.Port>>8 | sa.Port<<8) // network byte order
	return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port), nil
}

// dialCommand is how this program re-executes itself to connect as another
// UID inside a namespace: setuid affects every thread of a Go process, so the
// dial happens in a child started with that UID.
const dialCommand = "__dial"

func dial(ctx context.Context, nss *namespaces, p pod, c check) string {
	ns := filepath.Join(netnsDir, nss.node)
	if c.from == "pod" {
		ns = p.path()
	}
	cmd := exec.CommandContext(ctx, "/proc/self/exe", dialCommand, c.to(p).String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.uid), Gid: uint32(c.uid)}}
	var out []byte
	err := inNetns(ns, func() error {
		var err error
		out, err = output(cmd, nil)
		return err
	})
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "error: " + strings.TrimSpace(lastLine(err.Error()))
		}
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}

// dialMain is the child: connect, print the first line the server sends.
func dialMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: __dial host:port")
		return 2
	}
	c, err := net.DialTimeout("tcp4", args[0], 2*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print(string(b))
	return 0
}

// natDump is one pod's nat tables, per backend that holds one.
type natDump struct {
	backends []string
	text     []string // iptables-save -t nat output, cleaned
}

func (d natDump) String() string {
	var b strings.Builder
	for i, name := range d.backends {
		fmt.Fprintf(&b, "[%s]\n%s", name, d.text[i])
	}
	return b.String()
}

// summary counts the non-builtin chains and rules per backend.
func (d natDump) summary() string {
	var parts []string
	for i, name := range d.backends {
		chains, rules := 0, 0
		for _, l := range strings.Split(d.text[i], "\n") {
			switch {
			case strings.HasPrefix(l, ":") && !slices.Contains([]string{"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"}, strings.Fields(l[1:])[0]):
				chains++
			case strings.HasPrefix(l, "-A "):
				rules++
			}
		}
		parts = append(parts, fmt.Sprintf("%s backend, %d chains, %d rules", name, chains, rules))
	}
	if len(parts) == 0 {
		return "no nat rules"
	}
	return strings.Join(parts, "; ")
}

var counters = regexp.MustCompile(` \[\d+:\d+\]`)

// natTables reads the pod's nat table from each backend that has one with
// rules. The legacy table is read only when it exists (reading creates it).
// dumpTables are the tables natTables reads: nat, and raw when DNS is
// captured (the conntrack zones).
var dumpTables = []string{"nat"}

func natTables(ctx context.Context, p pod) (natDump, error) {
	var d natDump
	var legacy bool
	err := inNetns(p.path(), func() error {
		names, err := os.ReadFile("/proc/thread-self/net/ip_tables_names")
		legacy = err == nil && slices.Contains(strings.Fields(string(names)), "nat")
		return nil
	})
	if err != nil {
		return d, err
	}
	saves := [][]string{{"nft", "iptables-nft-save"}}
	if legacy {
		saves = append(saves, []string{"legacy", "iptables-legacy-save"})
	}
	for _, s := range saves {
		var out []byte
		for _, table := range dumpTables {
			o, err := outputInNetns(ctx, p.path(), s[1], "-t", table)
			if err != nil {
				return d, err
			}
			out = append(out, o...)
		}
		var keep []string
		for _, l := range strings.Split(string(out), "\n") {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			keep = append(keep, counters.ReplaceAllString(l, ""))
		}
		if !slices.ContainsFunc(keep, func(l string) bool { return strings.HasPrefix(l, "-A ") }) {
			continue
		}
		d.backends = append(d.backends, s[0])
		d.text = append(d.text, strings.Join(keep, "\n")+"\n")
	}
	return d, nil
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ") + "\n"
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
