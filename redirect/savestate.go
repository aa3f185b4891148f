package redirect

import (
	"slices"
	"strings"
)

// tableState is what an iptables-save of one family says: how many rules
// each backend's tables hold, and meshinit's footprint in the nat table.
type tableState struct {
	// ruleCount counts rules in every table, to tell which backend is in use.
	ruleCount int
	// chains are the meshinit chains present in nat.
	chains []string
	// lines are nat's rules that are meshinit's: rules in meshinit chains and
	// jumps into them from other chains, as "-A CHAIN spec" lines.
	lines []string
	// jumps are the subset of lines outside meshinit chains.
	jumps []string
	// userChains are the other chains in nat that are not built in.
	userChains []string
	// others are the rules of other owners that see packets before or
	// instead of meshinit's: those in nat's PREROUTING and OUTPUT, where
	// meshinit's jumps are appended, and every raw rule (raw has only those
	// two built-in chains). findConflicts decides which are in the way.
	others []tableRule
}

// tableRule is one "-A CHAIN spec" line of iptables-save and its table.
type tableRule struct {
	table, line string
}

// SaveLine is a chain or a rule of iptables-save output.
type SaveLine struct {
	// Table is the table it is in: "nat", "filter", ...
	Table string
	// Chain is the chain declared (":CHAIN POLICY [packets:bytes]") or the
	// chain the rule is appended to ("-A CHAIN spec").
	Chain string
	// Policy is a declared chain's policy: ACCEPT or DROP for a built-in
	// chain, "-" for another; "" for a rule.
	Policy string
	// Rule is the rule's whole "-A CHAIN spec" line; "" for a chain.
	Rule string
	// Target is the chain or target the rule jumps or goes to (-j, -g), or
	// "" (and always "" for a chain).
	Target string
}

// ParseSave reads iptables-save output (all tables or some) into its chains
// and rules, in order. Other lines (comments, COMMIT) are left out.
func ParseSave(text string) []SaveLine {
	var out []SaveLine
	table := ""
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			name, rest, _ := strings.Cut(line[1:], " ")
			policy, _, _ := strings.Cut(rest, " ")
			out = append(out, SaveLine{Table: table, Chain: name, Policy: policy})
		case strings.HasPrefix(line, "-A "):
			chain, _, _ := strings.Cut(line[3:], " ")
			out = append(out, SaveLine{Table: table, Chain: chain, Rule: line, Target: jumpTarget(line)})
		}
	}
	return out
}

// parseSave reads iptables-save output (all tables or only nat).
func parseSave(text string) tableState {
	var st tableState
	for _, l := range ParseSave(text) {
		if l.Rule == "" {
			switch {
			case l.Table != "nat":
			case strings.HasPrefix(l.Chain, ChainPrefix):
				st.chains = append(st.chains, l.Chain)
			case l.Policy == "-":
				st.userChains = append(st.userChains, l.Chain)
			}
			continue
		}
		st.ruleCount++
		switch {
		case l.Table == "raw":
			st.others = append(st.others, tableRule{l.Table, l.Rule})
		case l.Table != "nat":
		case strings.HasPrefix(l.Chain, ChainPrefix):
			st.lines = append(st.lines, l.Rule)
		case strings.HasPrefix(l.Target, ChainPrefix):
			st.lines = append(st.lines, l.Rule)
			st.jumps = append(st.jumps, l.Rule)
		case l.Chain == "PREROUTING" || l.Chain == "OUTPUT":
			st.others = append(st.others, tableRule{l.Table, l.Rule})
		}
	}
	return st
}

// restoreScript returns the iptables-restore --noflush input that turns the
// current nat table into one holding exactly the desired meshinit rules and
// leaves every other chain and rule alone. Declaring a chain creates it or,
// when it exists, flushes it; old jumps are deleted by their saved spec, and
// chains no longer wanted are deleted. An empty desired Ruleset makes the
// cleanup script, so cleanup is the exact mirror of apply. iptables-restore
// commits the whole table at once, so the pod never sees half of it.
func restoreScript(current tableState, desired Ruleset) string {
	var b strings.Builder
	b.WriteString("*nat\n")
	declared := append([]string{}, desired.Chains...)
	for _, c := range current.chains {
		if !slices.Contains(declared, c) {
			declared = append(declared, c)
		}
	}
	for _, c := range declared {
		b.WriteString(":" + c + " - [0:0]\n")
	}
	for _, j := range current.jumps {
		b.WriteString("-D" + strings.TrimPrefix(j, "-A") + "\n")
	}
	for _, r := range desired.Rules {
		b.WriteString(ruleLine("-A", r.Chain, r.Spec()) + "\n")
	}
	for _, c := range current.chains {
		if !slices.Contains(desired.Chains, c) {
			b.WriteString("-X " + c + "\n")
		}
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// matches reports whether the saved meshinit rules are exactly the desired
// ones, in order.
func (st tableState) matches(desired Ruleset) bool {
	var want []string
	for _, r := range desired.Rules {
		want = append(want, ruleLine("-A", r.Chain, r.Spec()))
	}
	got := append([]string{}, st.jumps...)
	for _, l := range st.lines {
		if !slices.Contains(st.jumps, l) {
			got = append(got, l)
		}
	}
	return slices.Equal(sortedJumpsFirst(want), got) && sameSet(st.chains, desired.Chains)
}

// sortedJumpsFirst orders rules as parseSave does: built-in chain jumps
// first, then meshinit chains' rules, each group in its original order.
func sortedJumpsFirst(lines []string) []string {
	var jumps, rest []string
	for _, l := range lines {
		chain, _, _ := strings.Cut(l[3:], " ")
		if strings.HasPrefix(chain, ChainPrefix) {
			rest = append(rest, l)
		} else {
			jumps = append(jumps, l)
		}
	}
	return append(jumps, rest...)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
