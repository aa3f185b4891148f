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

package charts_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/redirect"
)

// TestNeverCapturedLikeThePlan (issue 21, class 5): for pods that move the
// proxy ports and narrow the inbound lists, the policy finds exactly the
// required inbound ports that redirect.Config.InboundCaptured says the
// rule plan leaves alone. InboundCaptured reads the plan's own inbound
// rules (and redirect's TestTrafficInboundAsPlanned checks it with real
// connections), so a setting is judged by its effect in both directions,
// not by its name: the outbound proxy port is returned inbound too.
func TestNeverCapturedLikeThePlan(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	required := []int{22, 80, 8080, 8443, 9000, 15001, 15006, 15020, 15021, 15090, 16001, 20000}
	params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{
		RequiredInboundPorts: ports(required...), AllowProxyPortOverride: true, Interception: v1alpha1.InterceptionAllowOptOut,
	})
	ns := namespace("team", namespaceLabel, "enabled")
	found := 0
	for _, settings := range [][]string{
		nil,
		{"outbound-proxy-port", "8443"},
		{"inbound-proxy-port", "8080"},
		{"outbound-proxy-port", "16001", "inbound-proxy-port", "20000"},
		{"outbound-proxy-port", "80", "exclude-inbound-ports", "8443"},
		{"include-inbound-ports", "80,8080"},
		{"include-inbound-ports", "1-9000"},
		{"exclude-inbound-ports", "8000-9000"},
		{"exclude-inbound-ports", "20-22,15000-15100"},
		{"include-inbound-ports", ""},
		{"include-inbound-ports", "8443", "inbound-proxy-port", "8443"},
	} {
		t.Run(fmt.Sprint(settings), func(t *testing.T) {
			a := map[string]string{}
			for i := 0; i+1 < len(settings); i += 2 {
				a["traffic.meshinit.io/"+settings[i]] = settings[i+1]
			}
			cfg, err := redirect.FromAnnotations(a, redirect.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			for _, p := range required {
				if captured, _ := cfg.InboundCaptured(uint16(p)); !captured {
					want = append(want, p)
				}
			}
			var never []int
			var lists [4][]string
			r := request{object: pod("p", annotations(flatten(a)...), injected), namespace: ns, params: params}
			c.eval(t, r, []string{"variables.requiredNeverCaptured", "variables.includeInboundViolations", "variables.excludeInboundViolations",
				"variables.argIncludeInboundViolations", "variables.argExcludeInboundViolations"}, &never, &lists[0], &lists[1], &lists[2], &lists[3])
			got := slices.Clone(never)
			for _, l := range lists {
				for _, p := range l {
					n, err := strconv.Atoi(p)
					if err != nil {
						t.Fatalf("violation %q is not a port", p)
					}
					got = append(got, n)
				}
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, want) {
				t.Errorf("the policy finds required inbound ports %v not captured, the plan %v", got, want)
			}
			found += len(got)
		})
	}
	if found == 0 {
		t.Error("no case leaves a required port uncaptured: the test checks too little")
	}
}

// flatten turns a map into key, value, ... for annotations().
func flatten(m map[string]string) []string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k, v)
	}
	return kv
}
