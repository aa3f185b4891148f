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
	"strconv"
	"testing"

	"github.com/meshinit/meshinit/redirect"
)

const appUID, proxyUID = 1000, 1337

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// TestTraffic checks where real connections arrive after apply, on both
// backends and both families.
func TestTraffic(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8080, 8081, 15020)
			p.mustApply("--ipv6=on",
				"--exclude-inbound-ports=8081",
				"--exclude-outbound-ports=9091",
				"--exclude-outbound-cidrs="+p.peerIP2+"/32,"+p.peerIP6b+"/128")

			for _, fam := range []struct{ name, pod, peer, excludedPeer, loopback string }{
				{"IPv4", p.podIP, p.peerIP, p.peerIP2, "127.0.0.1"},
				{"IPv6", p.podIP6, p.peerIP6, p.peerIP6b, "::1"},
			} {
				t.Run(fam.name, func(t *testing.T) {
					expect(t, "inbound to an included port",
						p.ask(p.peerNS, 0, 0, hostPort(fam.pod, 8080)), "proxy-inbound orig="+hostPort(fam.pod, 8080))
					expect(t, "inbound to an excluded port",
						p.ask(p.peerNS, 0, 0, hostPort(fam.pod, 8081)), "app-8081")
					expect(t, "inbound to a proxy-owned port",
						p.ask(p.peerNS, 0, 0, hostPort(fam.pod, 15020)), "app-15020")
					expect(t, "outbound from the app",
						p.ask(p.podNS, appUID, appUID, hostPort(fam.peer, 9090)), "proxy-outbound orig="+hostPort(fam.peer, 9090))
					expect(t, "outbound from the proxy UID",
						p.ask(p.podNS, proxyUID, appUID, hostPort(fam.peer, 9090)), "peer-9090")
					expect(t, "outbound from the proxy GID",
						p.ask(p.podNS, appUID, proxyUID, hostPort(fam.peer, 9090)), "peer-9090")
					expect(t, "outbound to an excluded port",
						p.ask(p.podNS, appUID, appUID, hostPort(fam.peer, 9091)), "peer-9091")
					expect(t, "outbound to an excluded CIDR",
						p.ask(p.podNS, appUID, appUID, hostPort(fam.excludedPeer, 9090)), "peer-9090")
					expect(t, "the proxy calling its own pod IP",
						p.ask(p.podNS, proxyUID, proxyUID, hostPort(fam.pod, 8080)), "proxy-inbound orig="+hostPort(fam.pod, 8080))
					expect(t, "the proxy calling its own pod IP on an excluded port",
						p.ask(p.podNS, proxyUID, proxyUID, hostPort(fam.pod, 8081)), "app-8081")
					expect(t, "the app calling its own pod IP",
						p.ask(p.podNS, appUID, appUID, hostPort(fam.pod, 8080)), "app-8080")
					expect(t, "outbound over loopback",
						p.ask(p.podNS, appUID, appUID, hostPort(fam.loopback, 8080)), "app-8080")
				})
			}
		})
	}
}

// TestTrafficIncludedOutboundCIDRs checks that only listed destinations are
// captured when include-outbound-cidrs is not "*", and that listed inbound
// ports are the only ones captured.
func TestTrafficIncludedLists(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers(8080, 8081)
			p.mustApply("--ipv6=off", "--include-outbound-cidrs="+p.peerIP+"/32", "--include-inbound-ports=8080")
			expect(t, "outbound to an included CIDR",
				p.ask(p.podNS, appUID, appUID, hostPort(p.peerIP, 9090)), "proxy-outbound orig="+hostPort(p.peerIP, 9090))
			expect(t, "outbound to a CIDR not included",
				p.ask(p.podNS, appUID, appUID, hostPort(p.peerIP2, 9090)), "peer-9090")
			expect(t, "inbound to a listed port",
				p.ask(p.peerNS, 0, 0, hostPort(p.podIP, 8080)), "proxy-inbound orig="+hostPort(p.podIP, 8080))
			expect(t, "inbound to a port not listed",
				p.ask(p.peerNS, 0, 0, hostPort(p.podIP, 8081)), "app-8081")
		})
	}
}

// TestTrafficInboundAsPlanned: for a pod that moves the outbound proxy port
// onto an app port (8443) and excludes another (8081), real inbound
// connections reach the proxy exactly where Config.InboundCaptured says:
// the moved proxy port's inbound traffic goes to the app directly.
func TestTrafficInboundAsPlanned(t *testing.T) {
	settings := []string{"--outbound-proxy-port=8443", "--exclude-inbound-ports=8081"}
	c, err := redirect.ParseArgs(append([]string{"--ipv6=off"}, settings...))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			ports := []int{8080, 8081, 8443, 15001, 15020}
			p.serve(p.podNS, 15006, "proxy-inbound")
			for _, port := range ports {
				p.serve(p.podNS, port, fmt.Sprintf("app-%d", port))
			}
			p.mustApply(append([]string{"--ipv6=off"}, settings...)...)
			for _, port := range ports {
				want := fmt.Sprintf("app-%d", port)
				if captured, _ := c.InboundCaptured(uint16(port)); captured {
					want = "proxy-inbound orig=" + hostPort(p.podIP, port)
				}
				expect(t, fmt.Sprintf("inbound to %d", port), p.ask(p.peerNS, 0, 0, hostPort(p.podIP, port)), want)
			}
		})
	}
}
