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
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/redirect"
)

// idListAnnotations are the list annotations whose entries a RedirectPolicy
// allows one by one (ID lists and interface-name lists), with the prefix of
// the policy's variables for each.
var idListAnnotations = []struct {
	annotation, prefix string
	names              bool // interface names; otherwise numeric IDs
}{
	{redirect.AnnotationExcludeOutboundUIDs, "excludeUIDs", false},
	{redirect.AnnotationExcludeOutboundGIDs, "excludeGIDs", false},
	{redirect.AnnotationExcludeInboundInterfaces, "excludeInterfaces", true},
}

// listCase is one list value and how Go reads it (String of the list: sorted,
// without duplicates), or bad.
type listCase struct {
	name, value, want string
	bad               bool
}

// idListCases is the table of ID-list values (exclude-outbound-uids, -gids)
// that redirect.ParseIDList and the policy's CEL must read alike.
var idListCases = []listCase{
	{name: "empty", value: "", want: ""},
	{name: "only commas and spaces", value: " , ,, ", want: ""},
	{name: "one", value: "1000", want: "1000"},
	{name: "root", value: "0", want: "0"},
	{name: "two, unsorted, duplicated", value: "2000, 1000,2000", want: "2000,1000"},
	{name: "whitespace", value: "\t1000\n,\u00a02000 ", want: "1000,2000"},
	{name: "leading zeros", value: "0001000", want: "1000"},
	{name: "many leading zeros", value: "000000000000000000001", want: "1"},
	{name: "highest", value: "4294967294", want: "4294967294"},
	{name: "the invalid ID -1 as uint32", value: "4294967295", bad: true},
	{name: "beyond uint32", value: "4294967296", bad: true},
	{name: "eleven digits", value: "10000000000", bad: true},
	{name: "star", value: "*", bad: true},
	{name: "star in a list", value: "1000,*", bad: true},
	{name: "negative", value: "-1", bad: true},
	{name: "plus sign", value: "+1000", bad: true},
	{name: "a name", value: "fluentbit", bad: true},
	{name: "a range", value: "1000-2000", bad: true},
	{name: "hex", value: "0x10", bad: true},
	{name: "underscore", value: "1_000", bad: true},
	{name: "space inside", value: "10 00", bad: true},
	{name: "fullwidth digits", value: "１０００", bad: true},
	{name: "one bad among good ones", value: "1000,x,2000", bad: true},
	{name: "most entries", value: idList(maxListEntries), want: idList(maxListEntries)},
	{name: "too many entries", value: idList(maxListEntries + 1), bad: true},
	{name: "too many bytes", value: "1" + strings.Repeat(" ", maxListBytes), bad: true},
}

// interfaceListCases is the same for exclude-inbound-interfaces
// (redirect.ParseInterfaceList).
var interfaceListCases = []listCase{
	{name: "empty", value: "", want: ""},
	{name: "one", value: "eth1", want: "eth1"},
	{name: "unsorted, duplicated, spaced", value: " net1 ,eth1,net1", want: "net1,eth1"},
	{name: "vlan", value: "eth0.100", want: "eth0.100"},
	{name: "dash and underscore", value: "vxlan-x,_a", want: "vxlan-x,_a"},
	{name: "digit first", value: "1abc", want: "1abc"},
	{name: "fifteen bytes", value: "a23456789012345", want: "a23456789012345"},
	{name: "sixteen bytes", value: "a234567890123456", bad: true},
	{name: "case kept", value: "Eth1,eth1", want: "Eth1,eth1"},
	{name: "iptables wildcard", value: "net+", bad: true},
	{name: "star", value: "*", bad: true},
	{name: "dash first", value: "-eth1", bad: true},
	{name: "dot first", value: ".eth1", bad: true},
	{name: "slash", value: "eth/1", bad: true},
	{name: "colon", value: "eth1:0", bad: true},
	{name: "space inside", value: "eth 1", bad: true},
	{name: "non-ASCII letter", value: "éth1", bad: true},
	{name: "too many entries", value: strings.Repeat("e,", maxListEntries), bad: true},
}

// idList is n distinct IDs, sorted: 10000,10001,...
func idList(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(10000 + i)
	}
	return strings.Join(parts, ",")
}

// parseList parses a value as Go does for one of idListAnnotations,
// returning its entries (as strings) and String.
func parseList(names bool, value string) (entries []string, s string, err error) {
	if names {
		l, err := redirect.ParseInterfaceList(value)
		return l, l.String(), err
	}
	l, err := redirect.ParseIDList(value)
	for _, id := range l {
		entries = append(entries, strconv.FormatUint(uint64(id), 10))
	}
	return entries, l.String(), err
}

// TestGoIDListTables pins how redirect reads the ID and interface tables.
func TestGoIDListTables(t *testing.T) {
	for _, names := range []bool{false, true} {
		cases := idListCases
		if names {
			cases = interfaceListCases
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("names=%v/%s", names, tc.name), func(t *testing.T) {
				_, got, err := parseList(names, tc.value)
				if tc.bad != (err != nil) || !tc.bad && got != tc.want {
					t.Fatalf("%s: got %q, %v; want %q, bad %v", short(tc.value), got, err, tc.want, tc.bad)
				}
			})
		}
	}
}

