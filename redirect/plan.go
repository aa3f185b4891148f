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
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ChainPrefix starts the name of every chain meshinit owns. Cleanup and
// re-runs find meshinit's state by it and by nothing else.
const ChainPrefix = "MESHINIT_"

// The chains meshinit creates: in the nat table the redirects, in the raw
// table the conntrack zones that DNS capture needs (see dnsRules).
const (
	ChainInbound  = ChainPrefix + "INBOUND"
	ChainOutbound = ChainPrefix + "OUTPUT"
	ChainDNS      = ChainPrefix + "DNS"
	// ChainDNSZonesOut and ChainDNSZonesIn are in the raw table, jumped to
	// from its OUTPUT and PREROUTING chains.
	ChainDNSZonesOut = ChainPrefix + "DNS_OUTPUT"
	ChainDNSZonesIn  = ChainPrefix + "DNS_PREROUTING"
)

// The tables meshinit writes rules in, in the order restore input and plans
// list them. Cleanup and re-runs look for meshinit's chains in each. The
// filter table holds only the refusal of a family that is not redirected
// (closedRuleset).
const (
	TableNat    = "nat"
	TableRaw    = "raw"
	TableFilter = "filter"
)

var ownTables = []string{TableNat, TableRaw, TableFilter}

// commentPrefix starts every rule's comment, so a person reading
// iptables-save can tell meshinit's rules and why each exists.
const commentPrefix = "meshinit: "

// Family is an IP family: which of iptables and ip6tables a Ruleset is for.
type Family int

const (
	IPv4 Family = iota
	IPv6
)

func (f Family) String() string {
	if f == IPv6 {
		return "IPv6"
	}
	return "IPv4"
}

// Rule is one rule: the chain it is appended to, its match and target
// arguments (in the order iptables-save prints them) and why it exists.
type Rule struct {
	Chain   string
	Match   []string
	Target  []string
	Comment string
}

// Spec returns the rule's arguments after "-A <chain>", exactly as
// iptables-save prints them.
func (r Rule) Spec() []string {
	spec := append([]string{}, r.Match...)
	spec = append(spec, "-m", "comment", "--comment", commentPrefix+r.Comment)
	return append(spec, r.Target...)
}

// Table is meshinit's part of one table of one family.
type Table struct {
	// Name is the table: TableNat or TableRaw.
	Name string
	// Chains are the meshinit chains, in the order they are declared.
	Chains []string
	// Rules in order; rules in built-in chains are the entry jumps.
	Rules []Rule
}

// Ruleset is meshinit's part of one family's tables: nat, and raw when DNS
// is captured. A table without rules is left out.
type Ruleset struct {
	Family Family
	Tables []Table
}

// Table returns the ruleset's part of the table named, empty when it has none.
func (rs Ruleset) Table(name string) Table {
	for _, t := range rs.Tables {
		if t.Name == name {
			return t
		}
	}
	return Table{Name: name}
}

// add appends chain, the jumps into it and its rules to t, unless there
// are no rules: an empty chain is not created.
func (t *Table) add(chain string, jumps []Rule, rules []Rule) {
	if len(rules) == 0 {
		return
	}
	t.Chains = append(t.Chains, chain)
	t.Rules = append(append(t.Rules, jumps...), rules...)
}

// Plan is the rules for both families. IPv6 is the IPv6 redirect, nil when
// IPv6 is off; IPv6Closed is what IPv6 off programs instead (closedRuleset),
// nil otherwise. Either is applied only when the kernel has IPv6 (Apply).
type Plan struct {
	Config Config
	// Nameservers are the pod's DNS servers the plan captures DNS to under
	// capture-dns=nameservers (ReadPlan reads them from resolv.conf); nil
	// otherwise.
	Nameservers []netip.Addr
	IPv4        Ruleset
	IPv6        *Ruleset
	IPv6Closed  *Ruleset
}

