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
	"io/fs"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/redirect"
)

// meshes are the chart's presets (values: mesh).
var meshes = []string{"istio", "linkerd", "kuma", "consul"}

// preset is one presets/<mesh>.yaml, as the chart reads it.
type preset struct {
	Redirect        map[string]string         `json:"redirect"`
	Placement       string                    `json:"placement"`
	ProxyContainers []map[string]any          `json:"proxyContainers"`
	Annotations     []redirect.MeshAnnotation `json:"annotations"`
	Listeners       []meshListener            `json:"listeners"`
	// RuntimeAnnotations are the annotations a trusted proxy container
	// reads at run time that change what it runs: refused where anything
	// is required.
	RuntimeAnnotations []struct {
		Annotation string `json:"annotation"`
		Reader     string `json:"reader"`
	} `json:"runtimeAnnotations"`
}

// meshListener is one of a preset's listeners: a mesh annotation that
// moves a listener of the proxy off a port meshinit leaves to it, with the
// values that leave it in place.
type meshListener struct {
	Annotation string   `json:"annotation"`
	Values     []string `json:"values"`
	Listener   string   `json:"listener"`
}

func loadPreset(t testing.TB, mesh string) preset {
	t.Helper()
	b, err := fs.ReadFile(charts.Files(), "presets/"+mesh+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p preset
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("presets/%s.yaml: %v", mesh, err)
	}
	if err := redirect.ValidateMeshAnnotations(p.Annotations); err != nil {
		t.Fatalf("presets/%s.yaml: %v", mesh, err)
	}
	return p
}

// TestPresetsAreTheChartsOnlyCopy: every file in presets/ is a preset the
// values schema offers, and the schema offers no other; each preset's
// settings are valid redirect settings; the chart renders them into the
// webhook's configuration under the user's values, each of which wins.
func TestPresetsAreTheChartsOnlyCopy(t *testing.T) {
	entries, err := fs.ReadDir(charts.Files(), "presets")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	if slices.Sort(files); !slices.Equal(files, slices.Sorted(slices.Values(meshes))) {
		t.Errorf("presets/ holds %v, want %v", files, meshes)
	}
	for _, mesh := range meshes {
		p := loadPreset(t, mesh)
		if _, err := redirect.FromSettings(p.Redirect, redirect.Defaults()); err != nil {
			t.Errorf("presets/%s.yaml redirect: %v", mesh, err)
		}
		in, err := newInjector(map[string]any{"mesh": mesh})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range p.Redirect {
			if in.config.Redirect[k] != v {
				t.Errorf("mesh %s: the webhook's %s is %q, the preset's %q", mesh, k, in.config.Redirect[k], v)
			}
		}
		if string(in.config.Placement) != p.Placement || in.config.Mesh != mesh || len(in.config.MeshAnnotations) != len(p.Annotations) {
			t.Errorf("mesh %s: webhook config placement %q mesh %q with %d annotations, want %q, %q, %d",
				mesh, in.config.Placement, in.config.Mesh, len(in.config.MeshAnnotations), p.Placement, mesh, len(p.Annotations))
		}
		// The user's values win: a setting, the placement, the proxy
		// containers; a zero value too (no port left alone, GID 0), which
		// Helm's merge would take for unset.
		over, err := newInjector(map[string]any{"mesh": mesh, "inject": map[string]any{
			"placement": "last", "redirect": map[string]any{"proxy-uid": 4242, "ignored-inbound-ports": "1"}}})
		if err != nil {
			t.Fatal(err)
		}
		if over.config.Redirect["proxy-uid"] != "4242" || over.config.Redirect["ignored-inbound-ports"] != "1" ||
			over.config.Redirect["inbound-proxy-port"] != p.Redirect["inbound-proxy-port"] || over.config.Placement != "last" {
			t.Errorf("mesh %s with values: redirect %v placement %s", mesh, over.config.Redirect, over.config.Placement)
		}
		zero, err := newInjector(map[string]any{"mesh": mesh, "inject": map[string]any{
			"redirect": map[string]any{"proxy-gid": 0, "ignored-inbound-ports": ""}}})
		if err != nil {
			t.Fatal(err)
		}
		if zero.config.Redirect["proxy-gid"] != "0" || zero.config.Redirect["ignored-inbound-ports"] != "" {
			t.Errorf("mesh %s with zero values: proxy-gid %q ignored-inbound-ports %q, want \"0\" and \"\"", mesh,
				zero.config.Redirect["proxy-gid"], zero.config.Redirect["ignored-inbound-ports"])
		}
		// The RedirectPolicy holds pods to the same GID: where outbound
		// ports are required, no container may run as GID 0 unset.
		zeroVAP := chartPolicy(t, map[string]any{"mesh": mesh, "inject": map[string]any{"redirect": map[string]any{"proxy-gid": 0}}})
		if got := variable(t, zeroVAP, "proxyGID"); got != "0" {
			t.Errorf("mesh %s with proxy-gid 0: the policy's proxyGID is %s, want 0", mesh, got)
		}
		vap := chartPolicy(t, map[string]any{"mesh": mesh})
		trusted := variable(t, vap, "trustedEntries")
		for _, c := range p.ProxyContainers {
			if !strings.Contains(trusted, fmt.Sprintf(`"name": dyn(%q)`, c["name"])) {
				t.Errorf("mesh %s: the policy does not trust %v: %s", mesh, c["name"], trusted)
			}
		}
		own := chartPolicy(t, map[string]any{"mesh": mesh, "policy": map[string]any{"proxyContainers": []any{map[string]any{"name": "mine", "image": "mine"}}}})
		if trusted := variable(t, own, "trustedEntries"); strings.Contains(trusted, fmt.Sprint(p.ProxyContainers[0]["name"])) {
			t.Errorf("mesh %s with policy.proxyContainers: the preset's still trusted: %s", mesh, trusted)
		}
	}
}

