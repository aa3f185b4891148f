package redirect

import (
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
// Whitespace around entries and empty entries are ignored; duplicates are
// dropped and entries sorted, so equal sets have equal strings.
type PortList struct {
	All    bool
	Ranges []PortRange
}

// AllPorts is the PortList "*".
var AllPorts = PortList{All: true}

// Ports returns a PortList of single ports.
func Ports(ports ...uint16) PortList {
	l := PortList{}
	for _, p := range ports {
		l.Ranges = append(l.Ranges, PortRange{p, p})
	}
	l.normalize()
	return l
}

// ParsePortList parses "*" or a comma-separated list of ports and ranges.
func ParsePortList(s string) (PortList, error) {
	all, ranges, err := parseList(s, parsePortRange)
	if err != nil {
		return PortList{}, err
	}
	l := PortList{All: all, Ranges: ranges}
	l.normalize()
	return l, nil
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

func (l *PortList) normalize() {
	slices.SortFunc(l.Ranges, func(a, b PortRange) int {
		if a.First != b.First {
			return int(a.First) - int(b.First)
		}
		return int(a.Last) - int(b.Last)
	})
	l.Ranges = slices.Compact(l.Ranges)
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

// overlap returns the ports of one entry of l that are also in an entry of
// o, if any. Both lists are sorted by first port, so one merge sweep finds
// it: every range is visited once, in order of its first port, remembering
// the entry reaching furthest of each list so far; a range starting at or
// before where the other list's furthest entry ends overlaps it.
func (l PortList) overlap(o PortList) (PortRange, bool) {
	var furthest [2]*PortRange // of l and of o, among the ranges visited
	lists := [2][]PortRange{l.Ranges, o.Ranges}
	var next [2]int
	for next[0] < len(lists[0]) || next[1] < len(lists[1]) {
		i := 0 // the list whose next range starts first
		if next[0] == len(lists[0]) || next[1] < len(lists[1]) && lists[1][next[1]].First < lists[0][next[0]].First {
			i = 1
		}
		r := &lists[i][next[i]]
		next[i]++
		if f := furthest[1-i]; f != nil && r.First <= f.Last {
			return PortRange{r.First, min(r.Last, f.Last)}, true
		}
		if furthest[i] == nil || r.Last > furthest[i].Last {
			furthest[i] = r
		}
	}
	return PortRange{}, false
}

// complement returns the ports 1-65535 not in l, as few ranges as possible
// in ascending order: nothing for "*", everything for an empty list.
func (l PortList) complement() []PortRange {
	if l.All {
		return nil
	}
	var out []PortRange
	next := 1 // the lowest port not yet known to be in l or in out
	for _, r := range l.Ranges {
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
