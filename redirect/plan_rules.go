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

package redirect

import (
	"net/netip"
	"strconv"
)

// inboundRules are the rules of the nat chain ChainInbound, which
// PREROUTING sends inbound TCP to.
func inboundRules(c Config) []Rule {
	if c.IncludeInboundPorts.IsEmpty() {
		return nil
	}
	var rules []Rule
	// First, so that nothing arriving there is captured, whatever its port.
	// The chain is also where the proxy's calls to its own pod IP go (over
	// lo, from OUTPUT, where no packet has an input interface), which these
	// rules therefore never match.
	for _, name := range c.ExcludeInboundInterfaces {
		rules = append(rules, Rule{Chain: ChainInbound, Match: []string{"-i", name}, Target: ret(), Comment: "inbound on excluded interface " + name})
	}
	leave := func(r PortRange, why string) {
		rules = append(rules, Rule{Chain: ChainInbound, Match: tcpPorts(r), Target: ret(), Comment: why + " " + r.String()})
	}
	for _, p := range []uint16{c.InboundProxyPort, c.OutboundProxyPort} {
		leave(PortRange{p, p}, "proxy port")
	}
	for _, r := range c.IgnoredInboundPorts.Ranges {
		leave(r, "proxy-owned port")
	}
	for _, r := range c.ExcludeInboundPorts.Ranges {
		leave(r, "excluded inbound port")
	}
	toProxy := redirectTo(c.InboundProxyPort)
	if c.IncludeInboundPorts.All {
		return append(rules, Rule{Chain: ChainInbound, Match: tcp(), Target: toProxy, Comment: "inbound to the proxy"})
	}
	for _, r := range c.IncludeInboundPorts.Ranges {
		rules = append(rules, Rule{Chain: ChainInbound, Match: tcpPorts(r), Target: toProxy, Comment: "included inbound port " + r.String()})
	}
	return rules
}

// outboundRules are the rules of the nat chain ChainOutbound, which OUTPUT
// sends outbound TCP to (after DNS, see dnsCapture).
func outboundRules(c Config, f Family) []Rule {
	include := c.IncludeOutboundCIDRs.family(f == IPv6)
	if !c.IncludeOutboundCIDRs.All && len(include) == 0 || c.IncludeOutboundPorts.IsEmpty() {
		return nil
	}
	var rules []Rule
	if !c.IncludeInboundPorts.IsEmpty() {
		// The proxy calling its own pod IP (an app calling itself through a
		// Service) must pass the inbound proxy too, as istio-init does; the
		// inbound chain applies the same port exclusions as for any peer.
		// DNS is left out while it is captured: the DNS proxy asking a
		// nameserver at its own pod IP goes there, not to the inbound proxy.
		match := []string{"!", "-d", loopback(f).String(), "-o", "lo"}
		if c.CaptureDNS != DNSCaptureOff {
			match = append(match, "-p", "tcp", "-m", "tcp", "!", "--dport", dnsPort)
		}
		rules = append(rules, Rule{Chain: ChainOutbound,
			Match:   append(match, owner(uidOwner, c.ProxyUID)...),
			Target:  jump(ChainInbound),
			Comment: "proxy calling its own pod IP goes through inbound"})
	}
	for _, id := range directIdentities(c) {
		rules = append(rules, Rule{Chain: ChainOutbound, Match: id.match, Target: ret(), Comment: id.traffic})
	}
	rules = append(rules, Rule{Chain: ChainOutbound, Match: []string{"-o", "lo"}, Target: ret(), Comment: "loopback"})
	for _, r := range c.ExcludeOutboundPorts.Ranges {
		rules = append(rules, Rule{Chain: ChainOutbound, Match: tcpPorts(r), Target: ret(), Comment: "excluded outbound port " + r.String()})
	}
	for _, r := range c.IncludeOutboundPorts.complement() {
		rules = append(rules, Rule{Chain: ChainOutbound, Match: tcpPorts(r), Target: ret(), Comment: "outbound port " + r.String() + " not in include-outbound-ports"})
	}
	for _, p := range c.ExcludeOutboundCIDRs.family(f == IPv6) {
		rules = append(rules, Rule{Chain: ChainOutbound, Match: dst(p), Target: ret(), Comment: "excluded outbound CIDR " + p.String()})
	}
	toProxy := redirectTo(c.OutboundProxyPort)
	if c.IncludeOutboundCIDRs.All {
		return append(rules, Rule{Chain: ChainOutbound, Match: tcp(), Target: toProxy, Comment: "outbound to the proxy"})
	}
	for _, p := range include {
		rules = append(rules, Rule{Chain: ChainOutbound, Match: append(dst(p), tcp()...), Target: toProxy, Comment: "included outbound CIDR " + p.String()})
	}
	return rules
}

// identity is an owner match for processes whose traffic is never
// redirected, with what rule comments call them and their traffic.
type identity struct {
	match        []string
	who, traffic string
}

// directIdentities are the processes whose outbound traffic goes direct:
// the proxy (by UID and by GID; it would loop) and the excluded UIDs and
// GIDs.
func directIdentities(c Config) []identity {
	uid, gid := strconv.FormatUint(uint64(c.ProxyUID), 10), strconv.FormatUint(uint64(c.ProxyGID), 10)
	ids := []identity{
		{owner(uidOwner, c.ProxyUID), "the proxy (uid " + uid + ")", "proxy traffic (uid " + uid + ")"},
		{owner(gidOwner, c.ProxyGID), "the proxy (gid " + gid + ")", "proxy traffic (gid " + gid + ")"},
	}
	excluded := func(kind, flag string, list IDList) {
		for _, id := range list {
			who := "excluded " + kind + " " + strconv.FormatUint(uint64(id), 10)
			ids = append(ids, identity{owner(flag, id), who, who})
		}
	}
	excluded("uid", uidOwner, c.ExcludeOutboundUIDs)
	excluded("gid", gidOwner, c.ExcludeOutboundGIDs)
	return ids
}

const (
	uidOwner = "--uid-owner"
	gidOwner = "--gid-owner"
)

func owner(flag string, id uint32) []string {
	return []string{"-m", "owner", flag, strconv.FormatUint(uint64(id), 10)}
}

func loopback(f Family) netip.Prefix {
	if f == IPv6 {
		return netip.MustParsePrefix("::1/128")
	}
	return netip.MustParsePrefix("127.0.0.1/32")
}

func tcp() []string { return []string{"-p", "tcp"} }

func tcpPorts(r PortRange) []string {
	return []string{"-p", "tcp", "-m", "tcp", "--dport", r.iptablesSpec()}
}

func dst(p netip.Prefix) []string { return []string{"-d", p.String()} }

func jump(chain string) []string { return []string{"-j", chain} }

func ret() []string { return []string{"-j", "RETURN"} }

func redirectTo(port uint16) []string {
	return []string{"-j", "REDIRECT", "--to-ports", strconv.Itoa(int(port))}
}