// variable is the expression of the policy's variable name.
func variable(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, name string) string {
	t.Helper()
	for _, v := range p.Spec.Variables {
		if v.Name == name {
			return v.Expression
		}
	}
	t.Fatalf("policy %s has no variable %s", p.Name, name)
	return ""
}

// valuesOf are the values a table runs through a mesh's annotation read as
// setting, by the setting's kind.
func valuesOf(setting string) []string {
	switch {
	case strings.HasSuffix(setting, "-ports"):
		var out []string
		for _, tc := range portListCases {
			out = append(out, tc.value)
		}
		return out
	case strings.HasSuffix(setting, "-cidrs"):
		var out []string
		for _, tc := range cidrListCases {
			out = append(out, tc.value)
		}
		return out
	case strings.HasSuffix(setting, "-uids"), strings.HasSuffix(setting, "-gids"):
		var out []string
		for _, tc := range idListCases {
			out = append(out, tc.value)
		}
		return out
	}
	return []string{"2102", " 2102 ", "0002102", "0", "1", "65535", "65536", "4294967294", "4294967295", "-1", "x", ""}
}

// TestMeshAnnotationsReadLikeWebhook: with each preset, each of the mesh's
// annotations, alone and together with meshinit's own annotation of its
// setting, is read alike by the webhook (redirect.FromPodAnnotations) and
// the policy injector's CEL: the same refusals, naming the annotation (or
// both) and quoting the value, or the same arguments.
func TestMeshAnnotationsReadLikeWebhook(t *testing.T) {
	for _, mesh := range meshes {
		t.Run(mesh, func(t *testing.T) {
			tw := newTwins(t, map[string]any{"mesh": mesh})
			for _, a := range loadPreset(t, mesh).Annotations {
				if a.Setting == "" {
					for _, v := range append(slices.Clone(a.Values), "TPROXY", "NONE", "redirect", "", " REDIRECT") {
						agree(t, tw, inNamespace, pod("p", annotations(a.Annotation, v)), printable(v))
					}
					continue
				}
				values := valuesOf(a.Setting)
				for _, v := range values {
					agree(t, tw, inNamespace, pod("p", annotations(a.Annotation, v)), printable(v))
				}
				own := "traffic.meshinit.io/" + a.Setting
				for _, o := range []string{"22", "*", "80-", "10.0.0.0/8", "2102", ""} {
					for _, v := range []string{"5432", "*", "", "1-2", "10.1.0.0/16", "4143", "x"} {
						agree(t, tw, inNamespace, pod("p", annotations(a.Annotation, v, own, o)), true)
					}
				}
			}
		})
	}
}

