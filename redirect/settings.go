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
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Pod annotations the webhook reads. Lists are comma-separated; "*" means all.
const (
	AnnotationIncludeInboundPorts  = "traffic.meshinit.io/include-inbound-ports"
	AnnotationExcludeInboundPorts  = "traffic.meshinit.io/exclude-inbound-ports"
	AnnotationExcludeOutboundPorts = "traffic.meshinit.io/exclude-outbound-ports"
	AnnotationIncludeOutboundCIDRs = "traffic.meshinit.io/include-outbound-cidrs"
	AnnotationExcludeOutboundCIDRs = "traffic.meshinit.io/exclude-outbound-cidrs"

	AnnotationIncludeOutboundPorts     = "traffic.meshinit.io/include-outbound-ports"
	AnnotationExcludeOutboundUIDs      = "traffic.meshinit.io/exclude-outbound-uids"
	AnnotationExcludeOutboundGIDs      = "traffic.meshinit.io/exclude-outbound-gids"
	AnnotationExcludeInboundInterfaces = "traffic.meshinit.io/exclude-inbound-interfaces"
	AnnotationCaptureDNS               = "traffic.meshinit.io/capture-dns"
	AnnotationDNSProxyPort             = "traffic.meshinit.io/dns-proxy-port"
	// The proxy's ports and identity, set per pod for a proxy other than
	// the cluster's (a RedirectPolicy may forbid it).
	AnnotationOutboundProxyPort = "traffic.meshinit.io/outbound-proxy-port"
	AnnotationInboundProxyPort  = "traffic.meshinit.io/inbound-proxy-port"
	AnnotationProxyUID          = "traffic.meshinit.io/proxy-uid"
	AnnotationProxyGID          = "traffic.meshinit.io/proxy-gid"
)

// Setting keys double as the redirector's flag names.
const (
	keyOutboundProxyPort        = "outbound-proxy-port"
	keyInboundProxyPort         = "inbound-proxy-port"
	keyProxyUID                 = "proxy-uid"
	keyProxyGID                 = "proxy-gid"
	keyIncludeInboundPorts      = "include-inbound-ports"
	keyExcludeInboundPorts      = "exclude-inbound-ports"
	keyIgnoredInboundPorts      = "ignored-inbound-ports"
	keyExcludeInboundInterfaces = "exclude-inbound-interfaces"
	keyIncludeOutboundPorts     = "include-outbound-ports"
	keyExcludeOutboundPorts     = "exclude-outbound-ports"
	keyIncludeOutboundCIDRs     = "include-outbound-cidrs"
	keyExcludeOutboundCIDRs     = "exclude-outbound-cidrs"
	keyExcludeOutboundUIDs      = "exclude-outbound-uids"
	keyExcludeOutboundGIDs      = "exclude-outbound-gids"
	keyCaptureDNS               = "capture-dns"
	keyDNSProxyPort             = "dns-proxy-port"
	keyIPv6                     = "ipv6"
	keyIptablesMode             = "iptables-mode"
)

// setting is one Config field with the names it goes by outside Go.
// This table is the only place those names are bound to fields: the
// redirector's flags, the pod annotations and the webhook's redirect map
// read it, and the chart's defaults and values schema and the settings
// table of docs/configuration.md are written from it (generate_test.go).
type setting struct {
	key        string // flag name; the key in the webhook's redirect map
	annotation string // pod annotation, or "" when pods cannot set it
	usage      string // one line; docs/configuration.md sets "quoted" text as code
	kind       kind
	values     []string // kindEnum: the values allowed
	get        func(*Config) string
	set        func(*Config, string) error
}

// kind is how a setting's value is written.
type kind int

const (
	kindPort       kind = iota // a TCP port 1-65535
	kindID                     // a numeric UID or GID
	kindPorts                  // a PortList
	kindCIDRs                  // a CIDRList
	kindEnum                   // one of the setting's values
	kindIDs                    // an IDList
	kindInterfaces             // an InterfaceList
)

