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
	"slices"
	"strings"
)

// conflict is a rule of another owner that would take traffic meshinit must
// redirect before meshinit's own rules see it.
type conflict struct {
	backend backend
	rule    tableRule
	why     string
}

func (c conflict) String() string {
	return fmt.Sprintf("%s %s table %q (%s)", c.backend, c.rule.table, c.rule.line, c.why)
}

// findConflicts returns the rules of other owners in one backend's tables
// (st, read from b) that are in meshinit's way. It is pure. meshinit's own
// rules (in its chains, or jumping to them, in nat and raw: a re-run) are
// not in st.others, so never in the way.
//
// meshinit appends its jumps to nat PREROUTING and OUTPUT, so every rule of
// another owner there comes first; and both backends' nat chains see every
// packet, in an order meshinit cannot choose. Such a rule is in the way when
// it may match TCP and either ends the chain (ACCEPT, RETURN, REDIRECT, DNAT,
// ...) or jumps to another chain, which may do so: the connection is then
// redirected elsewhere, or not at all. Targets that only note a packet and
// go on (LOG, NFLOG, MARK, ...) are not in the way. In raw, a NOTRACK or
// CT --notrack rule that may match TCP is in the way: untracked packets skip
// the nat table altogether.
//
// When meshinit refuses instead of redirecting (closed, see closedRuleset),
// its jumps are appended to filter's INPUT and OUTPUT, and a rule of another
// owner there that may match TCP and ACCEPTs, RETURNs, or jumps or goes to
// another chain (which may accept) is in the way: the connection would pass
// unrefused. One that drops or rejects is not: it refuses too. Without
// closed, filter is not meshinit's concern.
//
// With DNS captured (dns), outbound UDP is meshinit's too: a rule in nat
// OUTPUT that may match UDP is judged as one that may match TCP, and in raw
// (outside PREROUTING, where only answers pass) so is any CT rule that may
// match UDP: the first CT rule a packet meets sets its conntrack zone, and
// meshinit's zones keep the app's DNS apart from the proxy's (see
// dnsCapture). The check goes by protocol, not port: a UDP rule for another
// port is refused too, which is safe and, in a pod, rare.
func findConflicts(b backend, st tableState, dns, closed bool) []conflict {
	var out []conflict
	for _, r := range st.others {
		if r.table == TableFilter && !closed {
			continue
		}
		if why := inTheWay(r, st.userChains, dns); why != "" {
			out = append(out, conflict{b, r, why})
		}
	}
	return out
}

// nonTerminating are targets that let a packet go on to the next rule.
var nonTerminating = []string{"LOG", "NFLOG", "ULOG", "TRACE", "AUDIT", "MARK", "CONNMARK", "SECMARK", "CONNSECMARK"}

// inTheWay says why rule r keeps traffic from meshinit's rules, or "" when
// it does not. userChains are nat's chains that are not built in; dns says
// whether outbound UDP is captured too.
func inTheWay(r tableRule, userChains []string, dns bool) string {
	args := saveArgs(r.line)
	chain, _, _ := strings.Cut(strings.TrimPrefix(r.line, "-A "), " ")
	udp := dns && mayMatch(args, "udp", "17") && chain != "PREROUTING" && chain != "INPUT"
	if !mayMatch(args, "tcp", "6") && !udp {
		return ""
	}
	flag, target, targetArgs := targetOf(args)
	switch {
	case r.table == TableRaw && (target == "NOTRACK" || target == "CT" && slices.Contains(targetArgs, "--notrack")):
		return "untracked packets skip NAT, so meshinit's redirect never sees them"
	case r.table == TableRaw && target == "CT" && udp:
		return "sets the conntrack zone of DNS packets before meshinit's rules, whose zones keep the app's DNS apart from the proxy's"
	case r.table == TableFilter && (target == "DROP" || target == "REJECT"):
		return ""
	case r.table == TableFilter && (target == "ACCEPT" || target == "RETURN"):
		return target + " ends the chain before meshinit's refusal"
	case r.table == TableFilter && target != "" && !slices.Contains(nonTerminating, target):
		return "jumps to " + target + " before meshinit's refusal, which may accept the connection"
	case r.table != TableNat, target == "", slices.Contains(nonTerminating, target):
		return ""
	case flag == "-g":
		return "goes to chain " + target + " before meshinit's jump"
	case slices.Contains(userChains, target):
		return "jumps to chain " + target + " before meshinit's jump"
	case target == "ACCEPT" || target == "RETURN":
		return target + " ends the chain before meshinit's jump"
	}
	return target + " takes the connection before meshinit's jump"
}

// mayMatch reports whether a rule's protocol match lets a protocol (by
// name and number) through: no -p, -p of it (or all), or a negated
// protocol other than it.
func mayMatch(args []string, name, number string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-p" {
			continue
		}
		it := slices.Contains([]string{name, number, "all", "0"}, strings.ToLower(args[i+1]))
		negated := i > 0 && args[i-1] == "!"
		return it != negated
	}
	return true
}

// targetOf returns a rule's target flag (-j or -g), the target and the
// arguments after it, or "" when the rule has no target.
func targetOf(args []string) (flag, target string, targetArgs []string) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-j" || args[i] == "-g" {
			return args[i], args[i+1], args[i+2:]
		}
	}
	return "", "", nil
}

// jumpTarget returns the chain or target a save line jumps to, or "".
func jumpTarget(line string) string {
	_, target, _ := targetOf(saveArgs(line))
	return target
}

// saveArgs splits an iptables-save line into its arguments, undoing the
// quoting iptables-save applies to arguments with spaces (a comment, say):
// "..." with \" and \\ inside. A quoted "-j" is an argument, not a target.
func saveArgs(line string) []string {
	var args []string
	var cur strings.Builder
	inArg, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			quoted, inArg = !quoted, true
		case c == ' ' && !quoted:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteByte(c)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}

// maxConflictsShown bounds how many rules an error lists.
const maxConflictsShown = 8

// conflictError explains conflicts found before applying and what to do.
func conflictError(cs []conflict) error {
	shown := make([]string, 0, maxConflictsShown)
	for _, c := range cs[:min(len(cs), maxConflictsShown)] {
		shown = append(shown, c.String())
	}
	more := ""
	if len(cs) > maxConflictsShown {
		more = fmt.Sprintf("; and %d more", len(cs)-maxConflictsShown)
	}
	return fmt.Errorf("not applying: %d rule(s) of another owner would take the TCP traffic (or the DNS) meshinit must redirect, so the proxy would not get it: %s%s; "+
		"a pod can have only one traffic redirect: remove whatever adds these rules (another mesh's init container or CNI plugin, or an init container of the pod), "+
		"or opt the pod out of meshinit (pod label meshinit.io/inject=false); nothing was changed",
		len(cs), strings.Join(shown, "; "), more)
}
