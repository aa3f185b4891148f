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
	"strconv"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/redirect"
)

// portListCase is one annotation value. want is how redirect.ParsePortList
// reads it (PortList.String: "*", "" for the empty list, or the entries as
// written, canonical, without repeats),
// or bad when it rejects it (or the value is over the list limits).
type portListCase struct {
	name, value string
	want        string
	bad         bool
}

// portListCases is the one table of port-list annotation values that the Go
// parser (redirect.ParsePortList) and the policy's CEL must read alike; every
// agreement test runs all of it.
var portListCases = []portListCase{
	{name: "empty", value: "", want: ""},
	{name: "only spaces", value: "   ", want: ""},
	{name: "only commas and spaces", value: " , ,, ", want: ""},
	{name: "star", value: "*", want: "*"},
	{name: "star with whitespace", value: " \t*\n ", want: "*"},
	{name: "star in a list", value: "*,80", bad: true},
	{name: "star after a port", value: "80,*", bad: true},
	{name: "star after an empty entry", value: ",*", bad: true},
	{name: "star before an empty entry", value: "*,", bad: true},
	{name: "two stars", value: "**", bad: true},
	{name: "star range", value: "*-80", bad: true},
	{name: "one port", value: "80", want: "80"},
	{name: "port with whitespace", value: " 80\t", want: "80"},
	{name: "two ports", value: "80,443", want: "80,443"},
	{name: "unsorted", value: "443,80", want: "443,80"},
	{name: "duplicates", value: "80,80, 80 ,443,80", want: "80,443"},
	{name: "empty entries", value: ",80,,443,", want: "80,443"},
	{name: "newlines between entries", value: "80,\n443\n,8080", want: "80,443,8080"},
	{name: "range", value: "8000-8080", want: "8000-8080"},
	{name: "range with whitespace", value: " 8000 - 8080 ", want: "8000-8080"},
	{name: "range of one port", value: "8000-8000", want: "8000"},
	{name: "duplicate ranges", value: "8000-8080,8000-8080", want: "8000-8080"},
	{name: "overlapping ranges", value: "8000-8080,8010-8020", want: "8000-8080,8010-8020"},
	{name: "ports and ranges", value: "9090, 80,8000-8080,443", want: "9090,80,8000-8080,443"},
	{name: "the same entry written differently", value: "80-80,0080, 80 ,443-0443,443", want: "80,443"},
	{name: "whole port range", value: "1-65535", want: "1-65535"},
	{name: "lowest port", value: "1", want: "1"},
	{name: "highest port", value: "65535", want: "65535"},
	{name: "leading zeros", value: "0080", want: "80"},
	{name: "many leading zeros", value: "0000000000000000000000080", want: "80"},
	{name: "range with leading zeros", value: "08000-08080", want: "8000-8080"},
	{name: "port 0", value: "0", bad: true},
	{name: "zeros", value: "0000", bad: true},
	{name: "above 65535", value: "65536", bad: true},
	{name: "far above 65535", value: "99999", bad: true},
	{name: "beyond uint32", value: "4294967376", bad: true},
	{name: "beyond uint64", value: "123456789012345678901234567890", bad: true},
	{name: "range from 0", value: "0-80", bad: true},
	{name: "range past 65535", value: "80-65536", bad: true},
	{name: "reversed range", value: "8080-8000", bad: true},
	{name: "open range end", value: "80-", bad: true},
	{name: "open range start", value: "-80", bad: true},
	{name: "dash", value: "-", bad: true},
	{name: "double dash", value: "80--90", bad: true},
	{name: "three bounds", value: "80-90-100", bad: true},
	{name: "plus sign", value: "+80", bad: true},
	{name: "negative", value: "-0", bad: true},
	{name: "hex", value: "0x50", bad: true},
	{name: "underscore", value: "8_0", bad: true},
	{name: "decimal point", value: "80.0", bad: true},
	{name: "exponent", value: "8e1", bad: true},
	{name: "letters", value: "http", bad: true},
	{name: "trailing letters", value: "80a", bad: true},
	{name: "semicolons", value: "80;443", bad: true},
	{name: "spaces between ports", value: "80 443", bad: true},
	{name: "space inside a port", value: "8 0", bad: true},
	{name: "one bad entry among good ones", value: "80,443,x,8080", bad: true},
	{name: "quoted", value: `"80"`, bad: true},
	{name: "colon range", value: "8000:8080", bad: true},
	{name: "fullwidth digits", value: "８０", bad: true},
	{name: "arabic-indic digits", value: "٨٠", bad: true},
	{name: "vertical tab and form feed", value: "\v80\f", want: "80"},
	{name: "no-break space", value: "\u00a080\u00a0", want: "80"},
	{name: "next line", value: "\u008580", want: "80"},
	{name: "ideographic space", value: "\u300080,\u3000443", want: "80,443"},
	{name: "line separator inside a range", value: "80\u2028-\u202990", want: "80-90"},
	{name: "zero-width space", value: "\u200b80", bad: true},
	{name: "byte order mark", value: "\ufeff80", bad: true},
	{name: "long list", value: longList(250), want: longList(250)},
	{name: "most entries", value: longList(maxListEntries), want: longList(maxListEntries)},
	{name: "too many entries", value: longList(maxListEntries + 1), bad: true},
	{name: "most empty entries", value: emptyEntries(maxListEntries), want: ""},
	{name: "too many empty entries", value: emptyEntries(maxListEntries + 1), bad: true},
	{name: "most bytes", value: paddedList(maxListBytes), want: "80"},
	{name: "too many bytes", value: paddedList(maxListBytes + 1), bad: true},
	{name: "too many bytes, few characters", value: "80" + strings.Repeat("\u3000", (maxListBytes-1)/3), bad: true},
}

// longList is n distinct ports, sorted: 10000,10001,...
func longList(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(10000 + i))
	}
	return b.String()
}

// TestGoParserTable pins how redirect.ParsePortList (its list limits
// included) reads the shared table, so a change to the parser shows here
// before the CEL comparison.
func TestGoParserTable(t *testing.T) {
	for _, tc := range portListCases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := redirect.ParsePortList(tc.value)
			if tc.bad {
				if err == nil {
					t.Fatalf("ParsePortList(%q) = %q, want an error", tc.value, l)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePortList(%q): %v", tc.value, err)
			}
			if got := l.String(); got != tc.want {
				t.Fatalf("ParsePortList(%q) = %q, want %q", tc.value, got, tc.want)
			}
		})
	}
}