var settings = []setting{
	portSetting(keyOutboundProxyPort, AnnotationOutboundProxyPort, "port the proxy accepts redirected outbound TCP on",
		func(c *Config) *uint16 { return &c.OutboundProxyPort }),
	portSetting(keyInboundProxyPort, AnnotationInboundProxyPort, "port the proxy accepts redirected inbound TCP on",
		func(c *Config) *uint16 { return &c.InboundProxyPort }),
	idSetting(keyProxyUID, AnnotationProxyUID, "UID of the proxy process; its traffic is never redirected (it would loop)",
		func(c *Config) *uint32 { return &c.ProxyUID }),
	idSetting(keyProxyGID, AnnotationProxyGID, "GID of the proxy process; its traffic is never redirected (it would loop)",
		func(c *Config) *uint32 { return &c.ProxyGID }),
	portListSetting(keyIncludeInboundPorts, AnnotationIncludeInboundPorts, `inbound ports to capture: "*" or a list like "80,8000-8080"; empty captures none`,
		func(c *Config) *PortList { return &c.IncludeInboundPorts }),
	portListSetting(keyExcludeInboundPorts, AnnotationExcludeInboundPorts, "inbound ports never captured",
		func(c *Config) *PortList { return &c.ExcludeInboundPorts }),
	portListSetting(keyIgnoredInboundPorts, "", "the proxy's own inbound ports (health, metrics), never captured",
		func(c *Config) *PortList { return &c.IgnoredInboundPorts }),
	listSetting(keyExcludeInboundInterfaces, AnnotationExcludeInboundInterfaces, kindInterfaces, `interfaces whose inbound traffic is never captured: names like "eth1,net1", no wildcards`,
		ParseInterfaceList, func(c *Config) *InterfaceList { return &c.ExcludeInboundInterfaces }),
	portListSetting(keyIncludeOutboundPorts, AnnotationIncludeOutboundPorts, `outbound destination ports to capture: "*" or a list like "80,443,8000-8080"; empty captures none`,
		func(c *Config) *PortList { return &c.IncludeOutboundPorts }),
	portListSetting(keyExcludeOutboundPorts, AnnotationExcludeOutboundPorts, "outbound destination ports that bypass the proxy",
		func(c *Config) *PortList { return &c.ExcludeOutboundPorts }),
	cidrListSetting(keyIncludeOutboundCIDRs, AnnotationIncludeOutboundCIDRs, `outbound destinations to capture: "*" or a list of CIDRs; empty captures none`,
		func(c *Config) *CIDRList { return &c.IncludeOutboundCIDRs }),
	cidrListSetting(keyExcludeOutboundCIDRs, AnnotationExcludeOutboundCIDRs, "outbound destinations that bypass the proxy",
		func(c *Config) *CIDRList { return &c.ExcludeOutboundCIDRs }),
	listSetting(keyExcludeOutboundUIDs, AnnotationExcludeOutboundUIDs, kindIDs, "UIDs whose outbound traffic (DNS included) bypasses the proxy, like the proxy's own",
		ParseIDList, func(c *Config) *IDList { return &c.ExcludeOutboundUIDs }),
	listSetting(keyExcludeOutboundGIDs, AnnotationExcludeOutboundGIDs, kindIDs, "primary GIDs whose outbound traffic (DNS included) bypasses the proxy, like the proxy's own",
		ParseIDList, func(c *Config) *IDList { return &c.ExcludeOutboundGIDs }),
	enumSetting(keyCaptureDNS, AnnotationCaptureDNS, `DNS (UDP and TCP to port 53) to send to the DNS proxy port: "off", "nameservers" (those in the pod's /etc/resolv.conf, read at apply time) or "all"; the proxy's own DNS goes direct`,
		func(c *Config) *DNSCapture { return &c.CaptureDNS }, DNSCaptureOff, DNSCaptureNameservers, DNSCaptureAll),
	portSetting(keyDNSProxyPort, AnnotationDNSProxyPort, "port the DNS proxy accepts captured DNS on, UDP and TCP, at 127.0.0.1 and ::1",
		func(c *Config) *uint16 { return &c.DNSProxyPort }),
	enumSetting(keyIPv6, "", `program ip6tables too: "auto" (when the kernel has IPv6, whether or not the pod has an IPv6 address yet), "on", "off" (IPv6 is not redirected; new IPv6 connections the redirect would take to a proxy are refused instead)`,
		func(c *Config) *IPv6Mode { return &c.IPv6 }, IPv6Auto, IPv6On, IPv6Off),
	enumSetting(keyIptablesMode, "", `iptables backend: "auto" (the one whose tables already hold rules, else nft), "legacy", "nft"`,
		func(c *Config) *IptablesMode { return &c.IptablesMode }, IptablesAuto, IptablesLegacy, IptablesNFT),
}

func portSetting(key, annotation, usage string, field func(*Config) *uint16) setting {
	return setting{key: key, annotation: annotation, usage: usage, kind: kindPort,
		get: func(c *Config) string { return strconv.Itoa(int(*field(c))) },
		set: func(c *Config, s string) (err error) { *field(c), err = parseProxyPort(s); return }}
}

func idSetting(key, annotation, usage string, field func(*Config) *uint32) setting {
	return setting{key: key, annotation: annotation, usage: usage, kind: kindID,
		get: func(c *Config) string { return strconv.FormatUint(uint64(*field(c)), 10) },
		set: func(c *Config, s string) (err error) { *field(c), err = parseID(s); return }}
}

func portListSetting(key, annotation, usage string, field func(*Config) *PortList) setting {
	return listSetting(key, annotation, kindPorts, usage, ParsePortList, field)
}

func cidrListSetting(key, annotation, usage string, field func(*Config) *CIDRList) setting {
	return listSetting(key, annotation, kindCIDRs, usage, ParseCIDRList, field)
}

// listSetting is a setting of a list type, read by parse.
func listSetting[L fmt.Stringer](key, annotation string, k kind, usage string, parse func(string) (L, error), field func(*Config) *L) setting {
	return setting{key: key, annotation: annotation, usage: usage, kind: k,
		get: func(c *Config) string { return (*field(c)).String() },
		set: func(c *Config, s string) (err error) { *field(c), err = parse(s); return }}
}

