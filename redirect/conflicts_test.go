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
	"testing"
)

// TestFindConflicts decides, from iptables-save text, which rules of other
// owners are in meshinit's way.
func TestFindConflicts(t *testing.T) {
	const header = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n"
	for _, tc := range []struct {
		name  string
		save  string
		wants []string // the "why" of each conflict, in order
	}{
		{"empty tables", header + "COMMIT\n", nil},
		{"meshinit's own rules (a re-run)", header + `:MESHINIT_INBOUND - [0:0]
:MESHINIT_OUTPUT - [0:0]
-A PREROUTING -p tcp -m comment --comment "meshinit: inbound TCP to the inbound chain" -j MESHINIT_INBOUND
-A OUTPUT -p tcp -m comment --comment "meshinit: outbound TCP to the outbound chain" -j MESHINIT_OUTPUT
-A MESHINIT_INBOUND -p tcp -m comment --comment "meshinit: inbound to the proxy" -j REDIRECT --to-ports 15006
-A MESHINIT_OUTPUT -p tcp -m comment --comment "meshinit: outbound to the proxy" -j REDIRECT --to-ports 15001
COMMIT
`, nil},
		{"another mesh's chains", header + `:OTHER_MESH_INBOUND - [0:0]
:OTHER_MESH_OUTPUT - [0:0]
-A PREROUTING -p tcp -j OTHER_MESH_INBOUND
-A OUTPUT -p tcp -j OTHER_MESH_OUTPUT
-A OTHER_MESH_OUTPUT -p tcp -j REDIRECT --to-ports 4140
COMMIT
`, []string{"jumps to chain OTHER_MESH_INBOUND before meshinit's jump", "jumps to chain OTHER_MESH_OUTPUT before meshinit's jump"}},
		{"terminating targets", header + `-A PREROUTING -p tcp -m tcp --dport 80 -j DNAT --to-destination 10.0.0.1:8080
-A OUTPUT -d 192.0.2.1/32 -j RETURN
-A OUTPUT -o eth0 -j ACCEPT
-A OUTPUT -p tcp -j REDIRECT --to-ports 1
COMMIT
`, []string{"DNAT takes the connection before meshinit's jump", "RETURN ends the chain before meshinit's jump",
			"ACCEPT ends the chain before meshinit's jump", "REDIRECT takes the connection before meshinit's jump"}},
		{"goto", header + ":X - [0:0]\n-A OUTPUT -g X\nCOMMIT\n", []string{"goes to chain X before meshinit's jump"}},
		{"other protocols cannot take TCP", header + `:UDP_ONLY - [0:0]
-A PREROUTING -p udp -j UDP_ONLY
-A OUTPUT -p icmp -j RETURN
-A OUTPUT ! -p tcp -j RETURN
-A OUTPUT -p sctp -j REDIRECT --to-ports 1
COMMIT
`, nil},
		{"protocols that may be TCP", header + `-A OUTPUT ! -p udp -j RETURN
-A OUTPUT -p 6 -j RETURN
-A OUTPUT -p all -j RETURN
COMMIT
`, []string{"RETURN ends the chain before meshinit's jump", "RETURN ends the chain before meshinit's jump", "RETURN ends the chain before meshinit's jump"}},
		{"targets that go on, and counters", header + `-A PREROUTING -p tcp -j LOG --log-prefix "seen "
-A OUTPUT -j NFLOG --nflog-group 1
-A OUTPUT -p tcp
-A OUTPUT -j MARK --set-xmark 0x1/0xffffffff
COMMIT
`, nil},
		{"chains meshinit's jumps are not in", header + `:OTHER - [0:0]
-A INPUT -p tcp -j RETURN
-A POSTROUTING -j MASQUERADE
-A OTHER -p tcp -j REDIRECT --to-ports 1
COMMIT
`, nil},
		{"a comment cannot make a rule look like meshinit's", header + `:X - [0:0]
-A OUTPUT -p tcp -m comment --comment "a -j MESHINIT_OUTPUT b" -j X
COMMIT
`, []string{"jumps to chain X before meshinit's jump"}},
		{"raw notrack", `*raw
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:NO_TRACK_CHAIN - [0:0]
-A PREROUTING -p tcp -j CT --notrack
-A OUTPUT -j NOTRACK
-A NO_TRACK_CHAIN -p tcp -m tcp --dport 8080 -j CT --notrack
-A PREROUTING -p udp -j CT --notrack
-A PREROUTING -j CT --zone 1
-A OUTPUT -p tcp -j TRACE
COMMIT
`, []string{"untracked packets skip NAT, so meshinit's redirect never sees them",
			"untracked packets skip NAT, so meshinit's redirect never sees them",
			"untracked packets skip NAT, so meshinit's redirect never sees them"}},
		{"other tables are not meshinit's concern", `*filter
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -p tcp -j DROP
-A OUTPUT -p tcp -j REJECT
COMMIT
*mangle
:PREROUTING ACCEPT [0:0]
-A PREROUTING -p tcp -j MARK --set-mark 1
COMMIT
`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range findConflicts(backend{IptablesNFT, IPv4}, parseSave(tc.save), false, false) {
				got = append(got, c.why)
			}
			if !slices.Equal(got, tc.wants) {
				t.Errorf("conflicts:\n got %q\nwant %q", got, tc.wants)
			}
		})
	}
}

