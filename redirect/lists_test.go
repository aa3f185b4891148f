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
	"math/rand/v2"
	"strings"
	"testing"
)

// TestListLimits checks the bounds every list value has, whatever it
// holds, for annotations and flags alike, and that errors quote only the
// value's start.
func TestListLimits(t *testing.T) {
	ports := func(n int) string { // n distinct single ports
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(1000 + i)
		}
		return strings.Join(parts, ",")
	}
	cidrs := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
		}
		return strings.Join(parts, ",")
	}
	padded := strings.Repeat(" ", MaxListBytes-2) + "80"
	for _, tc := range []struct {
		name, value string
		cidr        bool
		wantErr     string // "" when the value is accepted
	}{
		{"256 ports", ports(MaxListEntries), false, ""},
		{"257 ports", ports(MaxListEntries + 1), false, "has 257 entries, more than the 256 allowed"},
		{"256 CIDRs", cidrs(MaxListEntries), true, ""},
		{"257 CIDRs", cidrs(MaxListEntries + 1), true, "has 257 entries, more than the 256 allowed"},
		{"257 empty entries count", strings.Repeat(",", MaxListEntries), false, "has 257 entries"},
		{"4096 bytes", padded, false, ""},
		{"4097 bytes", " " + padded, false, "is 4097 bytes long, more than the 4096 allowed"},
		{"4097 bytes of CIDRs", strings.Repeat(" ", MaxListBytes-9) + "10.0.0.0/8", true, "is 4097 bytes long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			annotation, flag := AnnotationExcludeInboundPorts, "--exclude-inbound-ports="
			if tc.cidr {
				annotation, flag = AnnotationExcludeOutboundCIDRs, "--exclude-outbound-cidrs="
			}
			_, aerr := FromAnnotations(map[string]string{annotation: tc.value}, Defaults())
			_, ferr := ParseArgs([]string{flag + tc.value})
			for what, err := range map[string]error{"annotation": aerr, "flag": ferr} {
				if tc.wantErr == "" {
					if err != nil {
						t.Errorf("%s refused: %v", what, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: error %v, want containing %q", what, err, tc.wantErr)
				}
				requireShortQuote(t, err, tc.value)
			}
		})
	}
}

// requireShortQuote checks an error about value quotes at most its first 64
// bytes, followed by "...".
func requireShortQuote(t *testing.T, err error, value string) {
	t.Helper()
	msg := err.Error()
	if want := fmt.Sprintf("%q...", value[:64]); !strings.Contains(msg, want) {
		t.Errorf("error does not quote the value's first 64 bytes as %s: %s", want, msg)
	}
	if len(msg) > 400 {
		t.Errorf("error is %d bytes long: %s", len(msg), msg)
	}
}

// TestErrorsQuoteShort checks that errors about one long entry, and about a
// long flag value the flag package sees, quote only their start too.
func TestErrorsQuoteShort(t *testing.T) {
	long := strings.Repeat("9", 100)
	for _, tc := range []struct {
		name string
		err  func() error
	}{
		{"port entry", func() error { _, err := ParsePortList(long); return err }},
		{"CIDR entry", func() error { _, err := ParseCIDRList(long); return err }},
		{"annotation", func() error {
			_, err := FromAnnotations(map[string]string{AnnotationExcludeOutboundPorts: long}, Defaults())
			return err
		}},
		{"flag", func() error { _, err := ParseArgs([]string{"--include-inbound-ports=" + long}); return err }},
		{"stray argument", func() error { _, err := ParseArgs([]string{long}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), long) {
				t.Errorf("error quotes the whole value: %v", err)
			}
			requireShortQuote(t, err, long)
		})
	}
}

// TestOverlap compares firstOverlap with the pairwise check, on random
// lists (as written: unsorted) that overlap themselves as well as each
// other: both name the same range of the second list, the first that
// shares a port with the first list.
func TestOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomList := func() PortList {
		l := PortList{}
		for range rng.IntN(6) {
			first := uint16(1 + rng.IntN(60))
			l.Ranges = append(l.Ranges, PortRange{first, first + uint16(rng.IntN(8))})
		}
		l.Ranges = distinct(l.Ranges)
		return l
	}
	pairwise := func(l, o PortList) (PortRange, bool) {
		for _, q := range o.Ranges {
			for _, r := range l.Ranges {
				if r.First <= q.Last && q.First <= r.Last {
					return q, true
				}
			}
		}
		return PortRange{}, false
	}
	overlapping := 0
	for range 20000 {
		l, o := randomList(), randomList()
		got, ok := l.firstOverlap(o)
		want, wantOK := pairwise(l, o)
		if ok != wantOK || got != want {
			t.Fatalf("firstOverlap(%s, %s) = %s, %v; pairwise says %s, %v", l, o, got, ok, want, wantOK)
		}
		if ok {
			overlapping++
		}
	}
	if overlapping < 1000 {
		t.Errorf("only %d of the random cases overlap: the test checks too little", overlapping)
	}
}

// disjointPorts returns n single-port ranges, every second port from start.
func disjointPorts(n int, start uint16) PortList {
	l := PortList{Ranges: make([]PortRange, n)}
	for i := range l.Ranges {
		p := start + uint16(2*i)
		l.Ranges[i] = PortRange{p, p}
	}
	return l
}

// BenchmarkRefuseWorstCase is the measurement: 32k+32k disjoint
// single-port ranges in the inbound lists (which cost the webhook about
// 1.5 s of CPU per pod before the limits). Now refused before parsing.
func BenchmarkRefuseWorstCase(b *testing.B) {
	annotations := map[string]string{
		AnnotationIncludeInboundPorts: disjointPorts(32768, 1).String(),
		AnnotationExcludeInboundPorts: disjointPorts(32767, 2).String(),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromAnnotations(annotations, Defaults()); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkRefuseLargestAllowed is the costliest value the limits let
// through: 256 entries in each list, refused only by the overlap check.
func BenchmarkRefuseLargestAllowed(b *testing.B) {
	include := disjointPorts(MaxListEntries, 1)
	include.Ranges[MaxListEntries-1] = PortRange{60000, 60000}
	annotations := map[string]string{
		AnnotationIncludeInboundPorts: include.String(),
		AnnotationExcludeInboundPorts: disjointPorts(MaxListEntries-1, 2).String() + ",60000",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromAnnotations(annotations, Defaults()); err == nil || !strings.Contains(err.Error(), "entry 60000 overlaps") {
			b.Fatalf("want the overlap at 60000 refused, got %v", err)
		}
	}
}

// BenchmarkOverlap shows the overlap check linear in the lists' length:
// two disjoint lists of n ranges each (the worst case: no early exit).
func BenchmarkOverlap(b *testing.B) {
	for _, n := range []int{256, 4096, 32767} {
		l, o := disjointPorts(n, 1), disjointPorts(n, 2)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, ok := l.firstOverlap(o); ok {
					b.Fatal("disjoint lists overlap")
				}
			}
		})
	}
}
