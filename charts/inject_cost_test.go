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
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/meshinit/meshinit/charts"
)

// disjointPorts is n single ports, every second one from start.
func disjointPorts(n, start int) string {
	ports := make([]string, n)
	for i := range ports {
		ports[i] = fmt.Sprint(start + 2*i)
	}
	return strings.Join(ports, ",")
}

// overlapping is n distinct ranges that all overlap each other: from
// start, start+1, ... to 65535.
func overlapping(n, start int) string {
	ranges := make([]string, n)
	for i := range ranges {
		ranges[i] = fmt.Sprintf("%d-65535", start+i)
	}
	return strings.Join(ranges, ",")
}

// TestInjectCost evaluates the policy injector's validating policy
// in-process for the costliest pods the list limits let through, and checks
// its runtime cost (with the messages for a denial) stays under a quarter of
// one evaluation's budget, and no expression errs at the limit of one
// (celconfig.PerCallLimit): every list setting
// at the most entries, include-inbound-ports and exclude-inbound-ports
// disjoint (every pair of their ranges compared, none overlapping), or
// overlapping only at their last entries; and lists over the limits, refused
// at a cost that does not grow with them. The mutating policy evaluates the
// same variables. Run with -v for the figures.
func TestInjectCost(t *testing.T) {
	pol := renderMode(t, nil, "policy")
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(t, pol, "ValidatingAdmissionPolicy", injectName, &vap)
	c := compile(t, &vap)
	longest := strings.Repeat(" ", 200_000)
	for _, tc := range []struct {
		name    string
		pod     []string
		refused bool
	}{
		{"disjoint inbound lists", []string{includeInbound, disjointPorts(maxListEntries, 1), excludeInbound, disjointPorts(maxListEntries, 2),
			excludeOutbound, longPortList(maxListEntries, false), includeCIDRs, cidrList(maxListEntries), excludeCIDRs, cidrList(maxListEntries)}, false},
		{"inbound lists overlapping at the end", []string{includeInbound, disjointPorts(maxListEntries, 1), excludeInbound, disjointPorts(maxListEntries-1, 2) + ",511"}, true},
		{"inbound lists overlapping everywhere", []string{includeInbound, overlapping(maxListEntries, 1), excludeInbound, overlapping(maxListEntries, 2)}, true},
		{"lists over the limits", []string{includeInbound, longest, excludeInbound, longest + ",", excludeOutbound, strings.Repeat(",", 50_000)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request{object: pod("p", annotations(tc.pod...)), namespace: inNamespace}
			var errs []string
			var inject bool
			c.eval(t, r, []string{"variables.settingErrors", "variables.inject"}, &errs, &inject)
			if (len(errs) > 0) != tc.refused || inject == tc.refused {
				t.Fatalf("errors %q, inject %v; want refused %v", errs, inject, tc.refused)
			}
			// The API server evaluates the messages only for a denial.
			validations, messages := c.cost(t, r)
			if !tc.refused {
				messages = 0
			}
			used := validations + messages
			t.Logf("cost %d (validations %d + messages %d) of %d: %.1f%%", used, validations, messages, celconfig.RuntimeCELCostBudget, 100*float64(used)/celconfig.RuntimeCELCostBudget)
			if used > celconfig.RuntimeCELCostBudget/4 {
				t.Errorf("cost %d, more than a quarter of the budget %d", used, celconfig.RuntimeCELCostBudget)
			}
		})
	}
}
