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
	"slices"
	"strings"
	"testing"
)

func TestParsePortList(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "*", want: "*"},
		{in: " * ", want: "*"},
		{in: "", want: ""},
		{in: "80", want: "80"},
		{in: "8080, 80 ,,80,", want: "8080,80"},
		{in: "8000-8080,22", want: "8000-8080,22"},
		{in: "080,80-80, 0080", want: "80"},
		{in: "1,65535", want: "1,65535"},
		{in: "5-5", want: "5"},
		{in: "0", err: "out of range"},
		{in: "70000", err: "out of range"},
		{in: "80-", err: `"80-" is not a port`},
		{in: "-80", err: `"-80" is not a port`},
		{in: "90-80", err: "range end is below its start"},
		{in: "http", err: `"http" is not a port`},
		{in: "+80", err: `"+80" is not a port`},
		{in: "80,*", err: `must stand alone`},
		{in: "8 0", err: `"8 0" is not a port`},
	} {
		got, err := ParsePortList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePortList(%q) error = %v, want containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParsePortList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCIDRList(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "*", want: "*"},
		{in: "10.0.0.0/8, 10.0.0.0/8,", want: "10.0.0.0/8"},
		{in: "10.1.2.3/8", want: "10.0.0.0/8"},
		{in: "192.168.1.1", want: "192.168.1.1/32"},
		{in: "fd00::/8,10.0.0.0/8", want: "fd00::/8,10.0.0.0/8"},
		{in: "10.2.0.0/8,FD00::1/8,10.0.0.0/8", want: "10.0.0.0/8,fd00::/8"},
		{in: "::1", want: "::1/128"},
		{in: "10.0.0/8", err: `"10.0.0/8" is not a CIDR`},
		{in: "10.0.0.0/33", err: `is not a CIDR`},
		{in: "banana", err: `"banana" is not an IP address`},
		{in: "fe80::1%eth0", err: `is not an IP address`},
	} {
		got, err := ParseCIDRList(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCIDRList(%q) error = %v, want containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("ParseCIDRList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestFromAnnotationsErrors checks that every rejection names the annotation
// (or flag) and the value a person wrote.
func TestFromAnnotationsErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		base        func(*Config)
		want        []string
	}{
		{"bad port", map[string]string{AnnotationExcludeInboundPorts: "80-"},
			nil, []string{`annotation traffic.meshinit.io/exclude-inbound-ports "80-"`}},
		{"port zero", map[string]string{AnnotationExcludeOutboundPorts: "0"},
			nil, []string{`annotation traffic.meshinit.io/exclude-outbound-ports "0"`, "out of range"}},
		{"bad cidr", map[string]string{AnnotationExcludeOutboundCIDRs: "10.0.0/8"},
			nil, []string{`annotation traffic.meshinit.io/exclude-outbound-cidrs "10.0.0/8"`}},
		{"included and excluded", map[string]string{AnnotationIncludeInboundPorts: "80,443", AnnotationExcludeInboundPorts: "443"},
			nil, []string{`annotation traffic.meshinit.io/exclude-inbound-ports "443"`, "entry 443 overlaps include-inbound-ports"}},
		{"range overlap", map[string]string{AnnotationIncludeInboundPorts: "8000-8100", AnnotationExcludeInboundPorts: "8080"},
			nil, []string{"entry 8080 overlaps include-inbound-ports"}},
		{"the first entry that overlaps", map[string]string{AnnotationIncludeInboundPorts: "8000-8100,9000", AnnotationExcludeInboundPorts: "22,9000,8050-8200"},
			nil, []string{"entry 9000 overlaps include-inbound-ports"}},
		{"ipv6 cidr with ipv6 off", map[string]string{AnnotationExcludeOutboundCIDRs: "fd00::/8"},
			func(c *Config) { c.IPv6 = IPv6Off }, []string{`annotation traffic.meshinit.io/exclude-outbound-cidrs "fd00::/8"`, "ipv6 is off"}},
		{"star in exclude", map[string]string{AnnotationExcludeInboundPorts: "*"},
			nil, []string{`annotation traffic.meshinit.io/exclude-inbound-ports "*"`}},
		{"capture-dns", map[string]string{AnnotationCaptureDNS: "on"},
			nil, []string{`annotation traffic.meshinit.io/capture-dns "on"`, "off, nameservers, all"}},
		{"dns proxy port", map[string]string{AnnotationDNSProxyPort: "0"},
			nil, []string{`annotation traffic.meshinit.io/dns-proxy-port "0"`}},
		{"dns proxy port is the outbound proxy's", map[string]string{AnnotationCaptureDNS: "all", AnnotationDNSProxyPort: "15001"},
			nil, []string{`annotation traffic.meshinit.io/dns-proxy-port "15001"`, "must differ"}},
		{"excluded UID a name", map[string]string{AnnotationExcludeOutboundUIDs: "1000,fluentbit"},
			nil, []string{`annotation traffic.meshinit.io/exclude-outbound-uids "1000,fluentbit"`, `"fluentbit" is not a numeric ID`}},
		{"excluded GID negative", map[string]string{AnnotationExcludeOutboundGIDs: "-1"},
			nil, []string{`annotation traffic.meshinit.io/exclude-outbound-gids "-1"`}},
		{"excluded UIDs star", map[string]string{AnnotationExcludeOutboundUIDs: "*"},
			nil, []string{`annotation traffic.meshinit.io/exclude-outbound-uids "*"`, "list the IDs"}},
		{"excluded interface wildcard", map[string]string{AnnotationExcludeInboundInterfaces: "net+"},
			nil, []string{`annotation traffic.meshinit.io/exclude-inbound-interfaces "net+"`, "not an interface name"}},
		{"include-outbound-ports star in a list", map[string]string{AnnotationIncludeOutboundPorts: "80,*"},
			nil, []string{`annotation traffic.meshinit.io/include-outbound-ports "80,*"`}},
		{"include and exclude outbound port", map[string]string{AnnotationIncludeOutboundPorts: "80,443", AnnotationExcludeOutboundPorts: "443"},
			nil, []string{`annotation traffic.meshinit.io/exclude-outbound-ports "443"`, "overlaps include-outbound-ports"}},
		{"proxy UID a name", map[string]string{AnnotationProxyUID: "envoy"},
			nil, []string{`annotation traffic.meshinit.io/proxy-uid "envoy"`, "numeric ID"}},
		{"proxy GID 2^32-1", map[string]string{AnnotationProxyGID: "4294967295"},
			nil, []string{`annotation traffic.meshinit.io/proxy-gid "4294967295"`}},
		{"outbound proxy port too high", map[string]string{AnnotationOutboundProxyPort: "65536"},
			nil, []string{`annotation traffic.meshinit.io/outbound-proxy-port "65536"`}},
		{"inbound proxy port is the outbound one", map[string]string{AnnotationInboundProxyPort: "15001"},
			nil, []string{`annotation traffic.meshinit.io/inbound-proxy-port "15001"`, "must differ from the outbound proxy port"}},
		{"two bad annotations both reported", map[string]string{AnnotationExcludeInboundPorts: "x", AnnotationExcludeOutboundPorts: "y"},
			nil, []string{"exclude-inbound-ports", "exclude-outbound-ports"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := Defaults()
			if tc.base != nil {
				tc.base(&base)
			}
			_, err := FromAnnotations(tc.annotations, base)
			if err == nil {
				t.Fatal("no error")
			}
			var se *SettingError
			if !errors.As(err, &se) {
				t.Errorf("error %v is not a *SettingError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFromAnnotationsDefaultsAndOverrides(t *testing.T) {
	c, err := FromAnnotations(map[string]string{"unrelated": "x"}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint() != Defaults().Fingerprint() {
		t.Errorf("no meshinit annotations changed the config: %v", c.Args())
	}
	c, err = FromAnnotations(map[string]string{
		AnnotationIncludeInboundPorts:  "8080",
		AnnotationExcludeOutboundCIDRs: "10.96.0.0/12",
		AnnotationIncludeOutboundCIDRs: "",
	}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if c.IncludeInboundPorts.String() != "8080" || c.ExcludeOutboundCIDRs.String() != "10.96.0.0/12" || !c.IncludeOutboundCIDRs.IsEmpty() {
		t.Errorf("annotations not applied: %v", c.Args())
	}
}

func TestValidateNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.OutboundProxyPort = 0 }, `--outbound-proxy-port "0"`},
		{func(c *Config) { c.InboundProxyPort = c.OutboundProxyPort }, `--inbound-proxy-port "15001": must differ`},
		{func(c *Config) { c.IPv6 = "maybe" }, `--ipv6 "maybe": must be one of auto, on, off`},
		{func(c *Config) { c.IptablesMode = "ebpf" }, `--iptables-mode "ebpf"`},
		{func(c *Config) { c.ExcludeOutboundCIDRs = AllCIDRs }, `--exclude-outbound-cidrs "*"`},
	} {
		c := Defaults()
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want containing %q", err, tc.want)
		}
	}
	if err := Defaults().Validate(); err != nil {
		t.Errorf("Defaults() invalid: %v", err)
	}
}

// TestFromSettings: the webhook's redirect map, under the flag names without
// dashes, overrides the base; errors name the key as the map writes it.
func TestFromSettings(t *testing.T) {
	c, err := FromSettings(map[string]string{"inbound-proxy-port": "16006", "exclude-outbound-ports": "53,22", "ipv6": "off"}, Defaults())
	if err != nil {
		t.Fatal(err)
	}
	want, err := ParseArgs([]string{"--inbound-proxy-port=16006", "--exclude-outbound-ports=53,22", "--ipv6=off"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Args(), want.Args()) {
		t.Errorf("FromSettings = %q, the same flags give %q", c.Args(), want.Args())
	}
	for _, tc := range []struct {
		values map[string]string
		want   []string
	}{
		{map[string]string{"inbound-proxy-port": "0"}, []string{`invalid inbound-proxy-port "0": must be a TCP port 1-65535`}},
		{map[string]string{"inbound-proxy-port": "15001"}, []string{`invalid inbound-proxy-port "15001": must differ`}},
		{map[string]string{"ipv6": "maybe"}, []string{`invalid ipv6 "maybe": must be one of auto, on, off`}},
		{map[string]string{"proxy-port": "1", "--proxy-uid": "1", "proxy-gid": "x"},
			[]string{`unknown setting "--proxy-uid"`, `unknown setting "proxy-port"`, `invalid proxy-gid "x"`}},
	} {
		_, err := FromSettings(tc.values, Defaults())
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("FromSettings(%v) = %v, want an error containing %q", tc.values, err, w)
			}
		}
	}
}

// TestRoundTrip proves that what the webhook writes (annotations -> Config ->
// Args) is exactly what the redirector reads (ParseArgs).
func TestRoundTrip(t *testing.T) {
	for _, annotations := range []map[string]string{
		{},
		{AnnotationIncludeInboundPorts: "", AnnotationIncludeOutboundCIDRs: ""},
		{AnnotationIncludeInboundPorts: " 8080,80, 9000-9100 ", AnnotationExcludeOutboundPorts: "5432,6379",
			AnnotationExcludeOutboundCIDRs: "169.254.169.254/32, fd00::/8", AnnotationExcludeInboundPorts: ""},
		{AnnotationExcludeInboundPorts: "22,2222", AnnotationIncludeOutboundCIDRs: "10.0.0.0/8,fd00::/8"},
	} {
		base := Defaults()
		base.ProxyUID, base.ProxyGID, base.IPv6, base.IptablesMode = 2102, 2103, IPv6On, IptablesLegacy
		want, err := FromAnnotations(annotations, base)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseArgs(want.Args())
		if err != nil {
			t.Fatalf("ParseArgs(%q): %v", want.Args(), err)
		}
		if !slices.Equal(got.Args(), want.Args()) || got.Fingerprint() != want.Fingerprint() {
			t.Errorf("round trip changed the config:\n got %q\nwant %q", got.Args(), want.Args())
		}
	}
}

func TestParseArgsErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--inbound-proxy-port=70000"}, "inbound-proxy-port"},
		{[]string{"--proxy-uid=-1"}, "proxy-uid"},
		{[]string{"--exclude-inbound-ports=80-"}, "exclude-inbound-ports"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		if _, err := ParseArgs(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseArgs(%q) = %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