// TestCELParsesIDListsLikeGo runs the ID and interface tables through the
// policy's CEL, in-process, for each annotation: CEL and Go accept the same
// values, read the same entries, name the same first bad entry, and (under a
// RedirectPolicy requiring interception that allows some entries) find the
// same entries not allowed.
func TestCELParsesIDListsLikeGo(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{
		AllowedOutboundUIDExclusions:      []v1alpha1.ID{0, 1000, 10005},
		AllowedOutboundGIDExclusions:      []v1alpha1.ID{0, 1000, 10005},
		AllowedInboundInterfaceExclusions: []v1alpha1.InterfaceName{"eth1", "_a", "Eth1"},
		Interception:                      v1alpha1.InterceptionRequired,
	})
	allowed := map[bool][]string{false: {"0", "1000", "10005"}, true: {"eth1", "_a", "Eth1"}}
	for _, a := range idListAnnotations {
		cases := idListCases
		if a.names {
			cases = interfaceListCases
		}
		for _, tc := range cases {
			t.Run(a.prefix+"/"+tc.name, func(t *testing.T) {
				goEntries, _, goErr := parseList(a.names, tc.value)
				r := request{
					object:    pod("p", annotations(a.annotation, tc.value)),
					namespace: namespace("team", namespaceLabel, "enabled"),
					params:    params,
				}
				var tooLong bool
				var bad []string
				var items, violations []any
				c.eval(t, r, []string{
					"variables." + a.prefix + "TooLong", "variables." + a.prefix + "Bad",
					"variables." + a.prefix + "Items", "variables." + a.prefix + "Violations",
				}, &tooLong, &bad, &items, &violations)
				if tooLong != overLimits(tc.value) || (goErr != nil) != (tooLong || len(bad) > 0) {
					t.Fatalf("%s: Go error %v, CEL too long %v, bad entries %q", short(tc.value), goErr, tooLong, bad)
				}
				if goErr != nil {
					if !tooLong && !strings.Contains(goErr.Error(), strconv.Quote(bad[0])) && !(bad[0] == "*" && strings.Contains(goErr.Error(), `"*"`)) {
						t.Errorf("%q: CEL's first bad entry %q is not the one Go rejects: %v", tc.value, bad[0], goErr)
					}
					if len(violations) != 0 {
						t.Errorf("%s: CEL reports violations %v for a list it cannot read", short(tc.value), violations)
					}
					return
				}
				if got := firstOfEach(items); !slices.Equal(got, goEntries) {
					t.Errorf("%s: CEL reads %q, Go %q", short(tc.value), got, goEntries)
				}
				var want []string
				for _, e := range goEntries {
					if !slices.Contains(allowed[a.names], e) {
						want = append(want, e)
					}
				}
				if got := set(violations); !slices.Equal(got, want) {
					t.Errorf("%s: CEL %sViolations %q, Go says %q", short(tc.value), a.prefix, got, want)
				}
			})
		}
	}
}

// firstOfEach renders CEL list items as strings, each repeat dropped (as
// redirect keeps a list: in written order).
func firstOfEach(items []any) []string {
	var out []string
	for _, it := range items {
		if s := fmt.Sprint(it); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// set renders CEL list items as strings, sorted as Go sorts the list
// (numerically for IDs, bytewise for names) and without duplicates.
func set(items []any) []string {
	var out []string
	numeric := true
	for _, it := range items {
		_, isNum := it.(int64)
		numeric = numeric && isNum
		out = append(out, fmt.Sprint(it))
	}
	if numeric {
		slices.SortFunc(out, func(a, b string) int {
			x, _ := strconv.ParseUint(a, 10, 64)
			y, _ := strconv.ParseUint(b, 10, 64)
			return cmp.Compare(x, y)
		})
	} else {
		slices.Sort(out)
	}
	return slices.Compact(out)
}

// TestCELReadsProxySettingsLikeGo: the policy reads a pod's proxy ports,
// UID and GID (annotations) as the webhook does (redirect.FromAnnotations):
// the same value, or -1 where Go refuses it.
func TestCELReadsProxySettingsLikeGo(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	for _, s := range []struct {
		annotation, prefix string
		values             []string
		get                func(redirect.Config) int64
	}{
		{redirect.AnnotationProxyUID, "proxyUID", []string{"2102", " 2102\t", "0002102", "0", "4294967294", "4294967295", "99999999999", "-1", "+5", "0x10", "root", "", "1_000"},
			func(c redirect.Config) int64 { return int64(c.ProxyUID) }},
		{redirect.AnnotationProxyGID, "proxyGID", []string{"2103", "4294967294", "4294967296", " 7 "},
			func(c redirect.Config) int64 { return int64(c.ProxyGID) }},
		{redirect.AnnotationOutboundProxyPort, "outboundProxyPort", []string{"16001", " 16001 ", "00080", "1", "65535", "65536", "0", "-80", "http", ""},
			func(c redirect.Config) int64 { return int64(c.OutboundProxyPort) }},
		{redirect.AnnotationInboundProxyPort, "inboundProxyPort", []string{"16006", "000016006", "99999", "1e3"},
			func(c redirect.Config) int64 { return int64(c.InboundProxyPort) }},
	} {
		for _, v := range s.values {
			t.Run(s.prefix+"/"+v, func(t *testing.T) {
				want := int64(-1)
				if rc, err := redirect.FromAnnotations(map[string]string{s.annotation: v}, redirect.Defaults()); err == nil {
					want = s.get(rc)
				}
				r := request{object: pod("p", annotations(s.annotation, v)), namespace: namespace("team", namespaceLabel, "enabled"), params: params}
				var got int64
				c.eval(t, r, []string{"variables." + s.prefix + "Annotation"}, &got)
				if got != want {
					t.Errorf("%s %q: CEL reads %d, Go %d", s.annotation, v, got, want)
				}
			})
		}
	}
}
