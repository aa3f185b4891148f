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
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// PortRange is an inclusive range of TCP ports; a single port has First == Last.
type PortRange struct {
	First, Last uint16
}

func (r PortRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// iptablesSpec renders the range for --dport, which uses a colon for ranges.
func (r PortRange) iptablesSpec() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return fmt.Sprintf("%d:%d", r.First, r.Last)
}

// contains reports whether port p lies in the range.
func (r PortRange) contains(p uint16) bool { return r.First <= p && p <= r.Last }

// PortList is a set of TCP ports as written in annotations and flags:
// "*" (All), or comma-separated ports and ranges ("80,8000-8080").
// Whitespace around entries and empty entries are ignored. Entries keep the
// order they were written in, each in its canonical form (no leading zeros,
// "80-80" as "80"), and an entry equal to an earlier one is dropped: an
// order the policy's CEL can produce too (it renders the init container's
// arguments in policy mode), where sorting would be all it could not do.
type PortList struct {
	All    bool
	Ranges []PortRange
}

// AllPorts is the PortList "*".
var AllPorts = PortList{All: true}

// Ports returns a PortList of single ports, in the order given.
func Ports(ports ...uint16) PortList {
	l := PortList{}
	for _, p := range ports {
		l.Ranges = append(l.Ranges, PortRange{p, p})
	}
	l.Ranges = distinct(l.Ranges)
	return l
}

// ParsePortList parses "*" or a comma-separated list of ports and ranges.
func ParsePortList(s string) (PortList, error) {
	all, ranges, err := parseList(s, parsePortRange)
	if err != nil {
		return PortList{}, err
	}
	return PortList{All: all, Ranges: distinct(ranges)}, nil
}

// The most a list value (an annotation or a flag) may hold. Both bounds are
// checked before anything is parsed, so the cost of refusing any value is
// bounded; the RedirectPolicy's CEL checks the same numbers first.
const (
	// MaxListBytes is the longest list value, in bytes.
	MaxListBytes = 4096
	// MaxListEntries is the most comma-separated entries a list value may
	// have, counted before empty ones are dropped: count(",") + 1.
	MaxListEntries = 256
)

// parseList reads the list syntax shared by ports and CIDRs: "*" alone means
// all; otherwise comma-separated entries, trimmed, empty ones ignored, each
// read by parse. Values longer than MaxListBytes or with more than
// MaxListEntries entries are refused before any entry is read.
func parseList[T any](s string, parse func(string) (T, error)) (all bool, items []T, err error) {
	if len(s) > MaxListBytes {
		return false, nil, fmt.Errorf("the list is %d bytes long, more than the %d allowed", len(s), MaxListBytes)
	}
	if n := strings.Count(s, ",") + 1; n > MaxListEntries {
		return false, nil, fmt.Errorf("the list has %d entries, more than the %d allowed", n, MaxListEntries)
	}
	if strings.TrimSpace(s) == "*" {
		return true, nil, nil
	}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if entry == "*" {
			return false, nil, errors.New(`"*" must stand alone, not in a list`)
		}
		item, err := parse(entry)
		if err != nil {
			return false, nil, err
		}
		items = append(items, item)
	}
	return false, items, nil
}

func parsePortRange(entry string) (PortRange, error) {
	first, last, isRange := strings.Cut(entry, "-")
	lo, err := parsePort(first, entry)
	if err != nil {
		return PortRange{}, err
	}
	if !isRange {
		return PortRange{lo, lo}, nil
	}
	hi, err := parsePort(last, entry)
	if err != nil {
		return PortRange{}, err
	}
	if hi < lo {
		return PortRange{}, fmt.Errorf("%s: range end is below its start", QuoteShort(entry))
	}
	return PortRange{lo, hi}, nil
}

func parsePort(s, entry string) (uint16, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || s == "" || s[0] == '+' {
		return 0, fmt.Errorf("%s is not a port number or range (want 1-65535, or first-last)", QuoteShort(entry))
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %d in %s is out of range 1-65535", n, QuoteShort(entry))
	}
	return uint16(n), nil
}

// distinct returns items without the ones equal to an earlier one, in
// order. Lists hold at most MaxListEntries entries, so the set costs little.
func distinct[T comparable](items []T) []T {
	seen := make(map[T]bool, len(items))
	out := items[:0:0]
	for _, it := range items {
		if !seen[it] {
			seen[it] = true
			out = append(out, it)
		}
	}
	return out
}

// String renders the list in the form ParsePortList reads.
func (l PortList) String() string {
	if l.All {
		return "*"
	}
	parts := make([]string, len(l.Ranges))
	for i, r := range l.Ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// IsEmpty reports whether the list selects no port at all.
func (l PortList) IsEmpty() bool { return !l.All && len(l.Ranges) == 0 }

// Contains reports whether port p is in the list.
func (l PortList) Contains(p uint16) bool {
	return l.All || slices.ContainsFunc(l.Ranges, func(r PortRange) bool { return r.contains(p) })
}

// firstOverlap returns the first range of o, in its order, that shares a
// port with a range of l, if any: the entry a person wrote that is the
// problem (the policy's CEL names the same one). l's ranges, sorted and
// merged into disjoint intervals, are searched for each range of o, so it
// costs O((n+m) log n), not n*m.
func (l PortList) firstOverlap(o PortList) (PortRange, bool) {
	var merged []PortRange // l's ports as disjoint ranges, sorted
	for _, r := range sortedRanges(l.Ranges) {
		if n := len(merged); n > 0 && r.First <= merged[n-1].Last {
			merged[n-1].Last = max(merged[n-1].Last, r.Last)
			continue
		}
		merged = append(merged, r)
	}
	for _, r := range o.Ranges {
		// The first merged range that ends at or after r starts overlaps r
		// if it starts at or before r ends.
		i, _ := slices.BinarySearchFunc(merged, r.First, func(m PortRange, p uint16) int { return cmp.Compare(m.Last, p) })
		if i < len(merged) && merged[i].First <= r.Last {
			return r, true
		}
	}
	return PortRange{}, false
}

// complement returns the ports 1-65535 not in l, as few ranges as possible
// in ascending order: nothing for "*", everything for an empty list. l's
// ranges may be in any order and overlap.
func (l PortList) complement() []PortRange {
	if l.All {
		return nil
	}
	var out []PortRange
	next := 1 // the lowest port not yet known to be in l or in out
	for _, r := range sortedRanges(l.Ranges) {
		if int(r.First) > next {
			out = append(out, PortRange{uint16(next), r.First - 1})
		}
		next = max(next, int(r.Last)+1)
	}
	if next <= 65535 {
		out = append(out, PortRange{uint16(next), 65535})
	}
	return out
}

// sortedRanges is a copy of ranges sorted by first port, then last.
func sortedRanges(ranges []PortRange) []PortRange {
	return slices.SortedFunc(slices.Values(ranges), func(a, b PortRange) int {
		return cmp.Or(cmp.Compare(a.First, b.First), cmp.Compare(a.Last, b.Last))
	})
}
