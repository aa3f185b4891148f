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
	"slices"
	"strings"
)

// IPv6Mode says whether the redirector programs ip6tables too.
type IPv6Mode string

const (
	// IPv6Auto redirects IPv6 when the kernel has IPv6, whether or not the
	// pod has an IPv6 address yet (one may come later).
	IPv6Auto IPv6Mode = "auto"
	// IPv6On always redirects IPv6.
	IPv6On IPv6Mode = "on"
	// IPv6Off does not redirect IPv6: new IPv6 connections the redirect
	// would take to a proxy are refused instead (closedRuleset).
	IPv6Off IPv6Mode = "off"
)

// IptablesMode selects the iptables backend.
type IptablesMode string

const (
	// IptablesAuto uses the backend whose tables already hold rules, else nft.
	IptablesAuto   IptablesMode = "auto"
	IptablesLegacy IptablesMode = "legacy"
	IptablesNFT    IptablesMode = "nft"
)

// DNSCapture says which DNS traffic goes to the DNS proxy.
type DNSCapture string

const (
	// DNSCaptureOff captures no DNS: UDP goes direct, TCP to port 53 is
	// outbound TCP like any other.
	DNSCaptureOff DNSCapture = "off"
	// DNSCaptureNameservers captures DNS to the nameservers in the pod's
	// /etc/resolv.conf, read when the rules are applied.
	DNSCaptureNameservers DNSCapture = "nameservers"
	// DNSCaptureAll captures DNS to every destination.
	DNSCaptureAll DNSCapture = "all"
)

// Config is every setting of one pod's redirect. The zero value is not
// useful: start from [Defaults].
type Config struct {
	// OutboundProxyPort receives redirected outbound TCP. Default 15001.
	OutboundProxyPort uint16
	// InboundProxyPort receives redirected inbound TCP. Default 15006.
	InboundProxyPort uint16
	// ProxyUID and ProxyGID identify the proxy's own traffic, which is never
	// redirected (it would loop). Default 1337 each.
	ProxyUID uint32
	ProxyGID uint32
	// IncludeInboundPorts are the inbound ports captured. Default "*".
	IncludeInboundPorts PortList
	// ExcludeInboundPorts are never captured inbound, even under "*".
	ExcludeInboundPorts PortList
	// IgnoredInboundPorts are the proxy's own listeners (health, metrics),
	// left alone inbound whatever the include list says.
	// Default 15020,15021,15090.
	IgnoredInboundPorts PortList
	// ExcludeInboundInterfaces are interfaces whose inbound traffic is
	// never captured. Default none.
	ExcludeInboundInterfaces InterfaceList
	// IncludeOutboundPorts are the destination ports captured outbound.
	// Default "*".
	IncludeOutboundPorts PortList
	// ExcludeOutboundPorts are destination ports that bypass the proxy.
	ExcludeOutboundPorts PortList
	// IncludeOutboundCIDRs are the destinations captured. Default "*".
	IncludeOutboundCIDRs CIDRList
	// ExcludeOutboundCIDRs are destinations that bypass the proxy.
	ExcludeOutboundCIDRs CIDRList
	// ExcludeOutboundUIDs and ExcludeOutboundGIDs are processes (by UID, or
	// by primary GID) whose outbound traffic, DNS included, bypasses the
	// proxy. Default none.
	ExcludeOutboundUIDs IDList
	ExcludeOutboundGIDs IDList
	// CaptureDNS says which DNS (UDP and TCP to port 53) goes to
	// DNSProxyPort. Default off.
	CaptureDNS DNSCapture
	// DNSProxyPort receives captured DNS, UDP and TCP. Default 15053.
	DNSProxyPort uint16
	// IPv6 says whether to program ip6tables. Default auto.
	IPv6 IPv6Mode
	// IptablesMode selects the backend. Default auto.
	IptablesMode IptablesMode
}