// TestFindConflictsDNS: with DNS captured, meshinit's own raw rules (its
// conntrack zones, a re-run) are its own, and UDP rules of others in nat
// OUTPUT and CT rules in raw that may match UDP are in the way; without
// DNS capture, none of them is.
func TestFindConflictsDNS(t *testing.T) {
	c, err := ParseArgs([]string{"--capture-dns=all", "--ipv6=off"})
	if err != nil {
		t.Fatal(err)
	}
	own := restoreScript(tableState{}, NewPlan(c).IPv4)
	for _, tc := range []struct {
		name       string
		save       string
		dns, nodns []string // the "why" of each conflict, with and without DNS capture
	}{
		{"meshinit's own nat and raw rules (a re-run)", own, nil, nil},
		{"UDP rules of others in nat OUTPUT", `*nat
:OUTPUT ACCEPT [0:0]
:PREROUTING ACCEPT [0:0]
:OTHER_DNS - [0:0]
-A OUTPUT -p udp -m udp --dport 53 -j OTHER_DNS
-A OUTPUT ! -p tcp -j RETURN
-A OUTPUT -p icmp -j RETURN
-A PREROUTING -p udp -j REDIRECT --to-ports 1
COMMIT
`, []string{"jumps to chain OTHER_DNS before meshinit's jump", "RETURN ends the chain before meshinit's jump"}, nil},
		{"CT rules of others in raw", `*raw
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:OTHER_ZONES - [0:0]
-A OUTPUT -p udp -m udp --dport 53 -j CT --zone 7
-A OUTPUT -p tcp -j CT --zone 8
-A OTHER_ZONES -j CT --helper tftp
-A PREROUTING -p udp -m udp --sport 53 -j CT --zone 7
-A OUTPUT -p udp -j NOTRACK
-A OUTPUT -p udp -j TRACE
COMMIT
`, []string{
			"sets the conntrack zone of DNS packets before meshinit's rules, whose zones keep the app's DNS apart from the proxy's",
			"sets the conntrack zone of DNS packets before meshinit's rules, whose zones keep the app's DNS apart from the proxy's",
			"untracked packets skip NAT, so meshinit's redirect never sees them",
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dns := range []bool{true, false} {
				var got []string
				for _, c := range findConflicts(backend{IptablesNFT, IPv4}, parseSave(tc.save), dns, false) {
					got = append(got, c.why)
				}
				want := tc.nodns
				if dns {
					want = tc.dns
				}
				if !slices.Equal(got, want) {
					t.Errorf("dns=%v: conflicts:\n got %q\nwant %q", dns, got, want)
				}
			}
		})
	}
}

