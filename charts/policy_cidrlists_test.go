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

package charts_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/redirect"
)

// cidrListCase is one CIDR-list annotation value. want is how
// redirect.ParseCIDRList reads it (CIDRList.String: "*", "" for the empty
// list, or the prefixes as written, masked, without repeats), or bad when it rejects it (or the value is over
// the list limits).
type cidrListCase struct {
	name, value string
	want        string
	bad         bool
}

// cidrListCases is the one table of CIDR-list values that the Go parser
// (redirect.ParseCIDRList) and the policy's CEL must read alike; every
// agreement test runs all of it.
var cidrListCases = []cidrListCase{
	{name: "empty", value: "", want: ""},
	{name: "only spaces", value: "  \t", want: ""},
	{name: "only commas and spaces", value: " , ,, ", want: ""},
	{name: "star", value: "*", want: "*"},
	{name: "star with whitespace", value: " \t*\n ", want: "*"},
	{name: "star in a list", value: "*,10.0.0.0/8", bad: true},
	{name: "star after a CIDR", value: "10.0.0.0/8,*", bad: true},
	{name: "two stars", value: "**", bad: true},
	{name: "star prefix", value: "*/8", bad: true},
	{name: "IPv4 CIDR", value: "10.0.0.0/8", want: "10.0.0.0/8"},
	{name: "IPv6 CIDR", value: "fd00::/8", want: "fd00::/8"},
	{name: "IPv6 upper case", value: "FD00::/8", want: "fd00::/8"},
	{name: "IPv6 long form", value: "fd00:0:0:0:0:0:0:0/16", want: "fd00::/16"},
	{name: "bare IPv4 address", value: "10.1.2.3", want: "10.1.2.3/32"},
	{name: "bare IPv6 address", value: "fd00::1", want: "fd00::1/128"},
	{name: "IPv4 host bits masked", value: "10.1.2.3/8", want: "10.0.0.0/8"},
	{name: "IPv6 host bits masked", value: "fd00::1/8", want: "fd00::/8"},
	{name: "all IPv4", value: "0.0.0.0/0", want: "0.0.0.0/0"},
	{name: "all IPv6", value: "::/0", want: "::/0"},
	{name: "everything", value: "0.0.0.0/0,::/0", want: "0.0.0.0/0,::/0"},
	{name: "everything by host bits", value: "10.0.0.1/0, fd00::1/0", want: "0.0.0.0/0,::/0"},
	{name: "unsorted with duplicates", value: "192.168.0.0/16, 10.0.0.0/8,10.0.0.0/8", want: "192.168.0.0/16,10.0.0.0/8"},
	{name: "one address two lengths", value: "10.0.0.0/16,10.0.0.0/8", want: "10.0.0.0/16,10.0.0.0/8"},
	{name: "duplicates once masked", value: "10.1.0.0/8,10.2.0.0/8", want: "10.0.0.0/8"},
	{name: "both families", value: "fd00::/8,10.0.0.0/8", want: "fd00::/8,10.0.0.0/8"},
	{name: "whitespace around entries", value: " 10.0.0.0/8 ,\tfd00::/8\n", want: "10.0.0.0/8,fd00::/8"},
	{name: "no-break and ideographic spaces", value: "\u00a010.0.0.0/8\u3000", want: "10.0.0.0/8"},
	{name: "empty entries", value: ",10.0.0.0/8,,", want: "10.0.0.0/8"},
	{name: "one host IPv4", value: "169.254.169.254/32", want: "169.254.169.254/32"},
	{name: "one host IPv6", value: "::1/128", want: "::1/128"},
	{name: "IPv4 in IPv6 notation", value: "64:ff9b::1.2.3.4", want: "64:ff9b::102:304/128"},
	{name: "IPv4-compatible IPv6", value: "::10.0.0.1", want: "::a00:1/128"},
	{name: "IPv4 prefix too long", value: "10.0.0.0/33", bad: true},
	{name: "IPv6 prefix too long", value: "::/129", bad: true},
	{name: "negative prefix", value: "10.0.0.0/-1", bad: true},
	{name: "prefix with a sign", value: "10.0.0.0/+8", bad: true},
	{name: "prefix with a leading zero", value: "10.0.0.0/08", bad: true},
	{name: "empty prefix", value: "10.0.0.0/", bad: true},
	{name: "no address", value: "/8", bad: true},
	{name: "two prefixes", value: "10.0.0.0/8/8", bad: true},
	{name: "space before the slash", value: "10.0.0.0 /8", bad: true},
	{name: "space after the slash", value: "10.0.0.0/ 8", bad: true},
	{name: "octet with a leading zero", value: "10.0.0.01", bad: true},
	{name: "CIDR octet with a leading zero", value: "010.0.0.0/8", bad: true},
	{name: "octet above 255", value: "10.0.0.256", bad: true},
	{name: "three octets", value: "10.0.0", bad: true},
	{name: "hex octets", value: "0x0a.0.0.1", bad: true},
	{name: "host name", value: "example.com", bad: true},
	{name: "address and port", value: "10.0.0.1:80", bad: true},
	{name: "bracketed IPv6", value: "[fd00::1]", bad: true},
	{name: "zone", value: "fe80::1%eth0", bad: true},
	{name: "zone in a CIDR", value: "fe80::%eth0/64", bad: true},
	{name: "triple colon", value: ":::1", bad: true},
	{name: "two double colons", value: "fd00::1::2", bad: true},
	{name: "one bad entry among good ones", value: "10.0.0.0/8,x,fd00::/8", bad: true},
	{name: "semicolons", value: "10.0.0.0/8;fd00::/8", bad: true},
	{name: "fullwidth digits", value: "１０.0.0.1", bad: true},
	{name: "zero-width space", value: "\u200b10.0.0.1", bad: true},
	{name: "IPv4-mapped address", value: "::ffff:10.0.0.1", bad: true},
	{name: "IPv4-mapped address in hex", value: "::ffff:a00:1", bad: true},
	{name: "IPv4-mapped prefix", value: "::ffff:10.0.0.0/104", bad: true},
	{name: "IPv4-mapped among good ones", value: "10.0.0.0/8, ::ffff:192.168.0.1", bad: true},
	{name: "long list", value: cidrList(200), want: cidrList(200)},
	{name: "most entries", value: cidrList(maxListEntries), want: cidrList(maxListEntries)},
	{name: "too many entries", value: cidrList(maxListEntries + 1), bad: true},
	{name: "too many empty entries", value: emptyEntries(maxListEntries + 1), bad: true},
	{name: "most bytes", value: "10.0.0.1" + strings.Repeat(" ", maxListBytes-8), want: "10.0.0.1/32"},
	{name: "too many bytes", value: "10.0.0.1" + strings.Repeat(" ", maxListBytes-7), bad: true},
}

