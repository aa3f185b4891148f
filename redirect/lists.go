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
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// IDList is a set of numeric UIDs or GIDs as written in flags:
// comma-separated decimal IDs ("1000,2000"). There is no "*": excluding
// every process from the proxy is not capturing at all. Whitespace and empty
// entries are ignored; IDs keep the order they were written in, in decimal
// without leading zeros, and a repeat is dropped: an order CEL can produce
// too (the policy reads these lists; a policy-mode injector renders them).
type IDList []uint32

// ParseIDList parses a comma-separated list of numeric IDs 0-4294967294.
func ParseIDList(s string) (IDList, error) {
	all, ids, err := parseList(s, func(entry string) (uint32, error) {
		id, err := parseID(entry)
		if err != nil {
			return 0, fmt.Errorf("%s is not a numeric ID 0-4294967294 (names are not looked up)", QuoteShort(entry))
		}
		return id, nil
	})
	if err != nil {
		return nil, err
	}
	if all {
		return nil, errors.New(`"*" is not allowed: list the IDs`)
	}
	return distinct(ids), nil
}

// String renders the list in the form ParseIDList reads.
func (l IDList) String() string {
	parts := make([]string, len(l))
	for i, id := range l {
		parts[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(parts, ",")
}

// InterfaceList is a set of network interface names as written in flags:
// comma-separated names ("eth1,net1"), each as `ip link` shows it. Names
// are matched exactly: iptables' "+" wildcard is not accepted, so a list
// says which interfaces it names. Whitespace and empty entries are ignored;
// names keep the order they were written in, and a repeat is dropped (as
// IDList).
type InterfaceList []string

// interfaceName is what meshinit accepts as an interface name: 1-15 bytes
// (the kernel's IFNAMSIZ less the terminating NUL) of letters, digits, "_",
// "." and "-", not starting with "-" or "." (iptables would read those as
// options or the kernel refuses them). The kernel allows more; these are
// the names CNI plugins and Multus create (eth0, net1, eth0.100, vxlan-x).
var interfaceName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$`)

// ParseInterfaceList parses a comma-separated list of interface names.
func ParseInterfaceList(s string) (InterfaceList, error) {
	all, names, err := parseList(s, func(entry string) (string, error) {
		if !interfaceName.MatchString(entry) {
			return "", fmt.Errorf("%s is not an interface name: 1-15 letters, digits, \"_\", \".\" or \"-\", not starting with \"-\" or \".\"", QuoteShort(entry))
		}
		return entry, nil
	})
	if err != nil {
		return nil, err
	}
	if all {
		return nil, errors.New(`"*" is not allowed: list the interfaces`)
	}
	return distinct(names), nil
}

// String renders the list in the form ParseInterfaceList reads.
func (l InterfaceList) String() string { return strings.Join(l, ",") }
