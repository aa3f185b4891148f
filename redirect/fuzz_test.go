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
	"strings"
	"testing"
)

// FuzzFromAnnotations: no input panics, and every rejection is a
// SettingError naming an annotation or flag.
func FuzzFromAnnotations(f *testing.F) {
	for _, s := range []string{"*", "", "80", "80-", "8000-8080,22", "10.0.0.0/8", "fd00::/8", "0", " , ,", "*,80", "65536", "1-2-3"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ports, cidrs string) {
		c, err := FromAnnotations(map[string]string{
			AnnotationIncludeInboundPorts:  ports,
			AnnotationExcludeInboundPorts:  cidrs,
			AnnotationExcludeOutboundPorts: ports,
			AnnotationIncludeOutboundCIDRs: cidrs,
			AnnotationExcludeOutboundCIDRs: ports,
		}, Defaults())
		if err != nil {
			requireNamed(t, err, "annotation traffic.meshinit.io/")
			return
		}
		// Accepted configs survive the trip through the redirector's flags.
		back, err := ParseArgs(c.Args())
		if err != nil || back.Fingerprint() != c.Fingerprint() {
			t.Fatalf("accepted %q/%q but flags %q do not round-trip: %v", ports, cidrs, c.Args(), err)
		}
		_ = NewPlan(c).String()
	})
}

// FuzzParseArgs: no input panics, and every rejection names a flag.
func FuzzParseArgs(f *testing.F) {
	f.Add("include-inbound-ports", "80,443")
	f.Add("proxy-uid", "-1")
	f.Add("inbound-proxy-port", "70000")
	f.Add("ipv6", "maybe")
	f.Fuzz(func(t *testing.T, name, value string) {
		_, err := ParseArgs([]string{"--" + name + "=" + value})
		if err == nil {
			return
		}
		var se *SettingError
		if errors.As(err, &se) {
			requireNamed(t, err, "--")
			return
		}
		// Errors from the flag package name the flag it could not use.
		if !strings.Contains(err.Error(), "flag") && !strings.Contains(err.Error(), "unexpected argument") {
			t.Fatalf("error for --%s=%q does not name the flag: %v", name, value, err)
		}
	})
}

func requireNamed(t *testing.T, err error, prefix string) {
	t.Helper()
	var se *SettingError
	if !errors.As(err, &se) {
		t.Fatalf("error is not a SettingError: %v", err)
	}
	if !strings.Contains(err.Error(), "invalid "+prefix) {
		t.Fatalf("error does not name the setting: %v", err)
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