// enumSetting is a setting of a string type whose values are listed;
// [Config.Validate] refuses any other.
func enumSetting[T ~string](key, annotation, usage string, field func(*Config) *T, values ...T) setting {
	s := setting{key: key, annotation: annotation, usage: usage, kind: kindEnum,
		get: func(c *Config) string { return string(*field(c)) },
		set: func(c *Config, v string) error { *field(c) = T(v); return nil }}
	for _, v := range values {
		s.values = append(s.values, string(v))
	}
	return s
}

var (
	errNotPort = errors.New("must be a TCP port 1-65535")
	errNotID   = errors.New("must be a numeric ID 0-4294967294")
)

func parseProxyPort(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n == 0 {
		return 0, errNotPort
	}
	return uint16(n), nil
}

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, errNotID
	}
	return uint32(n), nil
}

// howToSet names what sets the setting key of an injected pod's
// redirector, for messages that say how to fix something: its pod
// annotation when it has one, and the chart value (a pod cannot pass the
// redirector flags), then the flag itself, for the redirector run by hand.
func howToSet(key string) string {
	value := "the chart value inject.redirect." + key
	for _, s := range settings {
		if s.key == key && s.annotation != "" {
			return "the pod annotation " + s.annotation + " or " + value + " (--" + key + ")"
		}
	}
	return value + " (--" + key + ")"
}

// AnnotationNames lists the pod annotations the webhook reads, in table order.
func AnnotationNames() []string {
	var names []string
	for _, s := range settings {
		if s.annotation != "" {
			names = append(names, s.annotation)
		}
	}
	return names
}

// FromAnnotations returns base with every setting a pod annotation sets
// overridden, validated. Errors name the annotation and its value.
func FromAnnotations(annotations map[string]string, base Config) (Config, error) {
	c, err := override(annotations, base, func(s setting) string { return s.annotation })
	return c, renameSettings(err, annotationName)
}

// FromSettings returns base with the settings in values overridden,
// validated. values holds settings under their flag names without dashes,
// as the webhook's configuration file writes them ("inbound-proxy-port":
// "15006"); an unknown name is an error. Errors name the setting as values
// does, and its value.
func FromSettings(values map[string]string, base Config) (Config, error) {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.key == k }) {
			errs = append(errs, fmt.Errorf("unknown setting %s", QuoteShort(k)))
		}
	}
	c, err := override(values, base, func(s setting) string { return s.key })
	errs = append(errs, renameSettings(err, func(key string) string { return key }))
	return c, joinErrors(errs)
}

// override returns base with every setting whose name (name(s), "" for
// none) is in values set from it, validated. Errors are *SettingErrors
// naming the setting by its key, for the caller to rename.
func override(values map[string]string, base Config, name func(setting) string) (Config, error) {
	c := base
	var errs []error
	for _, s := range settings {
		n := name(s)
		v, ok := values[n]
		if n == "" || !ok {
			continue
		}
		if err := s.set(&c, v); err != nil {
			errs = append(errs, &SettingError{Key: s.key, Value: v, Err: err})
		}
	}
	if len(errs) == 0 {
		errs = append(errs, c.Validate())
	}
	return c, joinErrors(errs)
}

func annotationName(key string) string {
	for _, s := range settings {
		if s.key == key && s.annotation != "" {
			return "annotation " + s.annotation
		}
	}
	return "setting --" + key
}

// Args renders c as redirector flags, every setting explicit and in a fixed
// order, so the init container states its whole configuration.
func (c Config) Args() []string {
	args := make([]string, 0, len(settings))
	for _, s := range settings {
		args = append(args, "--"+s.key+"="+s.get(&c))
	}
	return args
}

// Fingerprint is a short stable hash of the effective settings.
func (c Config) Fingerprint() string {
	sum := sha256.Sum256([]byte(strings.Join(c.Args(), "\n")))
	return hex.EncodeToString(sum[:8])
}

// ParseFlags registers every setting as a flag on fs (which may hold flags
// of its own), parses args over Defaults and validates the result. Errors
// name the flag and quote at most the start of its value: a value that
// cannot be used does not stop fs.Parse, whose own error would quote it
// whole, but is reported as a *SettingError once fs.Parse has returned.
func ParseFlags(fs *flag.FlagSet, args []string) (Config, error) {
	c := Defaults()
	var errs []error
	for _, s := range settings {
		fs.Func(s.key, fmt.Sprintf("%s (default %q)", s.usage, s.get(&c)), func(v string) error {
			if err := s.set(&c, v); err != nil {
				errs = append(errs, &SettingError{Key: s.key, Value: v, Err: err})
			}
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if len(errs) > 0 {
		return c, joinErrors(errs)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %s: settings are flags like --include-inbound-ports=80", QuoteShort(fs.Arg(0)))
	}
	return c, c.Validate()
}

func joinErrors(errs []error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return joined(out)
}

type joined []error

func (j joined) Error() string {
	parts := make([]string, len(j))
	for i, e := range j {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (j joined) Unwrap() []error { return j }
