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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dnsFamilies are the pod's and the peer's addresses of each family the
// DNS tests query.
func (p *pod) dnsFamilies() []struct{ name, upstream, other string } {
	return []struct{ name, upstream, other string }{
		{"IPv4", p.peerIP, p.peerIP2},
		{"IPv6", p.peerIP6, p.peerIP6b},
	}
}

// TestDNSCapture: with capture-dns=all, the app's DNS over UDP and over TCP,
// to any server, reaches the DNS proxy (over TCP with the original
// destination), while the proxy's own queries, by UID or by GID, reach the
// nameserver; and a reused source port does not mix them up.
func TestDNSCapture(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers()
			p.startDNS(proxyUID, proxyUID, 15053)
			p.mustApply("--ipv6=on", "--capture-dns=all")
			for i, fam := range p.dnsFamilies() {
				t.Run(fam.name, func(t *testing.T) {
					ns := hostPort(fam.upstream, 53)
					expect(t, "the app's DNS over UDP", p.client(appUID, appUID, "dns-udp", ns), "dns-proxy")
					expect(t, "the app's DNS over TCP", p.client(appUID, appUID, "dns-tcp", ns), "dns-proxy orig="+ns)
					expect(t, "the app's DNS over UDP to another server", p.client(appUID, appUID, "dns-udp", hostPort(fam.other, 53)), "dns-proxy")
					expect(t, "the proxy's DNS over UDP", p.client(proxyUID, proxyUID, "dns-udp", ns), "dns-upstream")
					expect(t, "the proxy's DNS over TCP", p.client(proxyUID, proxyUID, "dns-tcp", ns), "dns-upstream")
					expect(t, "DNS over UDP of the proxy's GID", p.client(appUID, proxyUID, "dns-udp", ns), "dns-upstream")
					expect(t, "other outbound TCP still goes to the outbound proxy",
						p.client(appUID, appUID, "tcp", hostPort(fam.upstream, 9090)), "proxy-outbound orig="+hostPort(fam.upstream, 9090))

					// One source port, used by the app, then by the proxy,
					// then by the app again (and the other way round): the
					// same 5-tuple each time, which conntrack alone would
					// give the first query's NAT decision.
					port := 40053 + 10*i
					expect(t, "the app's query from port A", p.clientFrom(appUID, appUID, port, "dns-udp", ns), "dns-proxy")
					expect(t, "the proxy's query from port A", p.clientFrom(proxyUID, proxyUID, port, "dns-udp", ns), "dns-upstream")
					expect(t, "the app's query from port A again", p.clientFrom(appUID, appUID, port, "dns-udp", ns), "dns-proxy")
					expect(t, "the proxy's query from port B", p.clientFrom(proxyUID, proxyUID, port+1, "dns-udp", ns), "dns-upstream")
					expect(t, "the app's query from port B", p.clientFrom(appUID, appUID, port+1, "dns-udp", ns), "dns-proxy")
				})
			}
			// Why the zones: without them (meshinit's raw chains flushed),
			// conntrack sends the proxy's query from the port the app just
			// used to the DNS proxy, itself, and the app's query from the
			// port the proxy just used to the nameserver, around the proxy.
			t.Run("without the conntrack zones", func(t *testing.T) {
				for _, v6 := range []bool{false, true} {
					for _, chain := range []string{"MESHINIT_DNS_OUTPUT", "MESHINIT_DNS_PREROUTING"} {
						p.iptables(v6, "-t", "raw", "-F", chain)
					}
				}
				ns := hostPort(p.peerIP, 53)
				expect(t, "the app's query from port C", p.clientFrom(appUID, appUID, 40100, "dns-udp", ns), "dns-proxy")
				expect(t, "the proxy's query from port C, without zones", p.clientFrom(proxyUID, proxyUID, 40100, "dns-udp", ns), "dns-proxy")
				expect(t, "the proxy's query from port D", p.clientFrom(proxyUID, proxyUID, 40101, "dns-udp", ns), "dns-upstream")
				expect(t, "the app's query from port D, without zones", p.clientFrom(appUID, appUID, 40101, "dns-udp", ns), "dns-upstream")
			})
		})
	}
}

// resolvConf writes the pod's /etc/resolv.conf as ip netns exec shows it
// to the programs it runs in the pod (it bind-mounts /etc/netns/<name>/*).
func (p *pod) resolvConf(content string) {
	p.t.Helper()
	dir := filepath.Join("/etc/netns", p.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// TestDNSCaptureNameservers: with capture-dns=nameservers, the redirector
// reads the pod's /etc/resolv.conf; DNS to those nameservers reaches the DNS
// proxy, DNS over UDP to another server goes there directly, and TCP to
// another server's port 53 is outbound TCP like any other.
func TestDNSCaptureNameservers(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers()
			p.startDNS(proxyUID, proxyUID, 15053)
			p.resolvConf("search team.svc.cluster.local\nnameserver " + p.peerIP + "\nnameserver " + p.peerIP6 + "\noptions ndots:5\n")
			out := p.mustApply("--ipv6=on", "--capture-dns=nameservers")
			if want := "nameservers=\"[" + p.peerIP + " " + p.peerIP6 + "]\""; !strings.Contains(out, want) {
				t.Errorf("the log does not name the nameservers read (%s):\n%s", want, out)
			}
			for _, fam := range p.dnsFamilies() {
				t.Run(fam.name, func(t *testing.T) {
					ns, other := hostPort(fam.upstream, 53), hostPort(fam.other, 53)
					expect(t, "the app's DNS over UDP to a nameserver", p.client(appUID, appUID, "dns-udp", ns), "dns-proxy")
					expect(t, "the app's DNS over TCP to a nameserver", p.client(appUID, appUID, "dns-tcp", ns), "dns-proxy orig="+ns)
					expect(t, "the proxy's DNS to a nameserver", p.client(proxyUID, proxyUID, "dns-udp", ns), "dns-upstream")
					expect(t, "the app's DNS over UDP to another server", p.client(appUID, appUID, "dns-udp", other), "dns-other")
					expect(t, "the app's TCP to another server's port 53", p.client(appUID, appUID, "tcp", other), "proxy-outbound orig="+other)
					// The same source port to a nameserver and to another
					// server: two flows, each with its own decision.
					expect(t, "the app's query from port E to another server", p.clientFrom(appUID, appUID, 40200, "dns-udp", other), "dns-other")
					expect(t, "the app's query from port E to a nameserver", p.clientFrom(appUID, appUID, 40200, "dns-udp", ns), "dns-proxy")
				})
			}
		})
	}
}