// TestMeshAnnotationsTranslate: what the webhook writes for a pod that
// uses its mesh's annotations (the policy injector writes the same:
// TestMeshAnnotationsReadLikeWebhook).
func TestMeshAnnotationsTranslate(t *testing.T) {
	for _, tc := range []struct {
		mesh        string
		annotations []string
		want        []string // arguments the init container must have
		denied      string   // or the refusal
	}{
		{"istio", []string{"traffic.sidecar.istio.io/excludeOutboundPorts", "5432,6379"}, []string{"--exclude-outbound-ports=5432,6379"}, ""},
		{"istio", []string{"traffic.sidecar.istio.io/excludeInboundPorts", "8080", "traffic.meshinit.io/exclude-inbound-ports", "9090"}, []string{"--exclude-inbound-ports=9090,8080"}, ""},
		{"istio", []string{"traffic.sidecar.istio.io/includeInboundPorts", "80,443"}, []string{"--include-inbound-ports=80,443"}, ""},
		{"istio", []string{"traffic.sidecar.istio.io/includeInboundPorts", "80", "traffic.meshinit.io/include-inbound-ports", "443"}, []string{"--include-inbound-ports=443,80"}, ""},
		{"istio", []string{"traffic.sidecar.istio.io/includeOutboundIPRanges", "10.0.0.0/8", "traffic.meshinit.io/include-outbound-cidrs", "*"}, []string{"--include-outbound-cidrs=*"}, ""},
		{"istio", []string{"traffic.sidecar.istio.io/excludeOutboundIPRanges", "169.254.169.254/32"}, []string{"--exclude-outbound-cidrs=169.254.169.254/32"}, ""},
		{"istio", []string{"sidecar.istio.io/interceptionMode", "REDIRECT"}, []string{"--proxy-uid=1337"}, ""},
		{"istio", []string{"sidecar.istio.io/interceptionMode", "TPROXY"}, nil,
			`meshinit: pod not injected: invalid annotation sidecar.istio.io/interceptionMode "TPROXY": must be REDIRECT (meshinit implements no other)`},
		{"istio", []string{"traffic.sidecar.istio.io/excludeInboundPorts", "*"}, nil,
			`meshinit: pod not injected: invalid annotation traffic.sidecar.istio.io/excludeInboundPorts "*": "*" is not allowed in an exclude list; list them`},
		{"linkerd", []string{"config.linkerd.io/skip-outbound-ports", "4567-4568"}, []string{"--exclude-outbound-ports=4567-4568", "--proxy-uid=2102", "--outbound-proxy-port=4140"}, ""},
		{"linkerd", []string{"config.linkerd.io/skip-subnets", "10.0.0.0/8"}, []string{"--exclude-outbound-cidrs=10.0.0.0/8"}, ""},
		{"linkerd", []string{"config.linkerd.io/proxy-uid", "2103"}, []string{"--proxy-uid=2103"}, ""},
		{"linkerd", []string{"config.linkerd.io/proxy-uid", "2103", "traffic.meshinit.io/proxy-uid", "2103"}, nil,
			`meshinit: pod not injected: invalid annotations traffic.meshinit.io/proxy-uid and config.linkerd.io/proxy-uid "2103": both set proxy-uid; set one of them`},
		{"linkerd", []string{"config.linkerd.io/skip-inbound-ports", "80-"}, nil,
			`meshinit: pod not injected: invalid annotation config.linkerd.io/skip-inbound-ports "80-": "80-" is not a port number or range (want 1-65535, or first-last)`},
		{"linkerd", []string{"traffic.sidecar.istio.io/excludeOutboundPorts", "5432"}, []string{"--exclude-outbound-ports="}, ""},
		{"kuma", []string{"traffic.kuma.io/exclude-outbound-ips", "10.0.0.1"}, []string{"--exclude-outbound-cidrs=10.0.0.1/32", "--capture-dns=all", "--proxy-uid=5678"}, ""},
		{"consul", []string{"consul.hashicorp.com/transparent-proxy-exclude-uids", "5996"}, []string{"--exclude-outbound-uids=5996", "--inbound-proxy-port=20000"}, ""},
	} {
		t.Run(fmt.Sprint(tc.mesh, tc.annotations), func(t *testing.T) {
			tw := newTwins(t, map[string]any{"mesh": tc.mesh})
			p := pod("p", annotations(tc.annotations...))
			got := tw.byWebhook(t, inNamespace, p)
			if got.Denied != tc.denied {
				t.Fatalf("got %s, want refusal %q", got, tc.denied)
			}
			for _, w := range tc.want {
				if !slices.Contains(got.Args, w) {
					t.Errorf("arguments %q lack %q", got.Args, w)
				}
			}
		})
	}
}

