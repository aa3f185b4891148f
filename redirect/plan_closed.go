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

import "slices"

// closedRuleset is what --ipv6=off programs for IPv6 in a kernel that has
// IPv6: instead of redirecting, it refuses. IPv6 not programmed must not be
// a route around the proxy that opens later: a pod with no IPv6 address
// when its init container runs can get one afterwards (SLAAC, a late CNI
// step, a dual-stack network attached later), and with no rules its IPv6
// TCP would then go direct. So the connections the IPv6 redirect would
// send to a proxy are refused instead, and everything the redirect lets go
// direct (the proxy's own traffic, excluded ports, CIDRs, UIDs, GIDs and
// interfaces, loopback) still goes: the same decisions, with REJECT where
// the redirect has REDIRECT. (Istio, with IPv6 off, rejects inbound IPv6
// only; outbound goes direct.)
//
// REJECT is not allowed in the nat table, so the refusal is in the filter
// table, built from the redirect's nat rules:
//
//   - the jumps of PREROUTING go from INPUT, where packets delivered to the
//     pod pass, and every jump sees only the first packet of a connection
//     (conntrack state NEW), as the nat table does: the answers to
//     connections that went direct pass;
//   - the inbound chain lets connections arriving over loopback go first:
//     nat's PREROUTING never sees them (their NAT was decided in OUTPUT),
//     filter's INPUT does;
//   - every REDIRECT becomes a REJECT, with a TCP reset for TCP (the client
//     fails at once) and ICMPv6 port unreachable for UDP (captured DNS).
//
// redirect is the IPv6 redirect ruleset of the same Config; its raw table
// (DNS conntrack zones) has no use without NAT and is left out.
func closedRuleset(redirect Ruleset) Ruleset {
	nat := redirect.Table(TableNat)
	filter := Table{Name: TableFilter, Chains: slices.Clone(nat.Chains)}
	loopbackFirst := slices.Contains(nat.Chains, ChainInbound)
	for _, r := range nat.Rules {
		if r.Chain == ChainInbound && loopbackFirst {
			filter.Rules = append(filter.Rules, Rule{Chain: ChainInbound, Match: []string{"-i", "lo"}, Target: ret(),
				Comment: "inbound over loopback, which the nat table never redirects"})
			loopbackFirst = false
		}
		switch {
		case r.Chain == "PREROUTING" || r.Chain == "OUTPUT":
			chain := r.Chain
			if chain == "PREROUTING" {
				chain = "INPUT"
			}
			filter.Rules = append(filter.Rules, Rule{Chain: chain, Match: append(slices.Clone(r.Match), newConnection()...),
				Target: r.Target, Comment: r.Comment + ", new connections"})
		case len(r.Target) > 1 && r.Target[1] == "REDIRECT":
			filter.Rules = append(filter.Rules, Rule{Chain: r.Chain, Match: r.Match, Target: reject(r.Match),
				Comment: "refused, IPv6 is not redirected: " + r.Comment})
		default:
			filter.Rules = append(filter.Rules, r)
		}
	}
	rs := Ruleset{Family: redirect.Family}
	if len(filter.Rules) > 0 {
		rs.Tables = []Table{filter}
	}
	return rs
}

// closed reports whether rs refuses instead of redirecting (closedRuleset).
func (rs Ruleset) closed() bool { return len(rs.Table(TableFilter).Rules) > 0 }

func newConnection() []string { return []string{"-m", "conntrack", "--ctstate", "NEW"} }

// reject is the REJECT target for a rule matching match: a TCP reset for
// TCP, ICMPv6 port unreachable otherwise (UDP), spelled as ip6tables-save
// prints them.
func reject(match []string) []string {
	if slices.Contains(match, "udp") {
		return []string{"-j", "REJECT", "--reject-with", "icmp6-port-unreachable"}
	}
	return []string{"-j", "REJECT", "--reject-with", "tcp-reset"}
}
