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

package redirect_test

import (
	"reflect"
	"testing"

	"github.com/meshinit/meshinit/redirect"
)

// inboundConfig is the defaults with annotations applied, as the webhook
// reads a pod's.
func inboundConfig(t *testing.T, kv ...string) redirect.Config {
	t.Helper()
	a := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		a["traffic.meshinit.io/"+kv[i]] = kv[i+1]
	}
	c, err := redirect.FromAnnotations(a, redirect.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestInboundCaptured: what the inbound chain does with a port is read
// from its rules, so a setting named for one direction shows its effect on
// the other: the outbound proxy port is never captured inbound.
func TestInboundCaptured(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []string
		port     uint16
		captured bool
		why      string
	}{
		{"an app port", nil, 8443, true, "inbound to the proxy"},
		{"the outbound proxy port", nil, 15001, false, "proxy port 15001"},
		{"the inbound proxy port", nil, 15006, false, "proxy port 15006"},
		{"an ignored port", nil, 15090, false, "proxy-owned port 15090"},
		{"the outbound proxy port moved onto an app port", []string{"outbound-proxy-port", "8443"}, 8443, false, "proxy port 8443"},
		{"the inbound proxy port moved onto an app port", []string{"inbound-proxy-port", "8443"}, 8443, false, "proxy port 8443"},
		{"the old outbound proxy port once moved", []string{"outbound-proxy-port", "8443"}, 15001, true, "inbound to the proxy"},
		{"an excluded port", []string{"exclude-inbound-ports", "8000-9000"}, 8443, false, "excluded inbound port 8000-9000"},
		{"a port the include list has", []string{"include-inbound-ports", "80,8443"}, 8443, true, "included inbound port 8443"},
		{"a port the include list leaves out", []string{"include-inbound-ports", "80"}, 8443, false, ""},
		{"nothing included", []string{"include-inbound-ports", ""}, 8443, false, ""},
		{"an excluded interface leaves other interfaces' ports captured", []string{"exclude-inbound-interfaces", "net1"}, 8443, true, "inbound to the proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			captured, why := inboundConfig(t, tc.settings...).InboundCaptured(tc.port)
			if captured != tc.captured || why != tc.why {
				t.Errorf("port %d: captured %v (%q), want %v (%q)", tc.port, captured, why, tc.captured, tc.why)
			}
		})
	}
}

// TestInboundNeverCaptured lists the default's exemptions and those of a
// pod that moves the outbound proxy port and excludes a range.
func TestInboundNeverCaptured(t *testing.T) {
	r := func(first, last uint16, why string) redirect.InboundExemption {
		return redirect.InboundExemption{Ports: redirect.PortRange{First: first, Last: last}, Why: why}
	}
	got := redirect.Defaults().InboundNeverCaptured()
	want := []redirect.InboundExemption{r(15001, 15001, "proxy port 15001"), r(15006, 15006, "proxy port 15006"),
		r(15020, 15020, "proxy-owned port 15020"), r(15021, 15021, "proxy-owned port 15021"), r(15090, 15090, "proxy-owned port 15090")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: %v\nwant %v", got, want)
	}
	got = inboundConfig(t, "outbound-proxy-port", "8443", "exclude-inbound-ports", "20-22").InboundNeverCaptured()
	want = []redirect.InboundExemption{r(20, 22, "excluded inbound port 20-22"), r(8443, 8443, "proxy port 8443"), r(15006, 15006, "proxy port 15006"),
		r(15020, 15020, "proxy-owned port 15020"), r(15021, 15021, "proxy-owned port 15021"), r(15090, 15090, "proxy-owned port 15090")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("moved and excluded: %v\nwant %v", got, want)
	}
	if got := inboundConfig(t, "include-inbound-ports", "").InboundNeverCaptured(); !reflect.DeepEqual(got, []redirect.InboundExemption{r(1, 65535, "not captured")}) {
		t.Errorf("nothing included: %v", got)
	}
}
