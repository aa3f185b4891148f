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

// The chains meshinit creates in the nat table.
const (
	ChainInbound  = ChainPrefix + "INBOUND"
	ChainOutbound = ChainPrefix + "OUTPUT"
)

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

// Ruleset is meshinit's part of one family's nat table.
type Ruleset struct {
	Family Family
	// Chains are the meshinit chains, in the order they are declared.
	Chains []string
	// Rules in order; rules in PREROUTING and OUTPUT are the entry jumps.
	Rules []Rule
}

// Plan is the rules for both families. IPv6 is nil when IPv6 is off; when
// IPv6 is auto, Apply decides at run time whether to use it.
type Plan struct {
	Config Config
	IPv4   Ruleset
	IPv6   *Ruleset
}

// NewPlan decides the rules for a Config. It is pure: it runs nothing and
// reads nothing. c must be valid.
func NewPlan(c Config) Plan {
	p := Plan{Config: c, IPv4: newRuleset(c, IPv4)}
	if c.IPv6 != IPv6Off {
		v6 := newRuleset(c, IPv6)
		p.IPv6 = &v6
	}
	return p
}

func newRuleset(c Config, f Family) Ruleset {
	var rs Ruleset
	rs.Family = f
	if in := inboundRules(c); len(in) > 0 {
		rs.Chains = append(rs.Chains, ChainInbound)
		rs.Rules = append(rs.Rules, Rule{Chain: "PREROUTING", Match: tcp(), Target: jump(ChainInbound), Comment: "inbound TCP to the inbound chain"})
		rs.Rules = append(rs.Rules, in...)
	}
	if out := outboundRules(c, f); len(out) > 0 {
		rs.Chains = append(rs.Chains, ChainOutbound)
		rs.Rules = append(rs.Rules, Rule{Chain: "OUTPUT", Match: tcp(), Target: jump(ChainOutbound), Comment: "outbound TCP to the outbound chain"})
		rs.Rules = append(rs.Rules, out...)
	}
	return rs
}

func inboundRules(c Config) []Rule {
	if c.IncludeInboundPorts.IsEmpty() {
		return nil
	}
	var rules []Rule
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

func outboundRules(c Config, f Family) []Rule {
	include := c.IncludeOutboundCIDRs.family(f == IPv6)
	if !c.IncludeOutboundCIDRs.All && len(include) == 0 {
		return nil
	}
	uid := strconv.FormatUint(uint64(c.ProxyUID), 10)
	gid := strconv.FormatUint(uint64(c.ProxyGID), 10)
	var rules []Rule
	if !c.IncludeInboundPorts.IsEmpty() {
		// The proxy calling its own pod IP (an app calling itself through a
		// Service) must pass the inbound proxy too, as istio-init does; the
		// inbound chain applies the same port exclusions as for any peer.
		rules = append(rules, Rule{Chain: ChainOutbound,
			Match:   []string{"!", "-d", loopback(f).String(), "-o", "lo", "-m", "owner", "--uid-owner", uid},
			Target:  jump(ChainInbound),
			Comment: "proxy calling its own pod IP goes through inbound"})
	}
	rules = append(rules, []Rule{
		{Chain: ChainOutbound, Match: []string{"-m", "owner", "--uid-owner", uid}, Target: ret(), Comment: "proxy traffic (uid " + uid + ")"},
		{Chain: ChainOutbound, Match: []string{"-m", "owner", "--gid-owner", gid}, Target: ret(), Comment: "proxy traffic (gid " + gid + ")"},
		{Chain: ChainOutbound, Match: []string{"-o", "lo"}, Target: ret(), Comment: "loopback"},
	}...)
	for _, r := range c.ExcludeOutboundPorts.Ranges {
		rules = append(rules, Rule{Chain: ChainOutbound, Match: tcpPorts(r), Target: ret(), Comment: "excluded outbound port " + r.String()})
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

// String renders the ruleset as the iptables-save lines it produces.
func (rs Ruleset) String() string {
	var b strings.Builder
	for _, c := range rs.Chains {
		fmt.Fprintf(&b, ":%s - [0:0]\n", c)
	}
	for _, r := range rs.Rules {
		b.WriteString(ruleLine("-A", r.Chain, r.Spec()))
		b.WriteByte('\n')
	}
	return b.String()
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
	for _, rs := range p.rulesets() {
		note := ""
		if rs.Family == IPv6 && p.Config.IPv6 == IPv6Auto {
			note = " (applied only when the pod has a global IPv6 address)"
		}
		fmt.Fprintf(&b, "# %s%s\n%s", rs.Family, note, restoreScript(tableState{}, rs))
	}
	return b.String()
}

func (p Plan) rulesets() []Ruleset {
	if p.IPv6 == nil {
		return []Ruleset{p.IPv4}
	}
	return []Ruleset{p.IPv4, *p.IPv6}
}