// TestFindConflictsClosed: when meshinit refuses IPv6 instead of
// redirecting it (--ipv6=off), a rule of another owner in filter's INPUT or
// OUTPUT that may let TCP pass before meshinit's refusal is in the way; one
// that drops or rejects, or does not match TCP, is not; and none is while
// meshinit redirects, when filter is not its concern.
func TestFindConflictsClosed(t *testing.T) {
	c, err := ParseArgs([]string{"--capture-dns=all", "--ipv6=off"})
	if err != nil {
		t.Fatal(err)
	}
	own := restoreScript(tableState{}, *NewPlan(c).IPv6Closed)
	for _, tc := range []struct {
		name   string
		save   string
		closed []string // the "why" of each conflict while refusing
	}{
		{"meshinit's own refusal (a re-run)", own, nil},
		{"rules of others in filter", `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:OTHER - [0:0]
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A INPUT -p tcp -j DROP
-A INPUT -p udp -j ACCEPT
-A OUTPUT -j OTHER
-A OUTPUT -p tcp -j REJECT --reject-with tcp-reset
-A OUTPUT -p udp -m udp --dport 53 -j RETURN
-A OUTPUT -j LOG
-A FORWARD -p tcp -j ACCEPT
-A OTHER -p tcp -j ACCEPT
COMMIT
`, []string{"ACCEPT ends the chain before meshinit's refusal", "jumps to OTHER before meshinit's refusal, which may accept the connection",
			"RETURN ends the chain before meshinit's refusal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, closed := range []bool{true, false} {
				var got []string
				for _, c := range findConflicts(backend{IptablesNFT, IPv6}, parseSave(tc.save), true, closed) {
					got = append(got, c.why)
				}
				var want []string
				if closed {
					want = tc.closed
				}
				if !slices.Equal(got, want) {
					t.Errorf("closed=%v: conflicts:\n got %q\nwant %q", closed, got, want)
				}
			}
		})
	}
}

func TestSaveArgs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"-A OUTPUT -p tcp -j RETURN", []string{"-A", "OUTPUT", "-p", "tcp", "-j", "RETURN"}},
		{`-A OUTPUT -m comment --comment "a b -j X" -j Y`, []string{"-A", "OUTPUT", "-m", "comment", "--comment", "a b -j X", "-j", "Y"}},
		{`-A OUTPUT -m comment --comment "say \"hi\" \\o/" -j Y`, []string{"-A", "OUTPUT", "-m", "comment", "--comment", `say "hi" \o/`, "-j", "Y"}},
		{`-A OUTPUT -m comment --comment "" -j Y`, []string{"-A", "OUTPUT", "-m", "comment", "--comment", "", "-j", "Y"}},
	} {
		if got := saveArgs(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("saveArgs(%s) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestConflictError checks the error names every rule with its backend,
// family and table, says what to do, and stays short however many there are.
func TestConflictError(t *testing.T) {
	var cs []conflict
	for i := range 20 {
		cs = append(cs, conflict{backend{IptablesLegacy, IPv6}, tableRule{"nat", fmt.Sprintf("-A OUTPUT -p tcp -j OTHER_%d", i)}, "jumps to chain OTHER before meshinit's jump"})
	}
	one := conflictError(cs[:1]).Error()
	for _, want := range []string{`legacy IPv6 nat table "-A OUTPUT -p tcp -j OTHER_0" (jumps to chain OTHER before meshinit's jump)`,
		"remove whatever adds these rules", "nothing was changed"} {
		if !strings.Contains(one, want) {
			t.Errorf("error lacks %q: %s", want, one)
		}
	}
	many := conflictError(cs).Error()
	if !strings.Contains(many, "20 rule(s)") || !strings.Contains(many, "and 12 more") || strings.Contains(many, "OTHER_8\"") {
		t.Errorf("error for 20 rules does not list 8 and count the rest: %s", many)
	}
}
