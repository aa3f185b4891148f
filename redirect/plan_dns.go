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
	"strings"
)

// DNS capture sends the pod's DNS, UDP and TCP to port 53, to the DNS proxy
// port: from every process but the proxy and the excluded UIDs and GIDs, to
// every destination (capture-dns=all) or only to the nameservers of the
// pod's /etc/resolv.conf (capture-dns=nameservers). The nat chain ChainDNS,
// which OUTPUT sends port 53 to before any other TCP rule, lets those
// processes' queries go and REDIRECTs the rest. REDIRECT delivers a
// packet the pod sends itself to 127.0.0.1 or ::1, so the DNS proxy listens
// there and answers from there, as Istio's agent does.
//
// TCP needs nothing more. UDP needs conntrack zones, which is why the raw
// table holds rules too. The kernel makes the NAT decision for the first
// packet of a conntrack entry only; every later packet with the same
// 5-tuple (addresses, ports, protocol) gets the same treatment until the
// entry expires. For TCP a new connection starts with a SYN, on which
// conntrack replaces an old entry of the same tuple, so NAT is decided
// afresh. UDP has no start: an entry lives on 30 s after a query, 120 s
// once answered twice, and a new query from a reused source port to the
// same server is the same flow. So, in one conntrack table:
//
//   - the app queries 10.96.0.10:53 from port 40000: REDIRECTed to the DNS
//     proxy; the entry remembers that;
//   - the DNS proxy, forwarding some query, happens to get port 40000 and
//     sends to 10.96.0.10:53: the same tuple, so the same entry, so it is
//     REDIRECTed to itself instead of reaching the nameserver;
//   - or the other way round: the proxy's query makes an entry without NAT,
//     and an app query from that port then goes straight to the nameserver,
//     around the proxy (Istio's issue #33469: clusters whose apps resolve a
//     lot saw exactly this).
//
// Conntrack zones keep the two flows apart, as Istio (istio-iptables'
// addDNSConntrackZones, since its #33572) and Kuma (its transparent proxy's
// raw table) do: a zone is part of an entry's key, so the same tuple in two
// zones is two entries, each with its own NAT decision. The raw table,
// before conntrack, picks the zone with CT --zone; the first CT rule a
// packet meets sets it, so the order below matters:
//
//   - zone 1, the flows that go direct: queries to port 53 from the proxy
//     (its own, and those it forwards) and from the excluded UIDs and GIDs,
//     and the nameservers' answers (source port 53) arriving in PREROUTING;
//   - zone 2, the captured flows: every other query to port 53, and the DNS
//     proxy's answers (source port: the DNS proxy port, from the proxy's
//     UID or GID), which must find the entry of the query they answer to be
//     un-NATed (their source rewritten back to the nameserver's address, the
//     only one the app's socket accepts).
//
// Under capture-dns=nameservers the query and answer rules name each
// nameserver (-d in OUTPUT, -s in PREROUTING; Istio once used -d in both,
// its #46935), so DNS to other servers stays in the default zone, answers
// included, and is neither captured nor split.
type dnsCapture struct {
	c Config
	// servers are this family's nameservers under capture-dns=nameservers;
	// nil under all, which names no destination.
	servers []netip.Addr
	on      bool
}

// dnsPort is DNS's port, as iptables arguments want it.
const dnsPort = "53"

// The conntrack zones of DNS flows (see dnsCapture).
const (
	zoneDirect   = "1"
	zoneCaptured = "2"
)

// newDNSCapture decides DNS capture for one family: off, or on for every
// destination, or on for this family's nameservers when there are some.
func newDNSCapture(c Config, f Family, nameservers []netip.Addr) dnsCapture {
	d := dnsCapture{c: c, on: c.CaptureDNS == DNSCaptureAll}
	if c.CaptureDNS == DNSCaptureNameservers {
		for _, a := range nameservers {
			if a.Is6() == (f == IPv6) {
				d.servers = append(d.servers, a)
			}
		}
		d.on = len(d.servers) > 0
	}
	return d
}

// destinations are the -d (or, for answers, -s) matches of the captured
// servers: one empty match under all.
func (d dnsCapture) destinations(flag string) [][]string {
	if d.servers == nil {
		return [][]string{nil}
	}
	var out [][]string
	for _, a := range d.servers {
		out = append(out, []string{flag, netip.PrefixFrom(a, a.BitLen()).String()})
	}
	return out
}

// server names the nameserver of a -d or -s match for a comment: "" when
// there is none (every destination).
func server(prep string, match []string) string {
	if len(match) == 0 {
		return ""
	}
	addr, _, _ := strings.Cut(match[1], "/")
	return " " + prep + " nameserver " + addr
}

