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
	"os/exec"
	"testing"

	"github.com/vishvananda/netns"
)

// families are the pod's and the peer's addresses of each family.
func (p *pod) families() []struct{ name, pod, peer, peer2 string } {
	return []struct{ name, pod, peer, peer2 string }{
		{"IPv4", p.podIP, p.peerIP, p.peerIP2},
		{"IPv6", p.podIP6, p.peerIP6, p.peerIP6b},
	}
}

// TestExcludeOutboundUIDsGIDs: processes running as an excluded UID, or
// with an excluded primary GID, connect directly and ask the nameserver
// directly, while another UID's connections and DNS go to the proxies.
func TestExcludeOutboundUIDsGIDs(t *testing.T) {
	const shipperUID, shipperGID, otherUID = 2000, 3000, 2001
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers()
			p.startDNS(proxyUID, proxyUID, 15053)
			p.mustApply("--ipv6=on", "--capture-dns=all",
				fmt.Sprintf("--exclude-outbound-uids=%d,2999", shipperUID), fmt.Sprintf("--exclude-outbound-gids=%d", shipperGID))
			for _, fam := range p.families() {
				t.Run(fam.name, func(t *testing.T) {
					peer, ns := hostPort(fam.peer, 9090), hostPort(fam.peer, 53)
					expect(t, "an excluded UID's connection", p.client(shipperUID, shipperUID, "tcp", peer), "peer-9090")
					expect(t, "an excluded GID's connection", p.client(otherUID, shipperGID, "tcp", peer), "peer-9090")
					expect(t, "another UID's connection", p.client(otherUID, otherUID, "tcp", peer), "proxy-outbound orig="+peer)
					expect(t, "an excluded UID's DNS over UDP", p.client(shipperUID, shipperUID, "dns-udp", ns), "dns-upstream")
					expect(t, "an excluded GID's DNS over TCP", p.client(otherUID, shipperGID, "dns-tcp", ns), "dns-upstream")
					expect(t, "another UID's DNS over UDP", p.client(otherUID, otherUID, "dns-udp", ns), "dns-proxy")
					// An excluded UID's query, then another UID's from the
					// same port: the first goes direct, the second is captured.
					expect(t, "an excluded UID's query from port F", p.clientFrom(shipperUID, shipperUID, 40300, "dns-udp", ns), "dns-upstream")
					expect(t, "another UID's query from port F", p.clientFrom(otherUID, otherUID, 40300, "dns-udp", ns), "dns-proxy")
				})
			}
		})
	}
}

// TestIncludeOutboundPorts: only connections to the included ports go to
// the proxy; with include-outbound-cidrs too, only those to both.
func TestIncludeOutboundPorts(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers()
			p.mustApply("--ipv6=on", "--include-outbound-ports=9090", "--include-outbound-cidrs="+p.peerIP+"/32,"+p.peerIP6+"/128")
			for _, fam := range p.families() {
				t.Run(fam.name, func(t *testing.T) {
					expect(t, "an included port at an included CIDR", p.client(appUID, appUID, "tcp", hostPort(fam.peer, 9090)), "proxy-outbound orig="+hostPort(fam.peer, 9090))
					expect(t, "another port", p.client(appUID, appUID, "tcp", hostPort(fam.peer, 9091)), "peer-9091")
					expect(t, "an included port elsewhere", p.client(appUID, appUID, "tcp", hostPort(fam.peer2, 9090)), "peer-9090")
				})
			}
		})
	}
}

