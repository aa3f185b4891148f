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
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/redirect"
)

// portListAnnotations are the port-list annotations the policy parses, with
// the prefix of the policy's variables for each (<prefix>Violations lists
// the required ports the annotation fails to intercept).
var portListAnnotations = []struct {
	annotation, prefix string
	// violates says whether the parsed annotation fails to intercept port p.
	violates func(l redirect.PortList, p uint16) bool
}{
	{redirect.AnnotationIncludeInboundPorts, "includeInbound",
		func(l redirect.PortList, p uint16) bool { return !l.Contains(p) }},
	{redirect.AnnotationExcludeInboundPorts, "excludeInbound", redirect.PortList.Contains},
	{redirect.AnnotationIncludeOutboundPorts, "includeOutbound",
		func(l redirect.PortList, p uint16) bool { return !l.Contains(p) }},
	{redirect.AnnotationExcludeOutboundPorts, "excludeOutbound", redirect.PortList.Contains},
}

// probePorts are required ports chosen around the edges of the table's values.
var probePorts = []int{1, 79, 80, 81, 443, 7999, 8000, 8040, 8080, 8081, 9090, 10000, 10499, 10500, 65535}

// TestCELParsesLikeGo runs the shared table through the policy's CEL,
// evaluated in-process as the API server does, and through
// redirect.ParsePortList, for each of the three annotations: both must
// accept the same values, read the same ports and ranges, name the same first
// bad entry, and find the same required ports missed.
func TestCELParsesLikeGo(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	params := redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{
		// AllowOptOut: the listed ports (Required would require every port).
		RequiredInboundPorts: ports(probePorts...), RequiredOutboundPorts: ports(probePorts...),
		Interception: v1alpha1.InterceptionAllowOptOut,
	})
	for _, a := range portListAnnotations {
		for _, tc := range portListCases {
			t.Run(a.prefix+"/"+tc.name, func(t *testing.T) {
				goList, goErr := redirect.ParsePortList(tc.value)
				r := request{
					object:    pod("p", annotations(a.annotation, tc.value)),
					namespace: namespace("team", namespaceLabel, "enabled"),
					params:    params,
				}
				var all, tooLong bool
				var bad []string
				var ranges [][]int64
				var violations []string
				c.eval(t, r, []string{
					"variables." + a.prefix + "All", "variables." + a.prefix + "TooLong", "variables." + a.prefix + "Bad",
					"variables." + a.prefix + "Ranges", "variables." + a.prefix + "Violations",
				}, &all, &tooLong, &bad, &ranges, &violations)

				if tooLong != overLimits(tc.value) || (goErr != nil) != (tooLong || len(bad) > 0) {
					t.Fatalf("%s: Go error %v, CEL too long %v, bad entries %q", short(tc.value), goErr, tooLong, bad)
				}
				if goErr != nil {
					// Go stops at the first bad entry and quotes it.
					if !tooLong && !strings.Contains(goErr.Error(), strconv.Quote(bad[0])) {
						t.Errorf("%q: CEL's first bad entry %q is not the one Go rejects: %v", tc.value, bad[0], goErr)
					}
					if len(violations) != 0 {
						t.Errorf("%s: CEL reports violations %v for a list it cannot read", short(tc.value), violations)
					}
					return
				}
				if all != goList.All {
					t.Errorf("%s: CEL all=%v, Go all=%v", short(tc.value), all, goList.All)
				}
				if got, want := normalize(ranges), goList.Ranges; !slices.Equal(got, want) {
					t.Errorf("%s: CEL ranges %v, Go ranges %v", short(tc.value), got, want)
				}
				var want []string
				for _, p := range probePorts {
					if a.violates(goList, uint16(p)) {
						want = append(want, strconv.Itoa(p))
					}
				}
				if !slices.Equal(violations, want) {
					t.Errorf("%s: CEL %sViolations = %v, Go says %v", short(tc.value), a.prefix, violations, want)
				}
			})
		}
	}
}

// normalize drops the repeats among CEL's [first, last] pairs, keeping the
// first, the way redirect.PortList keeps its ranges.
func normalize(pairs [][]int64) []redirect.PortRange {
	var out []redirect.PortRange
	for _, p := range pairs {
		if r := (redirect.PortRange{First: uint16(p[0]), Last: uint16(p[1])}); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// short quotes a table value for a message, cut after 64 bytes.
func short(v string) string {
	if len(v) > 64 {
		return strconv.Quote(v[:64]) + "..."
	}
	return strconv.Quote(v)
}
