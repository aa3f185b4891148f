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
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/meshinit/meshinit/internal/testproxy"
)

// dial connects from ns to addr as root and returns the server's answer,
// or the error (a refused connection is an answer here, not a failure).
func (p *pod) dial(ns netns.NsHandle, addr string) (string, error) {
	return inNS(ns, 0, 0, func() (string, error) {
		return testproxy.Ask(func() (net.Conn, error) { return net.Dial("tcp", addr) })
	})
}

// ipCmd runs ip with args and fails t when it fails.
func (p *pod) ipCmd(args ...string) {
	p.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		p.t.Fatalf("ip %v: %v\n%s", args, err, out)
	}
}

// applyReporting applies args and returns the redirector's log and its
// termination message.
func (p *pod) applyReporting(args ...string) (log, message string) {
	p.t.Helper()
	path := filepath.Join(p.t.TempDir(), "termination-log")
	log = p.mustApply(append(args, "--termination-message-path="+path)...)
	data, err := os.ReadFile(path)
	if err != nil {
		p.t.Fatalf("no termination message: %v\n%s", err, log)
	}
	return log, string(data)
}

// TestIPv6AddedAfterApply is the fail-closed guarantee for a family the
// pod has no address of when its init container runs: the pod gets its
// IPv6 address only after apply (as SLAAC or a late CNI step would give
// it), and its IPv6 connections still do not go around the proxy. Under
// --ipv6=auto they reach the proxies; under --ipv6=off they are refused,
// while what the redirect lets go direct (the proxy's own traffic, an
// excluded port, loopback) still goes direct. Both say, in the log and
// the termination message, what they did for each family.
func TestIPv6AddedAfterApply(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode+"/auto redirects", func(t *testing.T) {
			p := newPod(t, mode)
			p.ipCmd("-n", p.name, "addr", "del", p.podIP6+"/64", "dev", p.veth)
			p.startServers(8080)
			log, message := p.applyReporting("--ipv6=auto")
			for _, want := range []string{"IPv4: redirected", "IPv6: redirected", "no interface has a global IPv6 address yet"} {
				if !strings.Contains(message, want) {
					t.Errorf("termination message lacks %q:\n%s\nlog:\n%s", want, message, log)
				}
			}
			p.ipCmd("-n", p.name, "addr", "add", p.podIP6+"/64", "dev", p.veth, "nodad")
			peer, pod := hostPort(p.peerIP6, 9090), hostPort(p.podIP6, 8080)
			expect(t, "outbound over the IPv6 added after apply", p.client(appUID, appUID, "tcp", peer), "proxy-outbound orig="+peer)
			expect(t, "inbound over the IPv6 added after apply", p.ask(p.peerNS, 0, 0, pod), "proxy-inbound orig="+pod)
			expect(t, "the proxy's own connection", p.client(proxyUID, proxyUID, "tcp", peer), "peer-9090")
		})
		t.Run(mode+"/off refuses", func(t *testing.T) {
			p := newPod(t, mode)
			p.ipCmd("-n", p.name, "addr", "del", p.podIP6+"/64", "dev", p.veth)
			p.startServers(8080, 8081)
			log, message := p.applyReporting("--ipv6=off", "--exclude-inbound-ports=8081", "--exclude-outbound-ports=9091")
			for _, want := range []string{"IPv4: redirected", "IPv6: refused", "--ipv6=off"} {
				if !strings.Contains(message, want) {
					t.Errorf("termination message lacks %q:\n%s\nlog:\n%s", want, message, log)
				}
			}
			p.ipCmd("-n", p.name, "addr", "add", p.podIP6+"/64", "dev", p.veth, "nodad")
			peer := hostPort(p.peerIP6, 9090)
			if got := p.client(appUID, appUID, "tcp", peer); !strings.Contains(got, "connection refused") {
				t.Errorf("outbound over the IPv6 added after apply: answered %q, want the connection refused", got)
			}
			if got, err := p.dial(p.peerNS, hostPort(p.podIP6, 8080)); err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("inbound over the IPv6 added after apply: answered %q, %v; want the connection refused", got, err)
			}
			expect(t, "the proxy's own connection", p.client(proxyUID, proxyUID, "tcp", peer), "peer-9090")
			expect(t, "an excluded outbound port", p.client(appUID, appUID, "tcp", hostPort(p.peerIP6, 9091)), "peer-9091")
			expect(t, "an excluded inbound port", p.ask(p.peerNS, 0, 0, hostPort(p.podIP6, 8081)), "app-8081")
			expect(t, "the pod calling itself over loopback", p.client(appUID, appUID, "tcp", hostPort("::1", 8080)), "app-8080")
			expect(t, "the app calling its own pod IP", p.client(appUID, appUID, "tcp", hostPort(p.podIP6, 8080)), "app-8080")
			expect(t, "IPv4 still redirected", p.client(appUID, appUID, "tcp", hostPort(p.peerIP, 9090)), "proxy-outbound orig="+hostPort(p.peerIP, 9090))
			// Applying again changes nothing, and cleanup removes the refusal too.
			before := p.save(true, "")
			p.mustApply("--ipv6=off", "--exclude-inbound-ports=8081", "--exclude-outbound-ports=9091")
			if after := p.save(true, ""); after != before {
				t.Errorf("a second apply changed the IPv6 tables:\n%s\nwas:\n%s", after, before)
			}
			if out, err := p.redirector(nil, "cleanup"); err != nil {
				t.Fatalf("cleanup: %v\n%s", err, out)
			}
			p.noMeshinitRules(t)
		})
	}
}

// TestInterfaceAddedAfterApply: the rules name no interface they capture
// on, so an interface the pod gets after apply (a second network attached
// late) is captured like the first: connections arriving on it reach the
// inbound proxy, on both families.
func TestInterfaceAddedAfterApply(t *testing.T) {
	p := newPod(t, "nft")
	p.startServers(8080)
	p.mustApply("--ipv6=auto")
	side, sidePodIP, sidePodIP6 := p.sideLink("net1")
	for _, addr := range []string{hostPort(sidePodIP, 8080), hostPort(sidePodIP6, 8080)} {
		expect(t, "inbound on the interface added after apply", p.ask(side, 0, 0, addr), "proxy-inbound orig="+addr)
	}
}

// TestIPv6DecisionSaysWhy: a kernel without IPv6 cannot be simulated in a
// namespace, but the redirector reads /proc/net/if_inet6 to tell; the log
// says what it decided for IPv6 and why, here for a kernel with IPv6.
func TestIPv6DecisionSaysWhy(t *testing.T) {
	p := newPod(t, "nft")
	for _, tc := range []struct{ mode, action string }{{"auto", "redirected"}, {"off", "refused"}, {"on", "redirected"}} {
		out := p.mustApply("--ipv6=" + tc.mode)
		if !strings.Contains(out, fmt.Sprintf("\"IPv6 decided\" action=%q reason=\"--ipv6=%s", tc.action, tc.mode)) &&
			!strings.Contains(out, fmt.Sprintf("\"IPv6 decided\" action=%s reason=\"--ipv6=%s", tc.action, tc.mode)) {
			t.Errorf("--ipv6=%s: the log does not say IPv6 was %s and why:\n%s", tc.mode, tc.action, out)
		}
	}
}