// A meshBypass is one way through a mesh's own annotations around the
// proxy: a value of the annotation, and the RedirectPolicy that requires
// what it takes around the proxy (the pod is refused with a message naming
// the annotation) and one that does not (admitted).
type meshBypass struct {
	annotation, value string
	requires, allows  v1alpha1.RedirectPolicySpec
}

// meshBypasses are, for each preset, a bypass through each annotation it
// reads as a setting.
func meshBypasses(t testing.TB, mesh string) []meshBypass {
	t.Helper()
	in8080 := v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionAllowOptOut, RequiredInboundPorts: ports(8080)}
	in9443 := v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionAllowOptOut, RequiredInboundPorts: ports(9443)}
	out5432 := v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionAllowOptOut, RequiredOutboundPorts: ports(5432)}
	out5432CIDR := out5432
	out5432CIDR.AllowedOutboundCIDRExclusions = []v1alpha1.CIDR{"10.0.0.0/8"}
	out5432UID := out5432
	out5432UID.AllowedOutboundUIDExclusions = []v1alpha1.ID{5996}
	var out []meshBypass
	for _, a := range loadPreset(t, mesh).Annotations {
		var b meshBypass
		switch a.Setting {
		case "":
			continue
		case "exclude-inbound-ports":
			b = meshBypass{a.Annotation, "8080", in8080, in9443}
		case "include-inbound-ports":
			b = meshBypass{a.Annotation, "9443", in8080, in9443}
		case "exclude-outbound-ports":
			b = meshBypass{a.Annotation, "5432", out5432, in9443}
		case "include-outbound-cidrs":
			b = meshBypass{a.Annotation, "10.0.0.0/8", out5432, in9443}
		case "exclude-outbound-cidrs":
			b = meshBypass{a.Annotation, "10.1.0.0/16", out5432, out5432CIDR}
		case "exclude-outbound-uids":
			b = meshBypass{a.Annotation, "5996", out5432, out5432UID}
		case "proxy-uid", "proxy-gid":
			allows := out5432
			allows.AllowProxyIdentityOverride = true
			b = meshBypass{a.Annotation, "0", out5432, allows}
		case "inbound-proxy-port":
			b = meshBypass{a.Annotation, "8080", in8080, out5432}
		case "outbound-proxy-port":
			allows := in9443
			allows.AllowProxyPortOverride = true
			b = meshBypass{a.Annotation, "5432", out5432, allows}
		default:
			t.Fatalf("mesh %s: no bypass case for setting %s of %s", mesh, a.Setting, a.Annotation)
		}
		out = append(out, b)
	}
	return out
}

// meshPodValues are the chart's values for a mesh in the bypass tests: the
// preset, no default RedirectPolicy (each case brings its own).
func meshPodValues(mesh string) map[string]any {
	return map[string]any{"mesh": mesh, "policy": map[string]any{"defaultRedirectPolicy": map[string]any{"enabled": false}}}
}

// meshPolicy is the RedirectPolicy's policy with mesh's preset, compiled
// as the API server compiles it, and the webhook's injector with it.
func meshPolicy(t *testing.T, mesh string) (*compiled, *injector) {
	t.Helper()
	values := meshPodValues(mesh)
	c := compile(t, chartPolicy(t, values))
	in, err := newInjector(values)
	if err != nil {
		t.Fatal(err)
	}
	return c, in
}

