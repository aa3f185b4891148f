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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/internal/testkit"
)

// planCases are the configurations whose rules are pinned by golden files in
// testdata/plan. Each is given as redirector flags, the form users see.
var planCases = []planCase{
	{"defaults", nil},
	{"all-inbound-ipv4-only", []string{"--ipv6=off"}},
	{"listed-inbound", []string{"--include-inbound-ports=80,443,8000-8100"}},
	{"no-inbound", []string{"--include-inbound-ports="}},
	{"exclude-inbound", []string{"--exclude-inbound-ports=22,9000-9100"}},
	{"exclude-outbound-ports", []string{"--exclude-outbound-ports=5432,6379,30000-32767"}},
	{"exclude-outbound-cidrs", []string{"--exclude-outbound-cidrs=10.96.0.0/12,169.254.169.254"}},
	{"include-outbound-cidrs", []string{"--include-outbound-cidrs=10.0.0.0/8,192.168.0.0/16"}},
	{"no-outbound", []string{"--include-outbound-cidrs="}},
	{"dual-stack", []string{"--ipv6=on", "--include-outbound-cidrs=10.0.0.0/8,fd00::/8", "--exclude-outbound-cidrs=10.96.0.0/12,fd00:96::/108"}},
	{"ipv6-only-outbound-cidr", []string{"--ipv6=on", "--include-outbound-cidrs=fd00::/8"}},
	{"custom-uid-gid-and-ports", []string{"--proxy-uid=2102", "--proxy-gid=2103", "--outbound-proxy-port=4140", "--inbound-proxy-port=4143", "--ignored-inbound-ports=4190,4191"}},
	{"no-ignored-ports", []string{"--ignored-inbound-ports="}},
	{"everything", []string{"--include-inbound-ports=80,8080", "--exclude-inbound-ports=81", "--exclude-outbound-ports=25",
		"--include-outbound-cidrs=10.0.0.0/8", "--exclude-outbound-cidrs=10.0.0.1", "--iptables-mode=legacy", "--ipv6=off"}},
	{"dns-all", []string{"--capture-dns=all"}},
	{"dns-nameservers", []string{"--capture-dns=nameservers"}},
	{"dns-nameservers-ipv4-only", []string{"--capture-dns=nameservers", "--ipv6=off"}},
	{"dns-only", []string{"--capture-dns=all", "--include-inbound-ports=", "--include-outbound-cidrs=", "--ipv6=off"}},
	{"dns-custom-proxy", []string{"--capture-dns=all", "--dns-proxy-port=5353", "--proxy-uid=2102", "--proxy-gid=2103",
		"--outbound-proxy-port=4140", "--inbound-proxy-port=4143", "--ipv6=off"}},
	{"exclude-outbound-uids-gids", []string{"--exclude-outbound-uids=2000, 1000", "--exclude-outbound-gids=3000", "--ipv6=off"}},
	{"dns-exclude-outbound-uids-gids", []string{"--capture-dns=nameservers", "--exclude-outbound-uids=2000", "--exclude-outbound-gids=3000,3001"}},
	{"include-outbound-ports", []string{"--include-outbound-ports=80,443,8000-8100", "--ipv6=off"}},
	{"include-outbound-ports-and-cidrs", []string{"--include-outbound-ports=443", "--include-outbound-cidrs=10.0.0.0/8,fd00::/8", "--ipv6=on"}},
	{"no-outbound-ports", []string{"--include-outbound-ports=", "--ipv6=off"}},
	{"exclude-inbound-interfaces", []string{"--exclude-inbound-interfaces=net1,eth1", "--ipv6=on"}},
	{"everything-new", []string{"--capture-dns=nameservers", "--dns-proxy-port=15054", "--exclude-outbound-uids=2000", "--exclude-outbound-gids=3000",
		"--include-outbound-ports=80,443", "--exclude-outbound-ports=25", "--include-outbound-cidrs=10.0.0.0/8,fd00::/8",
		"--exclude-inbound-interfaces=eth1", "--include-inbound-ports=8080", "--iptables-mode=legacy", "--ipv6=on"}},
}

// planCase is one configuration given as redirector flags. Under
// capture-dns=nameservers its nameservers are those of
// testdata/plan/resolv.conf.
type planCase struct {
	name string
	args []string
}

