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
)

// TestRedirectPolicyValidation applies RedirectPolicies with kubectl (server
// dry run): the CRD's OpenAPI schema and validation rules reject nonsense
// with a message naming the field, and fill in the default interception.
func TestRedirectPolicyValidation(t *testing.T) {
	c := apiServer(t)
	var many, manyCIDRs []string
	for i := range maxRequiredPorts + 1 {
		many = append(many, fmt.Sprint(1000+i))
		manyCIDRs = append(manyCIDRs, fmt.Sprintf("10.%d.0.0/16", i))
	}
	for _, tc := range []struct {
		name, spec string
		want       string // in kubectl's error; "" means accepted
	}{
		{"valid", "requiredInboundPorts: [8443, 9090]\n  requiredOutboundPorts: [5432]\n  interception: AllowOptOut", ""},
		{"empty spec", "{}", ""},
		{"port 0", "requiredInboundPorts: [0]", "spec.requiredInboundPorts[0]: Invalid value: 0: spec.requiredInboundPorts[0] in body should be greater than or equal to 1"},
		{"port 65536", "requiredOutboundPorts: [80, 65536]", "spec.requiredOutboundPorts[1]: Invalid value: 65536: spec.requiredOutboundPorts[1] in body should be less than or equal to 65535"},
		{"duplicate port", "requiredInboundPorts: [80, 443, 80]", `spec.requiredInboundPorts[2]: Duplicate value: 80`},
		{"too many ports", "requiredInboundPorts: [" + strings.Join(many, ", ") + "]", "spec.requiredInboundPorts: Too many: 65: must have at most 64 items"},
		{"port as a string", `requiredInboundPorts: ["80"]`, `spec.requiredInboundPorts[0]: Invalid value: "string": spec.requiredInboundPorts[0] in body must be of type integer: "string"`},
		{"unknown interception", "interception: Sometimes", `spec.interception: Unsupported value: "Sometimes": supported values: "Required", "AllowOptOut", "Optional"`},
		{"allowed CIDRs", "allowedOutboundCIDRExclusions: [10.0.0.0/8, 169.254.169.254/32, 0.0.0.0/0, '::/0', 'fd00::/8']", ""},
		{"allowed bare address", "allowedOutboundCIDRExclusions: [10.0.0.1]", cidrInvalid(c.Minor, 0, "10.0.0.1")},
		{"allowed CIDR with host bits", "allowedOutboundCIDRExclusions: [10.0.0.0/8, 10.1.2.3/8]", cidrInvalid(c.Minor, 1, "10.1.2.3/8")},
		{"allowed IPv4-mapped", "allowedOutboundCIDRExclusions: ['::ffff:10.0.0.0/104']", cidrInvalid(c.Minor, 0, "::ffff:10.0.0.0/104")},
		{"allowed CIDR with a zone", "allowedOutboundCIDRExclusions: ['fe80::%eth0/64']", cidrInvalid(c.Minor, 0, "fe80::%eth0/64")},
		{"allowed CIDR with spaces", "allowedOutboundCIDRExclusions: [' 10.0.0.0/8']", cidrInvalid(c.Minor, 0, " 10.0.0.0/8")},
		{"allowed duplicate", "allowedOutboundCIDRExclusions: [10.0.0.0/8, 10.0.0.0/8]", "spec.allowedOutboundCIDRExclusions[1]: Duplicate value"},
		{"too many allowed", "allowedOutboundCIDRExclusions: [" + strings.Join(manyCIDRs, ", ") + "]", "spec.allowedOutboundCIDRExclusions: Too many: 65: must have at most 64 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := "apiVersion: meshinit.io/v1alpha1\nkind: RedirectPolicy\nmetadata:\n  name: check\n  namespace: team-a\nspec:\n  " + tc.spec + "\n"
			stdout, stderr, err := c.Kubectl(manifest, "apply", "--dry-run=server", "-o", "jsonpath={.spec.interception}", "-f", "-")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v\n%s", err, stderr)
				}
				if stdout == "" {
					t.Errorf("interception was not defaulted")
				}
				return
			}
			if err == nil || !strings.Contains(stderr, tc.want) {
				t.Fatalf("kubectl apply: %v\nstderr: %s\nwant it to contain: %s", err, stderr, tc.want)
			}
		})
	}
}

// cidrInvalid is the CRD's message for an allowedOutboundCIDRExclusions entry
// that is not a canonical CIDR, from an API server of minor version minor:
// before 1.35, the messages of validation rules name the value's type
// ("string"), not the value.
func cidrInvalid(minor, i int, value string) string {
	if minor < 35 {
		value = "string"
	}
	return fmt.Sprintf("spec.allowedOutboundCIDRExclusions[%d]: Invalid value: %q: must be a CIDR such as 10.0.0.0/8 or fd00::/8, with no bits set after the prefix length", i, value)
}
