package redirect

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
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
)

// Setting keys double as the redirector's flag names.
const (
	keyOutboundProxyPort    = "outbound-proxy-port"
	keyInboundProxyPort     = "inbound-proxy-port"
	keyProxyUID             = "proxy-uid"
	keyProxyGID             = "proxy-gid"
	keyIncludeInboundPorts  = "include-inbound-ports"
	keyExcludeInboundPorts  = "exclude-inbound-ports"
	keyIgnoredInboundPorts  = "ignored-inbound-ports"
	keyExcludeOutboundPorts = "exclude-outbound-ports"
	keyIncludeOutboundCIDRs = "include-outbound-cidrs"
	keyExcludeOutboundCIDRs = "exclude-outbound-cidrs"
	keyIPv6                 = "ipv6"
	keyIptablesMode         = "iptables-mode"
)

// setting is one Config field with the names it goes by outside Go.
// This table is the only place those names are bound to fields.
type setting struct {
	key        string // flag name
	annotation string // pod annotation, or "" when pods cannot set it
	usage      string
	get        func(*Config) string
	set        func(*Config, string) error
}

var settings = []setting{
	{keyOutboundProxyPort, "", "port the proxy accepts redirected outbound TCP on",
		func(c *Config) string { return strconv.Itoa(int(c.OutboundProxyPort)) },
		func(c *Config, s string) (err error) { c.OutboundProxyPort, err = parseProxyPort(s); return }},
	{keyInboundProxyPort, "", "port the proxy accepts redirected inbound TCP on",
		func(c *Config) string { return strconv.Itoa(int(c.InboundProxyPort)) },
		func(c *Config, s string) (err error) { c.InboundProxyPort, err = parseProxyPort(s); return }},
	{keyProxyUID, "", "UID of the proxy process; its traffic is never redirected",
		func(c *Config) string { return strconv.FormatUint(uint64(c.ProxyUID), 10) },
		func(c *Config, s string) (err error) { c.ProxyUID, err = parseID(s); return }},
	{keyProxyGID, "", "GID of the proxy process; its traffic is never redirected",
		func(c *Config) string { return strconv.FormatUint(uint64(c.ProxyGID), 10) },
		func(c *Config, s string) (err error) { c.ProxyGID, err = parseID(s); return }},
	{keyIncludeInboundPorts, AnnotationIncludeInboundPorts, `inbound ports to capture: "*" or a list like "80,8000-8080"; empty captures none`,
		func(c *Config) string { return c.IncludeInboundPorts.String() },
		func(c *Config, s string) (err error) { c.IncludeInboundPorts, err = ParsePortList(s); return }},
	{keyExcludeInboundPorts, AnnotationExcludeInboundPorts, "inbound ports never captured",
		func(c *Config) string { return c.ExcludeInboundPorts.String() },
		func(c *Config, s string) (err error) { c.ExcludeInboundPorts, err = ParsePortList(s); return }},
	{keyIgnoredInboundPorts, "", "the proxy's own inbound ports (health, metrics), never captured",
		func(c *Config) string { return c.IgnoredInboundPorts.String() },
		func(c *Config, s string) (err error) { c.IgnoredInboundPorts, err = ParsePortList(s); return }},
	{keyExcludeOutboundPorts, AnnotationExcludeOutboundPorts, "outbound destination ports that bypass the proxy",
		func(c *Config) string { return c.ExcludeOutboundPorts.String() },
		func(c *Config, s string) (err error) { c.ExcludeOutboundPorts, err = ParsePortList(s); return }},
	{keyIncludeOutboundCIDRs, AnnotationIncludeOutboundCIDRs, `outbound destinations to capture: "*" or a list of CIDRs; empty captures none`,
		func(c *Config) string { return c.IncludeOutboundCIDRs.String() },
		func(c *Config, s string) (err error) { c.IncludeOutboundCIDRs, err = ParseCIDRList(s); return }},
	{keyExcludeOutboundCIDRs, AnnotationExcludeOutboundCIDRs, "outbound destinations that bypass the proxy",
		func(c *Config) string { return c.ExcludeOutboundCIDRs.String() },
		func(c *Config, s string) (err error) { c.ExcludeOutboundCIDRs, err = ParseCIDRList(s); return }},
	{keyIPv6, "", "program ip6tables too: auto (when the pod has a global IPv6 address), on, off",
		func(c *Config) string { return string(c.IPv6) },
		func(c *Config, s string) error { c.IPv6 = IPv6Mode(s); return nil }},
	{keyIptablesMode, "", "iptables backend: auto (the one already holding rules, else nft), legacy, nft",
		func(c *Config) string { return string(c.IptablesMode) },
		func(c *Config, s string) error { c.IptablesMode = IptablesMode(s); return nil }},
}

func parseProxyPort(s string) (uint16, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("must be a TCP port 1-65535")
	}
	return uint16(n), nil
}

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, fmt.Errorf("must be a numeric ID 0-4294967294")
	}
	return uint32(n), nil
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
	c := base
	var errs []error
	for _, s := range settings {
		v, ok := annotations[s.annotation]
		if s.annotation == "" || !ok {
			continue
		}
		if err := s.set(&c, v); err != nil {
			errs = append(errs, &SettingError{Key: s.key, Value: v, Err: err})
		}
	}
	if len(errs) == 0 {
		errs = append(errs, c.Validate())
	}
	return c, renameSettings(joinErrors(errs), annotationName)
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

// ParseArgs parses redirector flags over Defaults and validates the result.
// Errors name the flag and its value.
func ParseArgs(args []string) (Config, error) {
	fs := flag.NewFlagSet("redirector", flag.ContinueOnError)
	fs.SetOutput(discard{})
	return ParseFlags(fs, args)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

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