// sideLink joins the pod to a third namespace by a second veth pair, the
// pod's end named iface, with addresses 10.232.<n>.0/24 and fd32:<n>::/64
// (.2 and ::2 the pod's); it returns that namespace and the pod's addresses.
func (p *pod) sideLink(iface string) (side netns.NsHandle, podIP, podIP6 string) {
	p.t.Helper()
	name := "mi-side-" + p.name[len("mi-pod-"):]
	other := "ms" + p.name[len("mi-pod-"):]
	p.t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	podIP, sideIP := fmt.Sprintf("10.232.%d.2", subnet), fmt.Sprintf("10.232.%d.1", subnet)
	podIP6, sideIP6 := fmt.Sprintf("fd32:%d::2", subnet), fmt.Sprintf("fd32:%d::1", subnet)
	for _, args := range [][]string{
		{"netns", "add", name},
		{"link", "add", iface, "netns", p.name, "type", "veth", "peer", "name", other, "netns", name},
		{"-n", p.name, "addr", "add", podIP + "/24", "dev", iface},
		{"-n", name, "addr", "add", sideIP + "/24", "dev", other},
		{"-n", p.name, "addr", "add", podIP6 + "/64", "dev", iface, "nodad"},
		{"-n", name, "addr", "add", sideIP6 + "/64", "dev", other, "nodad"},
		{"-n", p.name, "link", "set", iface, "up"},
		{"-n", name, "link", "set", other, "up"},
		{"-n", name, "link", "set", "lo", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			p.t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	side, err := netns.GetFromName(name)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { side.Close() })
	return side, podIP, podIP6
}

// TestExcludeInboundInterfaces: a connection arriving on an excluded
// interface reaches the app directly; one arriving on the pod's other
// interface still reaches the inbound proxy.
func TestExcludeInboundInterfaces(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8080)
			side, sidePodIP, sidePodIP6 := p.sideLink("net1")
			p.mustApply("--ipv6=on", "--exclude-inbound-interfaces=net1,net2")
			for _, fam := range []struct{ name, pod, sidePod string }{{"IPv4", p.podIP, sidePodIP}, {"IPv6", p.podIP6, sidePodIP6}} {
				t.Run(fam.name, func(t *testing.T) {
					expect(t, "inbound on the excluded interface", p.ask(side, 0, 0, hostPort(fam.sidePod, 8080)), "app-8080")
					expect(t, "inbound on the other interface", p.ask(p.peerNS, 0, 0, hostPort(fam.pod, 8080)), "proxy-inbound orig="+hostPort(fam.pod, 8080))
					expect(t, "the proxy calling its own pod IP", p.ask(p.podNS, proxyUID, proxyUID, hostPort(fam.pod, 8080)), "proxy-inbound orig="+hostPort(fam.pod, 8080))
				})
			}
		})
	}
}

// TestPerPodProxySettings: other proxy ports, UID and GID than the
// defaults are honoured: connections and DNS reach the proxy at its ports,
// its own traffic (by UID or GID) goes direct, and the default proxy UID is
// an app like any other.
func TestPerPodProxySettings(t *testing.T) {
	const uid, gid = 2102, 2103
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8080) // the default proxy ports listen too: they must get nothing
			p.serve(p.podNS, 16001, "custom-outbound")
			p.serve(p.podNS, 16006, "custom-inbound")
			p.startDNS(uid, gid, 16053)
			p.mustApply("--ipv6=on", "--outbound-proxy-port=16001", "--inbound-proxy-port=16006",
				fmt.Sprintf("--proxy-uid=%d", uid), fmt.Sprintf("--proxy-gid=%d", gid), "--capture-dns=all", "--dns-proxy-port=16053")
			for _, fam := range p.families() {
				t.Run(fam.name, func(t *testing.T) {
					peer, ns := hostPort(fam.peer, 9090), hostPort(fam.peer, 53)
					expect(t, "inbound", p.ask(p.peerNS, 0, 0, hostPort(fam.pod, 8080)), "custom-inbound orig="+hostPort(fam.pod, 8080))
					expect(t, "outbound from the app", p.client(appUID, appUID, "tcp", peer), "custom-outbound orig="+peer)
					expect(t, "outbound from the default proxy UID", p.client(proxyUID, proxyUID, "tcp", peer), "custom-outbound orig="+peer)
					expect(t, "outbound from the proxy UID", p.client(uid, appUID, "tcp", peer), "peer-9090")
					expect(t, "outbound from the proxy GID", p.client(appUID, gid, "tcp", peer), "peer-9090")
					expect(t, "the app's DNS over UDP", p.client(appUID, appUID, "dns-udp", ns), "dns-proxy")
					expect(t, "the app's DNS over TCP", p.client(appUID, appUID, "dns-tcp", ns), "dns-proxy orig="+ns)
					expect(t, "the proxy's DNS", p.client(uid, gid, "dns-udp", ns), "dns-upstream")
					expect(t, "the proxy calling its own pod IP", p.client(uid, gid, "tcp", hostPort(fam.pod, 8080)), "custom-inbound orig="+hostPort(fam.pod, 8080))
				})
			}
		})
	}
}
