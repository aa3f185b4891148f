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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// TestSettingsAsChart: the RedirectPolicy's policy decides a pod that sets
// no setting (variables.settingsAsChart: no traffic.meshinit.io/ or mesh
// setting annotation, and meshinit's container with the arguments the
// injector writes for it) without reading its lists, proxy ports, identity
// and DNS capture. It must decide every pod exactly as the same policy does
// when it reads them all: for chart values whose lists are and are not the
// defaults, and for mesh presets, each pod (one that sets nothing, injected
// by the webhook with those values or not; each setting set by annotation,
// injected or not; an argument forged; a mesh's annotation) against each
// RedirectPolicy gets the same denials from the policy as rendered and from
// the policy with settingsAsChart false. And the shortcut is taken where it
// is meant to be: for the pod that sets nothing, injected or not.
func TestSettingsAsChart(t *testing.T) {
	params := []*unstructured.Unstructured{
		redirectPolicy(inNamespace.Name, "optional", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionOptional}),
		redirectPolicy(inNamespace.Name, "optout", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionAllowOptOut}),
		redirectPolicy(inNamespace.Name, "required", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired}),
		redirectPolicy(inNamespace.Name, "ports", v1alpha1.RedirectPolicySpec{
			Interception: v1alpha1.InterceptionOptional, RequiredInboundPorts: ports(80, 8080, 15006, 15020, 16006), RequiredOutboundPorts: ports(22, 53, 443, 15001, 16001),
		}),
		redirectPolicy(inNamespace.Name, "allows", v1alpha1.RedirectPolicySpec{
			Interception: v1alpha1.InterceptionRequired, AllowedOutboundCIDRExclusions: []v1alpha1.CIDR{"10.0.0.0/8", "169.254.0.0/16"},
			AllowedOutboundUIDExclusions: []v1alpha1.ID{1000}, AllowedInboundInterfaceExclusions: []v1alpha1.InterfaceName{"eth1"},
			AllowProxyIdentityOverride: true, AllowProxyPortOverride: true,
		}),
	}
	// A value for each setting a pod sets, other than any chart's below.
	settingValues := map[string]string{
		"outbound-proxy-port": "17001", "inbound-proxy-port": "17006", "proxy-uid": "3000", "proxy-gid": "3000",
		"include-inbound-ports": "8080", "exclude-inbound-ports": "8080", "exclude-inbound-interfaces": "eth1",
		"include-outbound-ports": "443", "exclude-outbound-ports": "22", "include-outbound-cidrs": "10.0.0.0/8",
		"exclude-outbound-cidrs": "10.1.0.0/16", "exclude-outbound-uids": "1000", "exclude-outbound-gids": "1000",
		"capture-dns": "nameservers", "dns-proxy-port": "17053",
	}
	var chartValues []map[string]any
	for _, r := range redirectValues {
		chartValues = append(chartValues, map[string]any{"inject": map[string]any{"redirect": r}})
	}
	chartValues = append(chartValues,
		map[string]any{"inject": map[string]any{"redirect": map[string]any{"capture-dns": "all"}, "logFormat": "json"}},
		map[string]any{"mesh": "istio"}, map[string]any{"mesh": "linkerd"})
	for i, values := range chartValues {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel() // in-process and CPU-bound: each chart value on its own core when one is free
			vap := chartPolicy(t, values)
			withShortcut, without := compile(t, vap), compile(t, withoutShortcut(t, vap))
			in, err := newInjector(values)
			if err != nil {
				t.Fatal(err)
			}
			inject := func(p *corev1.Pod) *corev1.Pod {
				out, err := in.inject(p)
				if err != nil {
					return nil // the webhook refuses it (a value it cannot use): the policy's other checks say why
				}
				return out
			}

			type podCase struct {
				name     string
				pod      *corev1.Pod
				shortcut bool // settingsAsChart
			}
			var cases []podCase
			add := func(name string, p *corev1.Pod, shortcut bool) {
				if p != nil {
					cases = append(cases, podCase{name, p, shortcut})
				}
			}
			add("sets nothing", pod("p"), true)
			add("sets nothing, injected", inject(pod("p")), true)
			add("another annotation, injected", inject(pod("p", annotations("example.com/note", "x"))), true)
			add("an annotation under traffic.meshinit.io/ that sets nothing", pod("p", annotations("traffic.meshinit.io/note", "x")), true)
			for key, value := range settingValues {
				a := annotations("traffic.meshinit.io/"+key, value)
				add(key+" annotated", pod("p", a), false)
				add(key+" annotated, injected", inject(pod("p", a)), false)
				if injected := inject(pod("p")); injected != nil {
					forged := pod("p", func(p *corev1.Pod) { *p = *injected.DeepCopy() }, withArg(key, value))
					// Where the value is the chart's, the arguments are still the ones the injector writes.
					add(key+" in the arguments only", forged, slices.Equal(redirectContainer(forged).Args, redirectContainer(injected).Args))
				}
			}
			for _, a := range meshSettingAnnotations(t, values) {
				add(a+" annotated", pod("p", annotations(a, "8080")), false)
				add(a+" annotated, injected", inject(pod("p", annotations(a, "8080"))), false)
			}
			if len(cases) < 2*len(settingValues) {
				t.Fatalf("only %d pods: the webhook refused most", len(cases))
			}

			for _, c := range cases {
				for _, rp := range params {
					r := request{object: c.pod, namespace: inNamespace, params: rp}
					var shortcut bool
					withShortcut.eval(t, r, []string{"variables.settingsAsChart"}, &shortcut)
					if shortcut != c.shortcut {
						t.Errorf("pod %q: settingsAsChart %v, want %v", c.name, shortcut, c.shortcut)
					}
					got, want := withShortcut.denials(t, r), without.denials(t, r)
					if !slices.Equal(got, want) {
						t.Errorf("pod %q, RedirectPolicy %s: with settingsAsChart denied\n  %q\nreading every setting\n  %q", c.name, rp.GetName(), got, want)
					}
				}
			}
		})
	}
}

// meshSettingAnnotations are the annotations of the mesh preset values
// select that meshinit reads as a setting.
func meshSettingAnnotations(t *testing.T, values map[string]any) []string {
	t.Helper()
	in, err := newInjector(values)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range in.config.MeshAnnotations {
		if a.Setting != "" {
			out = append(out, a.Annotation)
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