// cidrList is n distinct /32s of 10.64.0.0/10, sorted: 10.64.0.0/32,...
func cidrList(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "10.64.%d.%d/32", i/256, i%256)
	}
	return b.String()
}

// TestGoCIDRParserTable pins how redirect.ParseCIDRList (its list limits
// included) reads the shared table.
func TestGoCIDRParserTable(t *testing.T) {
	for _, tc := range cidrListCases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := redirect.ParseCIDRList(tc.value)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseCIDRList(%s) = %q, want an error", short(tc.value), l)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCIDRList(%s): %v", short(tc.value), err)
			}
			if got := l.String(); got != tc.want {
				t.Fatalf("ParseCIDRList(%s) = %q, want %q", short(tc.value), got, tc.want)
			}
		})
	}
}

// entries splits a list value as the parsers do: trimmed, empty ones dropped.
func entries(v string) []string {
	var out []string
	for e := range strings.SplitSeq(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// cidrListAnnotations are the CIDR-list annotations the policy parses, with
// the prefix of the policy's variables for each, and whether the list
// includes (captures what it lists) or excludes.
var cidrListAnnotations = []struct {
	annotation, prefix string
	include            bool
}{
	{redirect.AnnotationIncludeOutboundCIDRs, "includeCIDRs", true},
	{redirect.AnnotationExcludeOutboundCIDRs, "excludeCIDRs", false},
}

// cidrViolations is what the policy must find wrong with a list Go read
// (value, parsed into l) when the RedirectPolicy requires outbound ports and
// allows excluding allowed: for an exclude list, its entries (in order) that
// no allowed CIDR contains, or "*"; for an include list other than "*", the
// families it narrows that allowed does not cover whole.
func cidrViolations(value string, l redirect.CIDRList, include bool, allowed []netip.Prefix) []string {
	whole := func(f int) bool {
		return slices.ContainsFunc(allowed, func(a netip.Prefix) bool { return a.Bits() == 0 && family(a) == f })
	}
	var out []string
	switch {
	case include && !l.All:
		for _, f := range []int{4, 6} {
			if !whole(f) && !slices.ContainsFunc(l.Prefixes, func(p netip.Prefix) bool { return p.Bits() == 0 && family(p) == f }) {
				out = append(out, fmt.Sprintf("IPv%d", f))
			}
		}
	case !include && l.All:
		if !whole(4) || !whole(6) {
			out = append(out, "*")
		}
	case !include:
		for _, e := range entries(value) {
			one, _ := redirect.ParseCIDRList(e)
			p := one.Prefixes[0]
			if !slices.ContainsFunc(allowed, func(a netip.Prefix) bool {
				return family(a) == family(p) && a.Bits() <= p.Bits() && a.Contains(p.Addr())
			}) {
				out = append(out, p.String())
			}
		}
	}
	return out
}

func family(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 4
	}
	return 6
}

// allowedSets are allowedOutboundCIDRExclusions the agreement tests run the
// table against.
var allowedSets = [][]string{
	nil,
	{"10.64.0.0/10", "fd00::/16", "192.168.1.1/32", "172.16.0.0/12"},
	{"0.0.0.0/0"},
	{"0.0.0.0/0", "::/0"},
}

func prefixes(cidrs []string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

func cidrs(ss []string) []v1alpha1.CIDR {
	out := make([]v1alpha1.CIDR, len(ss))
	for i, s := range ss {
		out[i] = v1alpha1.CIDR(s)
	}
	return out
}

// TestCELParsesCIDRsLikeGo runs the shared table through the policy's CEL,
// evaluated in-process as the API server does, and through
// redirect.ParseCIDRList, for both CIDR annotations and each allowedSet:
// both must accept the same values, read the
// same prefixes, name the same first bad entry, and find the same
// violations.
func TestCELParsesCIDRsLikeGo(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	ns := namespace("team", namespaceLabel, "enabled")
	for i, allowed := range allowedSets {
		params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{
			RequiredOutboundPorts: ports(443), AllowedOutboundCIDRExclusions: cidrs(allowed), Interception: v1alpha1.InterceptionOptional,
		})
		for _, a := range cidrListAnnotations {
			for _, tc := range cidrListCases {
				t.Run(fmt.Sprintf("allowed %d/%s/%s", i, a.prefix, tc.name), func(t *testing.T) {
					goList, goErr := redirect.ParseCIDRList(tc.value)
					var all, tooLong bool
					var bad, got, violations []string
					c.eval(t, request{object: pod("p", annotations(a.annotation, tc.value)), namespace: ns, params: params}, []string{
						"variables." + a.prefix + "All", "variables." + a.prefix + "TooLong", "variables." + a.prefix + "Bad",
						"variables." + a.prefix + "Prefixes.map(p, string(p))", "variables." + a.prefix + "Violations",
					}, &all, &tooLong, &bad, &got, &violations)

					if tooLong != overLimits(tc.value) {
						t.Fatalf("%s: CEL too long %v", short(tc.value), tooLong)
					}
					if (goErr != nil) != (tooLong || len(bad) > 0) {
						t.Fatalf("%s: Go error %v, CEL too long %v, bad entries %q", short(tc.value), goErr, tooLong, bad)
					}
					if goErr != nil {
						if !tooLong && !strings.Contains(goErr.Error(), strconv.Quote(bad[0])) {
							t.Errorf("%s: CEL's first bad entry %q is not the one Go rejects: %v", short(tc.value), bad[0], goErr)
						}
						if len(violations) != 0 {
							t.Errorf("%s: CEL reports violations %v for a list it cannot read", short(tc.value), violations)
						}
						return
					}
					if all != goList.All {
						t.Errorf("%s: CEL all=%v, Go all=%v", short(tc.value), all, goList.All)
					}
					var distinct []string // the prefixes without repeats, the first kept, as Go keeps them
					for _, p := range got {
						if !slices.Contains(distinct, p) {
							distinct = append(distinct, p)
						}
					}
					if got, want := strings.Join(distinct, ","), goList.String(); !all && got != want {
						t.Errorf("%s: CEL prefixes %s, Go %s", short(tc.value), got, want)
					}
					if want := cidrViolations(tc.value, goList, a.include, prefixes(allowed)); !slices.Equal(violations, want) {
						t.Errorf("%s: CEL %sViolations = %q, want %q", short(tc.value), a.prefix, violations, want)
					}
				})
			}
		}
	}
}

// TestAPIServerParsesCIDRsLikeGo runs the shared table through a real API
// server: in a namespace whose RedirectPolicy requires outbound port 443
// and allows excluding allowedSets[1], the policy must refuse exactly the
// values Go refuses, naming the annotation, and
// deny exactly the values that take destinations around the proxy, naming
// them.
func TestAPIServerParsesCIDRsLikeGo(t *testing.T) {
	c := apiServer(t)
	c.withoutDefaultPolicy(t)
	ns := testkit.RunName("cidrs")
	c.createNamespace(t, namespace(ns, namespaceLabel, "enabled"))
	allowed := allowedSets[1]
	c.applyPolicy(t, ns, "probes", v1alpha1.RedirectPolicySpec{
		RequiredOutboundPorts: ports(443), AllowedOutboundCIDRExclusions: cidrs(allowed), Interception: v1alpha1.InterceptionOptional,
	})
	c.awaitVerdict(t, ns, pod("probe", injected, annotations(redirect.AnnotationExcludeOutboundCIDRs, "1.2.3.4/32")), verdict{namespaceBinding,
		`traffic.meshinit.io/exclude-outbound-cidrs "1.2.3.4/32" takes 1.2.3.4/32 around the proxy, but RedirectPolicy ` + ns + `/probes requires outbound port 443 to reach it and allows excluding only ` +
			strings.Join(allowed, ", ") + " (allowedOutboundCIDRExclusions)", metav1.StatusReasonForbidden})

	for _, a := range cidrListAnnotations {
		for _, tc := range cidrListCases {
			t.Run(a.prefix+"/"+tc.name, func(t *testing.T) {
				l, goErr := redirect.ParseCIDRList(tc.value)
				got, err := verdictOf(c.createDryRun(ns, pod("p", injected, annotations(a.annotation, tc.value))))
				if err != nil {
					t.Fatal(err)
				}
				var prefix, suffix string
				reason := metav1.StatusReasonForbidden
				var violations []string
				if goErr == nil {
					violations = cidrViolations(tc.value, l, a.include, prefixes(allowed))
				}
				switch {
				case goErr != nil:
					var why string
					prefix, why = unreadable(a.annotation, tc.value, " is not an IP address or a CIDR (IPv4-mapped IPv6 addresses are refused: write them as IPv4)")
					suffix, reason = why+", so RedirectPolicy "+ns+"/probes cannot check that outbound port 443 is intercepted", metav1.StatusReasonInvalid
				case len(violations) == 0:
					if got != (verdict{}) {
						t.Errorf("%s (Go: %q): got %+v, want it admitted", short(tc.value), l, got)
					}
					return
				case a.include:
					prefix, suffix = a.annotation+" ", " leaves "+strings.Join(violations, " and ")+` destinations out of the proxy (set it to "*")`
				default:
					prefix, suffix = a.annotation+" ", " takes "+strings.Join(violations, ", ")+" around the proxy"
				}
				if reason == metav1.StatusReasonForbidden {
					suffix += ", but RedirectPolicy " + ns + "/probes requires outbound port 443 to reach it and allows excluding only " +
						strings.Join(allowed, ", ") + " (allowedOutboundCIDRExclusions)"
				}
				if got.binding != namespaceBinding || got.reason != reason || !strings.HasPrefix(got.message, prefix) || !strings.HasSuffix(got.message, suffix) {
					t.Errorf("%s (Go: %q, %v):\n got  %+v\n want %s...%s (%s)", short(tc.value), l, goErr, got, prefix, suffix, reason)
				}
			})
		}
	}
}