// NewPlan decides the rules for a Config. It is pure: it runs nothing and
// reads nothing. c must be valid. nameservers are the pod's DNS servers,
// used only under capture-dns=nameservers (see ReadPlan).
func NewPlan(c Config, nameservers ...netip.Addr) Plan {
	p := Plan{Config: c}
	if c.CaptureDNS == DNSCaptureNameservers {
		p.Nameservers = nameservers
	}
	p.IPv4 = newRuleset(c, IPv4, p.Nameservers)
	v6 := newRuleset(c, IPv6, p.Nameservers)
	if c.IPv6 == IPv6Off {
		closed := closedRuleset(v6)
		p.IPv6Closed = &closed
	} else {
		p.IPv6 = &v6
	}
	return p
}

func newRuleset(c Config, f Family, nameservers []netip.Addr) Ruleset {
	nat := Table{Name: TableNat}
	nat.add(ChainInbound, []Rule{{Chain: "PREROUTING", Match: tcp(), Target: jump(ChainInbound), Comment: "inbound TCP to the inbound chain"}},
		inboundRules(c))
	d := newDNSCapture(c, f, nameservers)
	nat.add(ChainDNS, d.natJumps(), d.natRules())
	nat.add(ChainOutbound, []Rule{{Chain: "OUTPUT", Match: tcp(), Target: jump(ChainOutbound), Comment: "outbound TCP to the outbound chain"}},
		outboundRules(c, f))
	raw := Table{Name: TableRaw}
	raw.add(ChainDNSZonesOut, d.rawOutputJumps(), d.zonesOut())
	raw.add(ChainDNSZonesIn, d.rawPreroutingJumps(), d.zonesIn())
	rs := Ruleset{Family: f}
	for _, t := range []Table{nat, raw} {
		if len(t.Rules) > 0 {
			rs.Tables = append(rs.Tables, t)
		}
	}
	return rs
}

// ruleLine renders one restore/save line, quoting arguments that need it.
func ruleLine(op, chain string, spec []string) string {
	parts := []string{op, chain}
	for _, a := range spec {
		if strings.ContainsAny(a, " \"'\t") || a == "" {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// String renders the plan as the iptables-restore input Apply writes into
// a pod that holds no meshinit rules yet, one section per family.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# meshinit redirect plan, config %s\n# %s\n", p.Config.Fingerprint(), strings.Join(p.Config.Args(), " "))
	if p.Config.CaptureDNS == DNSCaptureNameservers {
		servers := "none"
		if len(p.Nameservers) > 0 {
			var list []string
			for _, a := range p.Nameservers {
				list = append(list, a.String())
			}
			servers = strings.Join(list, ", ")
		}
		fmt.Fprintf(&b, "# the pod's nameservers, whose DNS is captured: %s\n", servers)
	}
	for _, rs := range p.rulesets() {
		note := ""
		switch {
		case rs.Family == IPv6 && rs.closed():
			note = ": not redirected (--ipv6=off); new connections the redirect would take to a proxy are refused instead " +
				"(applied when the kernel has IPv6, so that an address added later opens no route around the proxy)"
		case rs.Family == IPv6 && p.Config.IPv6 == IPv6Auto:
			note = " (applied when the kernel has IPv6, whether or not the pod has an IPv6 address yet)"
		}
		fmt.Fprintf(&b, "# %s%s\n%s", rs.Family, note, restoreScript(tableState{}, rs))
	}
	return b.String()
}

// rulesets are the rulesets the plan may apply: IPv4, then IPv6's redirect
// or its refusal.
func (p Plan) rulesets() []Ruleset {
	out := []Ruleset{p.IPv4}
	if v6 := p.ipv6(); v6 != nil {
		out = append(out, *v6)
	}
	return out
}

// ipv6 is the IPv6 ruleset the plan applies in a kernel with IPv6: the
// redirect, or its refusal under --ipv6=off.
func (p Plan) ipv6() *Ruleset {
	if p.IPv6 != nil {
		return p.IPv6
	}
	return p.IPv6Closed
}
