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
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// ReadPlan is NewPlan for this pod: under capture-dns=nameservers it reads
// the nameservers from opts.ResolvConf (the pod's /etc/resolv.conf, which
// the kubelet gives every container of the pod, init containers included)
// and plans DNS capture to them. It reads nothing otherwise. Finding no
// nameserver is not an error: there is then no DNS to capture, and the log
// says so.
func ReadPlan(c Config, opts Options) (Plan, error) {
	opts.setDefaults()
	if c.CaptureDNS != DNSCaptureNameservers {
		return NewPlan(c), nil
	}
	f, err := os.Open(opts.ResolvConf)
	if err != nil {
		return Plan{}, fmt.Errorf("--capture-dns=nameservers: reading the pod's nameservers: %w", err)
	}
	defer f.Close()
	servers, err := parseNameservers(f)
	if err != nil {
		return Plan{}, fmt.Errorf("--capture-dns=nameservers: reading the pod's nameservers from %s: %w", opts.ResolvConf, err)
	}
	if len(servers) == 0 {
		opts.Logger.Warn("no nameserver to capture DNS to", "file", opts.ResolvConf)
	} else {
		opts.Logger.Info("capturing DNS to the pod's nameservers", "file", opts.ResolvConf, "nameservers", servers)
	}
	return NewPlan(c, servers...), nil
}

// maxResolvConf bounds how much of resolv.conf is read; the kubelet writes
// a few hundred bytes.
const maxResolvConf = 64 << 10

// parseNameservers reads the addresses of the "nameserver" lines of a
// resolv.conf, in order, without duplicates, as the C libraries do: a line
// is "nameserver" and an address, separated by blanks; lines starting with
// "#" or ";" are comments, and a line whose address does not parse is
// skipped (glibc and musl skip it too). An IPv6 address's zone (fe80::1%eth0)
// is dropped: iptables matches addresses, not zones. An IPv4-mapped IPv6
// address is the IPv4 address it maps: its packets are IPv4. All are kept,
// though resolvers use at most the first three (glibc, musl and Go stop
// there; the kubelet writes no more), up to MaxListEntries.
func parseNameservers(r io.Reader) ([]netip.Addr, error) {
	var out []netip.Addr
	s := bufio.NewScanner(io.LimitReader(r, maxResolvConf+1))
	read := 0
	for s.Scan() {
		read += len(s.Bytes()) + 1
		f := strings.Fields(s.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			continue
		}
		a = a.WithZone("").Unmap()
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
		if len(out) > MaxListEntries {
			return nil, fmt.Errorf("more than %d nameservers", MaxListEntries)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if read > maxResolvConf {
		return nil, errors.New("longer than 64 KiB")
	}
	return out, nil
}
