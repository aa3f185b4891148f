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
	"strings"
	"testing"
)

// otherMesh installs what another mesh's init container would: a chain that
// redirects all TCP the app sends to port 16001, where a server named
// "other-mesh" listens, jumped to from nat OUTPUT of one backend and family.
func (p *pod) otherMesh(mode string, ipv6 bool) string {
	p.t.Helper()
	saved := p.mode
	p.mode = mode
	defer func() { p.mode = saved }()
	p.iptables(ipv6, "-t", "nat", "-N", "OTHER_MESH_OUTPUT")
	p.iptables(ipv6, "-t", "nat", "-A", "OTHER_MESH_OUTPUT", "-p", "tcp", "-j", "REDIRECT", "--to-ports", "16001")
	p.iptables(ipv6, "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-j", "OTHER_MESH_OUTPUT")
	return "-A OUTPUT -p tcp -j OTHER_MESH_OUTPUT"
}

// noMeshinitRules fails t if any table of any backend of either family
// holds a meshinit chain or rule.
func (p *pod) noMeshinitRules(t *testing.T) {
	t.Helper()
	saved := p.mode
	defer func() { p.mode = saved }()
	for _, mode := range backends {
		p.mode = mode
		for _, v6 := range []bool{false, true} {
			if all := p.save(v6, ""); strings.Contains(all, "MESHINIT") {
				t.Errorf("meshinit rules in %s (ipv6=%v):\n%s", mode, v6, all)
			}
		}
	}
}

// TestAnotherMeshFirst: with another ruleset's jump already in nat OUTPUT,
// in the backend meshinit uses or in the other one, and in the family it
// programs, apply exits non-zero naming the rule, its backend and family,
// and changes nothing: the other mesh still gets the traffic.
func TestAnotherMeshFirst(t *testing.T) {
	for _, tc := range []struct {
		name               string
		otherMode, useMode string
		otherIPv6          bool
		want               string
	}{
		{"nft, meshinit nft", "nft", "nft", false, "nft IPv4 nat table"},
		{"legacy, meshinit legacy", "legacy", "legacy", false, "legacy IPv4 nat table"},
		{"legacy, meshinit nft", "legacy", "nft", false, "legacy IPv4 nat table"},
		{"nft, meshinit legacy", "nft", "legacy", false, "nft IPv4 nat table"},
		{"nft IPv6, meshinit auto", "nft", "auto", true, "nft IPv6 nat table"},
		{"legacy IPv6, meshinit nft", "legacy", "nft", true, "legacy IPv6 nat table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod(t, tc.otherMode)
			p.startServers(8080)
			p.serve(p.podNS, 16001, "other-mesh")
			rule := p.otherMesh(tc.otherMode, tc.otherIPv6)
			peer := hostPort(p.peerIP, 9090)
			if tc.otherIPv6 {
				peer = hostPort(p.peerIP6, 9090)
			}
			expect(t, "before: the other mesh takes outbound", p.ask(p.podNS, appUID, appUID, peer), "other-mesh orig="+peer)

			out, err := p.redirector(nil, "apply", "--iptables-mode="+tc.useMode, "--ipv6=on")
			if err == nil {
				t.Fatalf("apply succeeded with another mesh's rule in the way:\n%s", out)
			}
			for _, want := range []string{tc.want + ` \"` + rule + `\"`, "jumps to chain OTHER_MESH_OUTPUT", "nothing was changed"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			p.noMeshinitRules(t)
			expect(t, "after: the other mesh still takes outbound", p.ask(p.podNS, appUID, appUID, peer), "other-mesh orig="+peer)
		})
	}
	// Under --ipv6=off meshinit refuses IPv6 instead of redirecting it (see
	// TestIPv6AddedAfterApply); another mesh's IPv6 redirect would take
	// that traffic to its proxy before the refusal, so it is in the way too.
	t.Run("in the family meshinit refuses", func(t *testing.T) {
		p := newPod(t, "nft")
		p.startServers()
		rule := p.otherMesh("nft", true)
		out, err := p.redirector(nil, "apply", "--iptables-mode=nft", "--ipv6=off")
		if err == nil || !strings.Contains(out, `nft IPv6 nat table \"`+rule+`\"`) {
			t.Errorf("apply under --ipv6=off did not refuse another mesh's IPv6 rule: %v\n%s", err, out)
		}
		p.noMeshinitRules(t)
	})
}

// TestNotrackTakesTrafficAroundNAT shows why raw NOTRACK rules are in the
// way (untracked connections skip meshinit's redirect) and that apply,
// run again over them, refuses and names them.
func TestNotrackTakesTrafficAroundNAT(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.startServers()
			p.mustApply("--ipv6=off")
			peer := hostPort(p.peerIP, 9090)
			expect(t, "before", p.ask(p.podNS, appUID, appUID, peer), "proxy-outbound orig="+peer)
			for _, chain := range []string{"PREROUTING", "OUTPUT"} {
				p.iptables(false, "-t", "raw", "-A", chain, "-p", "tcp", "-j", "CT", "--notrack")
			}
			expect(t, "untracked outbound", p.ask(p.podNS, appUID, appUID, peer), "peer-9090")

			out, err := p.redirector(nil, "apply", "--iptables-mode="+mode, "--ipv6=off")
			if err == nil {
				t.Fatalf("apply succeeded over a NOTRACK rule:\n%s", out)
			}
			if want := mode + ` IPv4 raw table \"-A OUTPUT -p tcp -j CT --notrack\" (untracked packets skip NAT`; !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		})
	}
}

// TestDNSZonesOfAnotherOwner: with DNS capture on, a raw CT rule of another
// owner that may match UDP would set the conntrack zone of DNS packets
// before meshinit's zones: apply refuses, naming it, and changes nothing.
// Without DNS capture the same rule is not in the way.
func TestDNSZonesOfAnotherOwner(t *testing.T) {
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			p := newPod(t, mode)
			p.iptables(false, "-t", "raw", "-A", "OUTPUT", "-p", "udp", "--dport", "53", "-j", "CT", "--zone", "7")
			out, err := p.redirector(nil, "apply", "--iptables-mode="+mode, "--ipv6=off", "--capture-dns=all")
			if err == nil {
				t.Fatalf("apply with DNS capture succeeded over another owner's zones:\n%s", out)
			}
			if want := mode + ` IPv4 raw table \"-A OUTPUT -p udp -m udp --dport 53 -j CT --zone 7\" (sets the conntrack zone of DNS packets`; !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
			p.noMeshinitRules(t)
			p.mustApply("--ipv6=off")
		})
	}
}