// natJumps send outbound port 53, UDP and TCP, to ChainDNS, ahead of the
// jump of outbound TCP.
func (d dnsCapture) natJumps() []Rule {
	if !d.on {
		return nil
	}
	return []Rule{
		{Chain: "OUTPUT", Match: udpPort("--dport", dnsPort), Target: jump(ChainDNS), Comment: "outbound DNS over UDP to the DNS chain"},
		{Chain: "OUTPUT", Match: tcpPort("--dport", dnsPort), Target: jump(ChainDNS), Comment: "outbound DNS over TCP to the DNS chain"},
	}
}

// natRules are ChainDNS: the direct processes' queries go, the others go to
// the DNS proxy.
func (d dnsCapture) natRules() []Rule {
	if !d.on {
		return nil
	}
	var rules []Rule
	for _, id := range directIdentities(d.c) {
		rules = append(rules, Rule{Chain: ChainDNS, Match: id.match, Target: ret(), Comment: "DNS of " + id.who + " goes direct"})
	}
	toProxy := redirectTo(d.c.DNSProxyPort)
	for _, m := range d.destinations("-d") {
		for _, proto := range []string{"udp", "tcp"} {
			rules = append(rules, Rule{Chain: ChainDNS, Match: append(append([]string{}, m...), "-p", proto), Target: toProxy,
				Comment: "DNS over " + upper(proto) + server("for", m) + " to the DNS proxy"})
		}
	}
	return rules
}

// rawOutputJumps send outbound UDP to ChainDNSZonesOut.
func (d dnsCapture) rawOutputJumps() []Rule {
	return []Rule{{Chain: "OUTPUT", Match: []string{"-p", "udp"}, Target: jump(ChainDNSZonesOut), Comment: "outbound UDP to the DNS conntrack zones"}}
}

// rawPreroutingJumps send inbound UDP to ChainDNSZonesIn.
func (d dnsCapture) rawPreroutingJumps() []Rule {
	return []Rule{{Chain: "PREROUTING", Match: []string{"-p", "udp"}, Target: jump(ChainDNSZonesIn), Comment: "inbound UDP to the DNS conntrack zones"}}
}

// zonesOut are ChainDNSZonesOut: the zones of outbound UDP DNS packets.
func (d dnsCapture) zonesOut() []Rule {
	if !d.on {
		return nil
	}
	var rules []Rule
	proxyPort := strconv.Itoa(int(d.c.DNSProxyPort))
	for _, id := range directIdentities(d.c)[:2] {
		rules = append(rules, Rule{Chain: ChainDNSZonesOut, Match: append(udpPort("--sport", proxyPort), id.match...), Target: zone(zoneCaptured),
			Comment: "answers of the DNS proxy, " + id.who + ": zone " + zoneCaptured + ", with the queries they answer"})
	}
	for _, m := range d.destinations("-d") {
		for _, id := range directIdentities(d.c) {
			rules = append(rules, Rule{Chain: ChainDNSZonesOut, Match: append(append(append([]string{}, m...), udpPort("--dport", dnsPort)...), id.match...), Target: zone(zoneDirect),
				Comment: "DNS of " + id.who + server("for", m) + ": zone " + zoneDirect + ", it goes direct"})
		}
		rules = append(rules, Rule{Chain: ChainDNSZonesOut, Match: append(append([]string{}, m...), udpPort("--dport", dnsPort)...), Target: zone(zoneCaptured),
			Comment: "captured DNS" + server("for", m) + ": zone " + zoneCaptured})
	}
	return rules
}

// zonesIn are ChainDNSZonesIn: the nameservers' answers join the queries
// that went direct.
func (d dnsCapture) zonesIn() []Rule {
	if !d.on {
		return nil
	}
	var rules []Rule
	for _, m := range d.destinations("-s") {
		rules = append(rules, Rule{Chain: ChainDNSZonesIn, Match: append(append([]string{}, m...), udpPort("--sport", dnsPort)...), Target: zone(zoneDirect),
			Comment: "DNS answers" + server("from", m) + ": zone " + zoneDirect + ", with the queries that went direct"})
	}
	return rules
}

func udpPort(flag, port string) []string { return []string{"-p", "udp", "-m", "udp", flag, port} }

func tcpPort(flag, port string) []string { return []string{"-p", "tcp", "-m", "tcp", flag, port} }

func zone(z string) []string { return []string{"-j", "CT", "--zone", z} }

func upper(proto string) string {
	if proto == "udp" {
		return "UDP"
	}
	return "TCP"
}