// TestMeshBypassesRefusedInProcess evaluates the RedirectPolicy's policy,
// compiled as the API server compiles it, for each bypass of each preset:
// the pod (injected by the webhook with the preset, so its init container
// holds what the annotation did) is refused, the message naming the mesh's
// annotation, under the RedirectPolicy that requires what it takes around
// the proxy, and admitted under one that does not.
// TestMeshBypassesRefused does the same on a real API server, in both
// injector modes.
func TestMeshBypassesRefusedInProcess(t *testing.T) {
	for _, mesh := range meshes {
		c, in := meshPolicy(t, mesh)
		for _, b := range meshBypasses(t, mesh) {
			t.Run(mesh+"/"+b.annotation, func(t *testing.T) {
				p := pod("p", annotations(b.annotation, b.value), injectedBy(in))
				refused := c.denials(t, request{object: p, namespace: inNamespace, params: redirectPolicy(inNamespace.Name, "requires", b.requires)})
				if len(refused) == 0 || !strings.Contains(refused[0], b.annotation) {
					t.Errorf("%s=%s under %+v: denials %q, want the first naming %s", b.annotation, b.value, b.requires, refused, b.annotation)
				}
				if admitted := c.denials(t, request{object: p, namespace: inNamespace, params: redirectPolicy(inNamespace.Name, "allows", b.allows)}); len(admitted) > 0 {
					t.Errorf("%s=%s under %+v: denied %q, want admitted", b.annotation, b.value, b.allows, admitted)
				}
			})
		}
	}
}

// TestMeshInjectorAnnotationsAdmitted: under interception Required (every
// port), the annotations Istio's injector itself writes on every pod it
// injects in CNI mode (its status port in excludeInboundPorts, "*" in
// includeInboundPorts and includeOutboundIPRanges, REDIRECT) are admitted:
// 15020 is one of the proxy's own ports, never captured. Another port
// beside it is still refused, and only it is named.
func TestMeshInjectorAnnotationsAdmitted(t *testing.T) {
	c, in := meshPolicy(t, "istio")
	required := redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	written := []string{"sidecar.istio.io/interceptionMode", "REDIRECT", "traffic.sidecar.istio.io/includeInboundPorts", "*",
		"traffic.sidecar.istio.io/includeOutboundIPRanges", "*", "traffic.sidecar.istio.io/excludeInboundPorts", "15020"}
	p := pod("p", annotations(written...), injectedBy(in))
	if denied := c.denials(t, request{object: p, namespace: inNamespace, params: required}); len(denied) > 0 {
		t.Errorf("Istio's own annotations: denied %q", denied)
	}
	p = pod("p", annotations(append(written, "traffic.sidecar.istio.io/excludeInboundPorts", "15020,8080")...), injectedBy(in))
	want := "every inbound port is required by RedirectPolicy team/required (interception: Required), so traffic.sidecar.istio.io/excludeInboundPorts cannot list 8080"
	if denied := c.denials(t, request{object: p, namespace: inNamespace, params: required}); len(denied) == 0 || denied[0] != want {
		t.Errorf("excluding 8080 too: denied %q, want first %q", denied, want)
	}
}

// movedListeners are, for each of a preset's listeners, values of its
// annotation that move the listener off the port meshinit leaves to the
// proxy, and values that leave it there.
func movedListeners(t testing.TB, mesh string) (moved, kept [][2]string) {
	t.Helper()
	for _, l := range loadPreset(t, mesh).Listeners {
		switch {
		case l.Annotation == "" || l.Listener == "" || len(l.Values) == 0:
			t.Fatalf("presets/%s.yaml: listener %+v needs an annotation, a listener and values", mesh, l)
		default:
			for _, v := range l.Values {
				// Compared exactly: the mesh's proxy reads " 15020" as no
				// port (Go's strconv.Atoi), so it moves the listener.
				kept = append(kept, [2]string{l.Annotation, v})
				moved = append(moved, [2]string{l.Annotation, " " + v}, [2]string{l.Annotation, v + "\n"})
			}
			for _, v := range []string{"0", "8080", "", "disabled"} {
				if !slices.Contains(l.Values, v) {
					moved = append(moved, [2]string{l.Annotation, v})
				}
			}
		}
	}
	if len(moved) == 0 {
		t.Fatalf("presets/%s.yaml: no listeners", mesh)
	}
	return moved, kept
}

