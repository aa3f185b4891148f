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

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netns"

	"github.com/meshinit/meshinit/internal/testdns"
	"github.com/meshinit/meshinit/internal/testproxy"
)

// clientEnv, set to "uid gid srcport kind addr", makes the test binary a
// client process instead of running tests: it takes that UID and GID (no
// supplementary groups), connects to addr from source port srcport (0: any)
// and prints what the server answered. kind is tcp (a testproxy server),
// dns-udp or dns-tcp (a testdns server). The tests start it in the pod's
// network namespace, so the rules see a real process running as those IDs.
const clientEnv = "MESHINIT_TEST_CLIENT"

func clientMain(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 5 {
		fmt.Fprintf(os.Stderr, "%s=%q: want \"uid gid srcport kind addr\"\n", clientEnv, spec)
		return 2
	}
	var ids [3]int
	for i := range ids {
		n, err := strconv.Atoi(f[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		ids[i] = n
	}
	// Setgroups, Setresgid and Setresuid change every thread of the process.
	for _, err := range []error{syscall.Setgroups(nil), syscall.Setresgid(ids[1], ids[1], ids[1]), syscall.Setresuid(ids[0], ids[0], ids[0])} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "taking the IDs:", err)
			return 2
		}
	}
	kind, addr := f[3], f[4]
	network := "tcp"
	if kind == "dns-udp" {
		network = "udp"
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	if ids[2] != 0 {
		local := net.JoinHostPort("::", strconv.Itoa(ids[2]))
		if ip, _, _ := net.SplitHostPort(addr); net.ParseIP(ip).To4() != nil {
			local = net.JoinHostPort("0.0.0.0", strconv.Itoa(ids[2]))
		}
		var err error
		if network == "udp" {
			d.LocalAddr, err = net.ResolveUDPAddr("udp", local)
		} else {
			d.LocalAddr, err = net.ResolveTCPAddr("tcp", local)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	var answer string
	var err error
	switch kind {
	case "tcp":
		answer, err = testproxy.Ask(func() (net.Conn, error) { return d.Dial(network, addr) })
	case "dns-udp", "dns-tcp":
		var c net.Conn
		if c, err = d.Dial(network, addr); err == nil {
			answer, err = testdns.Ask(c, "app.team.svc.cluster.local")
			c.Close()
		}
	default:
		err = fmt.Errorf("unknown kind %q", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(answer)
	return 0
}

// client runs the test binary as a client process (see clientEnv) in the
// pod as uid and gid and returns what the server answered, or "error: ..."
// when there was no answer.
func (p *pod) client(uid, gid int, kind, addr string) string {
	return p.clientFrom(uid, gid, 0, kind, addr)
}

// clientFrom is client from source port srcPort.
func (p *pod) clientFrom(uid, gid, srcPort int, kind, addr string) string {
	p.t.Helper()
	self, err := os.Executable()
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", p.name, self)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %d %s %s", clientEnv, uid, gid, srcPort, kind, addr))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "error: " + strings.TrimSpace(stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// serveDNS starts a testdns server named name on addr (UDP and TCP) in ns,
// its sockets created as uid and gid: the DNS proxy's answers are matched
// by the UID or GID of their socket.
func (p *pod) serveDNS(ns netns.NsHandle, uid, gid int, addr, name string) {
	p.t.Helper()
	pc, err := inNS(ns, uid, gid, func() (net.PacketConn, error) { return net.ListenPacket("udp", addr) })
	if err != nil {
		p.t.Fatalf("listen udp %s: %v", addr, err)
	}
	l, err := inNS(ns, uid, gid, func() (net.Listener, error) { return net.Listen("tcp", addr) })
	if err != nil {
		p.t.Fatalf("listen tcp %s: %v", addr, err)
	}
	p.t.Cleanup(func() { pc.Close(); l.Close() })
	go testdns.ServeUDP(pc, name)
	go testdns.ServeTCP(l, name)
}

// startDNS runs the pod's DNS proxy (as the proxy's UID and GID, on
// 127.0.0.1 and ::1, port dnsProxyPort) and two nameservers in the peer,
// "dns-upstream" at its first addresses and "dns-other" at its second ones.
func (p *pod) startDNS(proxyUID, proxyGID, dnsProxyPort int) {
	for _, ip := range []string{"127.0.0.1", "::1"} {
		p.serveDNS(p.podNS, proxyUID, proxyGID, hostPort(ip, dnsProxyPort), "dns-proxy")
	}
	for _, ip := range []string{p.peerIP, p.peerIP6} {
		p.serveDNS(p.peerNS, 0, 0, hostPort(ip, 53), "dns-upstream")
	}
	for _, ip := range []string{p.peerIP2, p.peerIP6b} {
		p.serveDNS(p.peerNS, 0, 0, hostPort(ip, 53), "dns-other")
	}
}
