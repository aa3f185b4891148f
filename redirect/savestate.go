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
	"maps"
	"slices"
	"strings"
)

// tableState is what an iptables-save of one family says: how many rules
// each backend's tables hold, and meshinit's footprint in its tables.
type tableState struct {
	// version is what the save says of its own binary ("v1.8.9"), from the
	// header it writes before a table; "" when it wrote no table.
	version string
	// ruleCount counts rules in every table, to tell which backend is in use.
	ruleCount int
	// own is meshinit's footprint in each of its tables (ownTables) that
	// holds some.
	own map[string]*footprint
	// userChains are the other chains in nat that are not built in.
	userChains []string
	// others are the rules of other owners that see packets before or
	// instead of meshinit's: those in nat's PREROUTING and OUTPUT and in
	// filter's INPUT and OUTPUT, where meshinit's jumps are appended, and
	// every raw rule that is not meshinit's (raw has only those two built-in
	// chains). findConflicts decides which are in the way.
	others []tableRule
}

// footprint is meshinit's part of one table.
type footprint struct {
	// chains are the meshinit chains present.
	chains []string
	// lines are the table's rules that are meshinit's: rules in meshinit
	// chains and jumps into them from other chains, as "-A CHAIN spec" lines.
	lines []string
	// jumps are the subset of lines outside meshinit chains.
	jumps []string
}

// footprint returns meshinit's part of table, empty when it has none.
func (st tableState) footprint(table string) footprint {
	if f := st.own[table]; f != nil {
		return *f
	}
	return footprint{}
}

// count says how many chains and jumps of meshinit's the tables hold.
func (st tableState) count() (chains, jumps int) {
	for _, f := range st.own {
		chains += len(f.chains)
		jumps += len(f.jumps)
	}
	return chains, jumps
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

// parseSave reads iptables-save output (all tables or some).
func parseSave(text string) tableState {
	var st tableState
	own := func(table string) *footprint {
		if st.own == nil {
			st.own = map[string]*footprint{}
		}
		if st.own[table] == nil {
			st.own[table] = &footprint{}
		}
		return st.own[table]
	}
	st.version = saveVersion(text)
	for _, l := range ParseSave(text) {
		ours := slices.Contains(ownTables, l.Table)
		if l.Rule == "" {
			switch {
			case ours && strings.HasPrefix(l.Chain, ChainPrefix):
				f := own(l.Table)
				f.chains = append(f.chains, l.Chain)
			case l.Table == TableNat && l.Policy == "-":
				st.userChains = append(st.userChains, l.Chain)
			}
			continue
		}
		st.ruleCount++
		switch {
		case ours && strings.HasPrefix(l.Chain, ChainPrefix):
			f := own(l.Table)
			f.lines = append(f.lines, l.Rule)
		case ours && strings.HasPrefix(l.Target, ChainPrefix):
			f := own(l.Table)
			f.lines = append(f.lines, l.Rule)
			f.jumps = append(f.jumps, l.Rule)
		case l.Table == TableRaw:
			st.others = append(st.others, tableRule{l.Table, l.Rule})
		case l.Table == TableNat && (l.Chain == "PREROUTING" || l.Chain == "OUTPUT"),
			l.Table == TableFilter && (l.Chain == "INPUT" || l.Chain == "OUTPUT"):
			st.others = append(st.others, tableRule{l.Table, l.Rule})
		}
	}
	return st
}

// restoreScript returns the iptables-restore --noflush input that turns the
// current tables into ones holding exactly the desired meshinit rules and
// leaves every other chain and rule alone: a section for each table the
// current or the desired rules use, and always one for nat but in a
// refusal (closedRuleset), which has no use for nat. Declaring a chain
// creates it or, when it exists, flushes it; old jumps are deleted by
// their saved spec, and chains no longer wanted are deleted. An empty
// desired Ruleset makes the cleanup script, so cleanup is the exact mirror
// of apply. iptables-restore commits each table at once, so the pod never
// sees half of one.
func restoreScript(current tableState, desired Ruleset) string {
	var b strings.Builder
	for _, name := range ownTables {
		cur, want := current.footprint(name), desired.Table(name)
		always := name == TableNat && !desired.closed()
		if !always && len(cur.chains) == 0 && len(cur.jumps) == 0 && len(want.Rules) == 0 {
			continue
		}
		b.WriteString("*" + name + "\n")
		declared := append([]string{}, want.Chains...)
		for _, c := range cur.chains {
			if !slices.Contains(declared, c) {
				declared = append(declared, c)
			}
		}
		for _, c := range declared {
			b.WriteString(":" + c + " - [0:0]\n")
		}
		for _, j := range cur.jumps {
			b.WriteString("-D" + strings.TrimPrefix(j, "-A") + "\n")
		}
		for _, r := range want.Rules {
			b.WriteString(ruleLine("-A", r.Chain, r.Spec()) + "\n")
		}
		for _, c := range cur.chains {
			if !slices.Contains(want.Chains, c) {
				b.WriteString("-X " + c + "\n")
			}
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}

// matches reports whether the saved meshinit rules are exactly the desired
// ones: the same chains in each table, and in each chain the same rules in
// the same order. (Chains are compared one by one: the backends list
// chains in orders of their own.)
func (st tableState) matches(desired Ruleset) bool {
	for _, name := range ownTables {
		got, want := st.footprint(name), desired.Table(name)
		var wantLines []string
		for _, r := range want.Rules {
			wantLines = append(wantLines, ruleLine("-A", r.Chain, r.Spec()))
		}
		if !sameSet(got.chains, want.Chains) || !maps.EqualFunc(byChain(got.lines), byChain(wantLines), slices.Equal) {
			return false
		}
	}
	return true
}

// byChain groups "-A CHAIN spec" lines by chain, each group in order.
func byChain(lines []string) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		chain, _, _ := strings.Cut(l[3:], " ")
		out[chain] = append(out[chain], l)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// saveVersion reads the version an iptables-save header names:
// "# Generated by iptables-nft-save v1.8.9 (nf_tables) on ...".
func saveVersion(text string) string {
	for l := range strings.Lines(text) {
		f := strings.Fields(l)
		if len(f) >= 4 && f[0] == "#" && f[1] == "Generated" && f[2] == "by" && strings.HasSuffix(f[3], "-save") && len(f) >= 5 {
			return f[4]
		}
	}
	return ""
}