// TestMeshListenersRefusedInProcess evaluates the RedirectPolicy's policy,
// compiled as the API server compiles it: under interception Required a
// pod whose mesh annotation moves one of the proxy's listeners off a port
// meshinit leaves to the proxy (presets/<mesh>.yaml: listeners) is refused,
// the message naming the annotation; with the value that leaves it in
// place, and under a RedirectPolicy that requires some ports only, it is
// admitted. TestMeshListenersRefused does the same on a real API server,
// in both injector modes.
func TestMeshListenersRefusedInProcess(t *testing.T) {
	required := redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})
	some := redirectPolicy(inNamespace.Name, "some", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionAllowOptOut, RequiredOutboundPorts: ports(5432)})
	for _, mesh := range meshes {
		c, in := meshPolicy(t, mesh)
		moved, kept := movedListeners(t, mesh)
		for _, a := range moved {
			t.Run(fmt.Sprintf("%s/%s=%q", mesh, a[0], a[1]), func(t *testing.T) {
				p := pod("p", annotations(a[0], a[1]), injectedBy(in))
				want := "pod sets " + a[0] + ", which moves "
				if refused := c.denials(t, request{object: p, namespace: inNamespace, params: required}); len(refused) == 0 || !strings.HasPrefix(refused[0], want) ||
					!strings.HasSuffix(refused[0], "requires every inbound port to reach the proxy (interception: Required)") {
					t.Errorf("under Required: denials %q, want the first starting %q", refused, want)
				}
				if admitted := c.denials(t, request{object: p, namespace: inNamespace, params: some}); len(admitted) > 0 {
					t.Errorf("requiring outbound 5432 only: denied %q, want admitted", admitted)
				}
			})
		}
		for _, a := range kept {
			t.Run(fmt.Sprintf("%s/%s=%q kept", mesh, a[0], a[1]), func(t *testing.T) {
				p := pod("p", annotations(a[0], a[1]), injectedBy(in))
				if denied := c.denials(t, request{object: p, namespace: inNamespace, params: required}); len(denied) > 0 {
					t.Errorf("under Required: denied %q, want admitted", denied)
				}
			})
		}
	}
}

// TestMeshNamespaceAnnotations: neither injector nor the RedirectPolicy's
// policy reads a mesh's annotations on the namespace (linkerd-cni and
// Linkerd's injector do): in a namespace carrying Linkerd's exclusions and
// a moved admin port, a pod without them is admitted under interception
// Required (the webhook reads no namespace annotation: webhook.Review is
// given the namespace's labels only). Linkerd's injector
// copies its namespace's config.linkerd.io annotations onto each pod it
// injects (pkg/inject AppendNamespaceAnnotations): the pod then carries
// them, and the policy, which sees the pod after every mutating webhook,
// refuses it naming the annotation, as if the pod's author had set it.
func TestMeshNamespaceAnnotations(t *testing.T) {
	c, in := meshPolicy(t, "linkerd")
	ns := namespace(inNamespace.Name, namespaceLabel, "enabled")
	onNamespace := []string{"config.linkerd.io/skip-outbound-ports", "5432", "config.linkerd.io/skip-inbound-ports", "8080",
		"config.linkerd.io/admin-port", "0", "config.linkerd.io/proxy-uid", "1000"}
	ns.Annotations = merge(nil, onNamespace)
	required := redirectPolicy(ns.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})

	plain := pod("p", injectedBy(in))
	if denied := c.denials(t, request{object: plain, namespace: ns, params: required}); len(denied) > 0 {
		t.Errorf("a pod without the annotations, in a namespace with them: denied %q", denied)
	}
	for i := 0; i < len(onNamespace); i += 2 {
		copied := pod("p", annotations(onNamespace[i], onNamespace[i+1]), injectedBy(in))
		if denied := c.denials(t, request{object: copied, namespace: ns, params: required}); len(denied) == 0 || !strings.Contains(denied[0], onNamespace[i]) {
			t.Errorf("%s=%s copied onto the pod: denials %q, want the first naming it", onNamespace[i], onNamespace[i+1], denied)
		}
	}
}
