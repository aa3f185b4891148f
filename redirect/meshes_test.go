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
	"strings"
	"testing"
)

// testMesh reads a mesh's annotations as a preset does (the chart's presets
// are checked against the webhook and the policies in package charts).
var testMesh = []MeshAnnotation{
	{Annotation: "mesh/exclude-in", Setting: keyExcludeInboundPorts},
	{Annotation: "mesh/include-in", Setting: keyIncludeInboundPorts},
	{Annotation: "mesh/exclude-cidrs", Setting: keyExcludeOutboundCIDRs},
	{Annotation: "mesh/exclude-uids", Setting: keyExcludeOutboundUIDs},
	{Annotation: "mesh/uid", Setting: keyProxyUID},
	{Annotation: "mesh/mode", Values: []string{"REDIRECT"}},
}

// TestFromPodAnnotations: a mesh's annotation reads as its setting;
// exclusions add up with meshinit's own annotation and the chart's value,
// include lists take both, scalars refuse both; every refusal names the
// annotation it comes from and quotes its value.
func TestFromPodAnnotations(t *testing.T) {
	base := Defaults()
	base.ExcludeInboundPorts = Ports(22)
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        func(c Config) string // what to compare, rendered
		wantValue   string
		err         string
	}{
		{"no annotation: the base", nil, func(c Config) string { return c.ExcludeInboundPorts.String() }, "22", ""},
		{"the mesh's exclusion adds to the chart's", map[string]string{"mesh/exclude-in": "8080"},
			func(c Config) string { return c.ExcludeInboundPorts.String() }, "22,8080", ""},
		{"and to meshinit's own annotation, which replaces the chart's", map[string]string{"mesh/exclude-in": "8080", AnnotationExcludeInboundPorts: "9090"},
			func(c Config) string { return c.ExcludeInboundPorts.String() }, "9090,8080", ""},
		{"an include list: the mesh's", map[string]string{"mesh/include-in": "80"},
			func(c Config) string { return c.IncludeInboundPorts.String() }, "80", ""},
		{"an include list: both", map[string]string{"mesh/include-in": "80", AnnotationIncludeInboundPorts: "443"},
			func(c Config) string { return c.IncludeInboundPorts.String() }, "443,80", ""},
		{"an include list: * wins", map[string]string{"mesh/include-in": "80", AnnotationIncludeInboundPorts: "*"},
			func(c Config) string { return c.IncludeInboundPorts.String() }, "*", ""},
		{"CIDRs", map[string]string{"mesh/exclude-cidrs": "10.0.0.1"},
			func(c Config) string { return c.ExcludeOutboundCIDRs.String() }, "10.0.0.1/32", ""},
		{"UIDs", map[string]string{"mesh/exclude-uids": "5996", AnnotationExcludeOutboundUIDs: "1000"},
			func(c Config) string { return c.ExcludeOutboundUIDs.String() }, "1000,5996", ""},
		{"a scalar", map[string]string{"mesh/uid": "2103"}, func(c Config) string { return c.Args()[2] }, "--proxy-uid=2103", ""},
		{"the checked annotation, as it must be", map[string]string{"mesh/mode": "REDIRECT"}, func(c Config) string { return c.Args()[2] }, "--proxy-uid=1337", ""},
		{"the checked annotation, refused by name", map[string]string{"mesh/mode": "TPROXY"}, nil, "",
			`invalid annotation mesh/mode "TPROXY": must be REDIRECT (meshinit implements no other)`},
		{"a bad value, named", map[string]string{"mesh/exclude-in": "80-"}, nil, "",
			`invalid annotation mesh/exclude-in "80-": "80-" is not a port number or range (want 1-65535, or first-last)`},
		{"* in an exclude list", map[string]string{"mesh/exclude-in": " * "}, nil, "",
			`invalid annotation mesh/exclude-in " * ": "*" is not allowed in an exclude list; list them`},
		{"both scalars", map[string]string{"mesh/uid": "2103", AnnotationProxyUID: "2103"}, nil, "",
			`invalid annotations traffic.meshinit.io/proxy-uid and mesh/uid "2103": both set proxy-uid; set one of them`},
		{"together over the list limits: both named", map[string]string{"mesh/exclude-in": strings.Repeat("1,", 130), AnnotationExcludeInboundPorts: strings.Repeat("2,", 130)}, nil, "",
			`invalid annotations traffic.meshinit.io/exclude-inbound-ports and mesh/exclude-in "2,2,2,2`},
		{"a bad own value next to a good mesh one", map[string]string{"mesh/exclude-in": "8080", AnnotationExcludeInboundPorts: "x"}, nil, "",
			`invalid annotations traffic.meshinit.io/exclude-inbound-ports and mesh/exclude-in "x,8080": "x" is not a port number or range`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromPodAnnotations(tc.annotations, base, testMesh)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want one starting %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.want(c); got != tc.wantValue {
				t.Errorf("got %q, want %q", got, tc.wantValue)
			}
		})
	}
}

// TestFromPodAnnotationsWithoutMesh: without a preset, a mesh's annotation
// means nothing, and the result is FromAnnotations'.
func TestFromPodAnnotationsWithoutMesh(t *testing.T) {
	a := map[string]string{"mesh/exclude-in": "8080", AnnotationExcludeOutboundPorts: "22"}
	got, err := FromPodAnnotations(a, Defaults(), nil)
	want, werr := FromAnnotations(a, Defaults())
	if err != nil || werr != nil || got.Fingerprint() != want.Fingerprint() || got.ExcludeInboundPorts.String() != "" {
		t.Fatalf("got %v (%v), want %v (%v)", got.Args(), err, want.Args(), werr)
	}
}

// TestValidateMeshAnnotations: a preset reads each setting once, only
// settings pods set, and checks values only where it reads none.
func TestValidateMeshAnnotations(t *testing.T) {
	if err := ValidateMeshAnnotations(testMesh); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]MeshAnnotation{
		{{Annotation: "a", Setting: keyIptablesMode}},
		{{Annotation: "a", Setting: "nonsense"}},
		{{Annotation: "a", Setting: keyProxyUID}, {Annotation: "b", Setting: keyProxyUID}},
		{{Annotation: "a"}},
		{{Annotation: "a", Setting: keyProxyUID, Values: []string{"x"}}},
		{{Setting: keyProxyUID}},
	} {
		if err := ValidateMeshAnnotations(bad); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}