func (tc planCase) plan(t *testing.T) Plan {
	t.Helper()
	c, err := ParseArgs(tc.args)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ReadPlan(c, Options{ResolvConf: filepath.Join("testdata", "plan", "resolv.conf")})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanGolden(t *testing.T) {
	for _, tc := range planCases {
		t.Run(tc.name, func(t *testing.T) {
			testkit.Golden(t, filepath.Join("testdata", "plan", tc.name+".golden"), []byte(tc.plan(t).String()))
		})
	}
}

// TestPlanEveryRuleCommented checks the habit the cleanup relies on: every
// rule says why it exists, and every chain carries meshinit's prefix.
func TestPlanEveryRuleCommented(t *testing.T) {
	for _, tc := range planCases {
		for _, rs := range tc.plan(t).rulesets() {
			for _, table := range rs.Tables {
				for _, ch := range table.Chains {
					if len(ch) <= len(ChainPrefix) || ch[:len(ChainPrefix)] != ChainPrefix {
						t.Errorf("%s: chain %q lacks prefix %q", tc.name, ch, ChainPrefix)
					}
				}
				for _, r := range table.Rules {
					if r.Comment == "" {
						t.Errorf("%s: rule %v has no comment", tc.name, r)
					}
				}
			}
		}
	}
}

func TestRestoreScriptReplacesAndCleansUp(t *testing.T) {
	saved := `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:MESHINIT_INBOUND - [0:0]
:MESHINIT_OLD - [0:0]
:FOREIGN - [0:0]
-A PREROUTING -p tcp -m comment --comment "meshinit: inbound TCP to the inbound chain" -j MESHINIT_INBOUND
-A PREROUTING -j FOREIGN
-A OUTPUT -j MESHINIT_OLD
-A MESHINIT_INBOUND -p tcp -j REDIRECT --to-ports 15006
-A FOREIGN -j RETURN
COMMIT
`
	c, _ := ParseArgs([]string{"--include-outbound-cidrs=", "--ignored-inbound-ports="})
	st := parseSave(saved)
	testkit.Golden(t, "testdata/restore/replace.golden", []byte(restoreScript(st, NewPlan(c).IPv4)))
	testkit.Golden(t, "testdata/restore/cleanup.golden", []byte(restoreScript(st, Ruleset{})))
}

func TestGlobalIPv6Interface(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"00000000000000000000000000000001 01 80 10 80       lo\nfe800000000000000000000000000001 02 40 20 80     eth0\n", ""},
		{"fd000000000000000000000000000002 02 40 00 80     eth0\n", "eth0"},
	} {
		got, _ := globalIPv6Interface(stringsReader(tc.in))
		if got != tc.want {
			t.Errorf("globalIPv6Interface(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDecideIPv6: IPv6 is programmed whenever the kernel has it (the file
// /proc/net/if_inet6 exists), with or without a global address: the
// redirect under on and auto, its refusal under off; only a kernel without
// IPv6 gets nothing, except under on, which then fails in ip6tables as asked.
func TestDecideIPv6(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "absent")
	linkLocal := filepath.Join(dir, "link-local")
	global := filepath.Join(dir, "global")
	for path, text := range map[string]string{
		linkLocal: "00000000000000000000000000000001 01 80 10 80       lo\nfe800000000000000000000000000001 02 40 20 80     eth0\n",
		global:    "fd000000000000000000000000000002 02 40 00 80     eth0\n",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		mode   IPv6Mode
		file   string
		action Action
		reason string
	}{
		{IPv6Auto, global, ActionRedirected, "interface eth0 a global IPv6 address"},
		{IPv6Auto, linkLocal, ActionRedirected, "no interface has a global IPv6 address yet: the rules also cover one added later"},
		{IPv6Auto, none, ActionNone, "the kernel has no IPv6"},
		{IPv6Off, global, ActionRefused, "--ipv6=off: IPv6 is not redirected, and new IPv6 connections the redirect would take to a proxy are refused"},
		{IPv6Off, linkLocal, ActionRefused, "no interface has a global IPv6 address yet"},
		{IPv6Off, none, ActionNone, "--ipv6=off and the kernel has no IPv6"},
		{IPv6On, none, ActionRedirected, "--ipv6=on"},
		{IPv6On, linkLocal, ActionRedirected, "--ipv6=on"},
	} {
		o := decideIPv6(tc.mode, tc.file)
		if o.Family != IPv6 || o.Action != tc.action || !strings.Contains(o.Reason, tc.reason) {
			t.Errorf("decideIPv6(%s, %s) = %s %q, want %s with a reason saying %q", tc.mode, filepath.Base(tc.file), o.Action, o.Reason, tc.action, tc.reason)
		}
	}
}

// TestClosedRulesetMirrorsRedirect: the refusal of IPv6 off makes the same
// decisions as the IPv6 redirect of the same settings, with REJECT where
// the redirect has REDIRECT: every REDIRECT has its REJECT, and no other
// rule of the redirect is lost.
func TestClosedRulesetMirrorsRedirect(t *testing.T) {
	for _, tc := range planCases {
		c, err := ParseArgs(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		c.IPv6, c.IncludeOutboundCIDRs, c.ExcludeOutboundCIDRs = IPv6On, AllCIDRs, CIDRList{}
		redirect := newRuleset(c, IPv6, nil)
		closed := closedRuleset(redirect)
		nat, filter := redirect.Table(TableNat), closed.Table(TableFilter)
		redirects, rejects := 0, 0
		for _, r := range nat.Rules {
			if slices.Contains(r.Target, "REDIRECT") {
				redirects++
			}
		}
		for _, r := range filter.Rules {
			if slices.Contains(r.Target, "REJECT") {
				rejects++
			}
		}
		if redirects != rejects || len(filter.Rules) < len(nat.Rules) || !slices.Equal(filter.Chains, nat.Chains) {
			t.Errorf("%s: %d REDIRECTs in %d nat rules (chains %v) became %d REJECTs in %d filter rules (chains %v)",
				tc.name, redirects, len(nat.Rules), nat.Chains, rejects, len(filter.Rules), filter.Chains)
		}
	}
}