// Defaults returns the documented default Config.
func Defaults() Config {
	return Config{
		OutboundProxyPort:    15001,
		InboundProxyPort:     15006,
		ProxyUID:             1337,
		ProxyGID:             1337,
		IncludeInboundPorts:  AllPorts,
		IgnoredInboundPorts:  Ports(15020, 15021, 15090),
		IncludeOutboundPorts: AllPorts,
		IncludeOutboundCIDRs: AllCIDRs,
		CaptureDNS:           DNSCaptureOff,
		DNSProxyPort:         15053,
		IPv6:                 IPv6Auto,
		IptablesMode:         IptablesAuto,
	}
}

// Validate checks the settings together. Each problem is a *SettingError
// naming the setting and its value; all problems are joined.
func (c Config) Validate() error {
	var errs []error
	invalid := func(key, value string, err error) {
		errs = append(errs, &SettingError{Key: key, Value: value, Err: err})
	}
	bad := func(key, value, format string, args ...any) { invalid(key, value, fmt.Errorf(format, args...)) }
	if c.OutboundProxyPort == 0 {
		invalid(keyOutboundProxyPort, "0", errNotPort)
	}
	if c.InboundProxyPort == 0 {
		invalid(keyInboundProxyPort, "0", errNotPort)
	}
	if c.InboundProxyPort != 0 && c.InboundProxyPort == c.OutboundProxyPort {
		bad(keyInboundProxyPort, fmt.Sprint(c.InboundProxyPort), "must differ from the outbound proxy port")
	}
	if c.DNSProxyPort == 0 {
		invalid(keyDNSProxyPort, "0", errNotPort)
	}
	if c.CaptureDNS != DNSCaptureOff && c.DNSProxyPort != 0 && (c.DNSProxyPort == c.OutboundProxyPort || c.DNSProxyPort == c.InboundProxyPort) {
		bad(keyDNSProxyPort, fmt.Sprint(c.DNSProxyPort), "must differ from the inbound and outbound proxy ports while capture-dns is %s: captured TCP DNS would reach the TCP proxy's listener", c.CaptureDNS)
	}
	for _, l := range []struct {
		key  string
		list PortList
	}{
		{keyExcludeInboundPorts, c.ExcludeInboundPorts},
		{keyIgnoredInboundPorts, c.IgnoredInboundPorts},
		{keyExcludeOutboundPorts, c.ExcludeOutboundPorts},
	} {
		if l.list.All {
			bad(l.key, "*", "\"*\" is not allowed in an exclude list; list ports or ranges")
		}
	}
	if r, ok := c.IncludeInboundPorts.firstOverlap(c.ExcludeInboundPorts); ok {
		bad(keyExcludeInboundPorts, c.ExcludeInboundPorts.String(),
			"entry %s overlaps include-inbound-ports; a port is either included or excluded", r)
	}
	if r, ok := c.IncludeOutboundPorts.firstOverlap(c.ExcludeOutboundPorts); ok {
		bad(keyExcludeOutboundPorts, c.ExcludeOutboundPorts.String(),
			"entry %s overlaps include-outbound-ports; a port is either included or excluded", r)
	}
	if c.ExcludeOutboundCIDRs.All {
		bad(keyExcludeOutboundCIDRs, "*", "\"*\" is not allowed; to capture no outbound traffic set include-outbound-cidrs to an empty list")
	}
	if c.IPv6 == IPv6Off {
		for _, l := range []struct {
			key  string
			list CIDRList
		}{{keyIncludeOutboundCIDRs, c.IncludeOutboundCIDRs}, {keyExcludeOutboundCIDRs, c.ExcludeOutboundCIDRs}} {
			if v6 := l.list.family(true); len(v6) > 0 {
				bad(l.key, l.list.String(), "%s is an IPv6 CIDR but ipv6 is off; set ipv6 to auto or on, or remove it", v6[0])
			}
		}
	}
	for _, s := range settings {
		if v := s.get(&c); s.kind == kindEnum && !slices.Contains(s.values, v) {
			bad(s.key, v, "must be one of %s", strings.Join(s.values, ", "))
		}
	}
	return joinErrors(errs)
}
