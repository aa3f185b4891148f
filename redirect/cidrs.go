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
	"net/netip"
	"strings"
)

// CIDRList is a set of address prefixes as written in annotations and flags:
// "*" (All), or comma-separated CIDRs ("10.0.0.0/8,fd00::/8"). A bare address
// means a single host (/32 or /128). Whitespace and empty entries are ignored;
// prefixes are masked and keep the order they were written in, a prefix
// equal to an earlier one dropped (see PortList: the policy's CEL renders
// them so too).
type CIDRList struct {
	All      bool
	Prefixes []netip.Prefix
}

// AllCIDRs is the CIDRList "*".
var AllCIDRs = CIDRList{All: true}

// ParseCIDRList parses "*" or a comma-separated list of CIDRs.
func ParseCIDRList(s string) (CIDRList, error) {
	all, prefixes, err := parseList(s, parseCIDR)
	if err != nil {
		return CIDRList{}, err
	}
	return CIDRList{All: all, Prefixes: distinct(prefixes)}, nil
}

func parseCIDR(entry string) (netip.Prefix, error) {
	if !strings.Contains(entry, "/") {
		a, err := netip.ParseAddr(entry)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%s is not an IP address or CIDR (e.g. 10.0.0.0/8)", QuoteShort(entry))
		}
		if a.Is4In6() {
			return netip.Prefix{}, mappedError(entry)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(entry)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%s is not a CIDR (e.g. 10.0.0.0/8 or fd00::/8)", QuoteShort(entry))
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, mappedError(entry)
	}
	return p.Masked(), nil
}

// mappedError refuses an IPv4-mapped IPv6 address (::ffff:10.0.0.1): the
// policy's CEL (Kubernetes' ip() and cidr()) cannot read one, and which
// family's rules it belongs in would be a guess.
func mappedError(entry string) error {
	return fmt.Errorf("%s is an IPv4-mapped IPv6 address: write it as IPv4 (e.g. 10.0.0.1)", QuoteShort(entry))
}

// String renders the list in the form ParseCIDRList reads.
func (l CIDRList) String() string {
	if l.All {
		return "*"
	}
	parts := make([]string, len(l.Prefixes))
	for i, p := range l.Prefixes {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// family returns the prefixes of one IP family.
func (l CIDRList) family(ipv6 bool) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range l.Prefixes {
		if p.Addr().Is6() == ipv6 {
			out = append(out, p)
		}
	}
	return out
}

// IsEmpty reports whether the list selects no destination at all.
func (l CIDRList) IsEmpty() bool { return !l.All && len(l.Prefixes) == 0 }
