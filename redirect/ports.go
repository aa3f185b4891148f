package redirect

import (
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

func (r PortRange) overlaps(o PortRange) bool { return r.First <= o.Last && o.First <= r.Last }

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

// parseList reads the list syntax shared by ports and CIDRs: "*" alone means
// all; otherwise comma-separated entries, trimmed, empty ones ignored, each
// read by parse.
func parseList[T any](s string, parse func(string) (T, error)) (all bool, items []T, err error) {
	if strings.TrimSpace(s) == "*" {
		return true, nil, nil
	}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if entry == "*" {
			return false, nil, fmt.Errorf("%q: \"*\" must stand alone, not in a list", s)
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
		return PortRange{}, fmt.Errorf("%q: range end is below its start", entry)
	}
	return PortRange{lo, hi}, nil
}

func parsePort(s, entry string) (uint16, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || s == "" || s[0] == '+' {
		return 0, fmt.Errorf("%q is not a port number or range (want 1-65535, or first-last)", entry)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %d in %q is out of range 1-65535", n, entry)
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

// overlap returns the first entry of l that overlaps an entry of o.
func (l PortList) overlap(o PortList) (PortRange, bool) {
	for _, r := range l.Ranges {
		for _, q := range o.Ranges {
			if r.overlaps(q) {
				return r, true
			}
		}
	}
	return PortRange{}, false
}
