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

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/redirect"
)

// redirectValues are inject.redirect values the chart is checked
// with, numbers and strings as values files and --set give them.
var redirectValues = []map[string]any{
	nil,
	{"outbound-proxy-port": 16001, "inbound-proxy-port": "16006", "proxy-uid": "2000", "proxy-gid": 0,
		"ignored-inbound-ports": "15020-15021,15090", "ipv6": "off", "iptables-mode": "nft"},
	{"proxy-uid": int64(4294967294), "ignored-inbound-ports": "", "exclude-outbound-ports": "22,53",
		"include-outbound-cidrs": "10.0.0.0/8", "exclude-outbound-cidrs": "169.254.169.254/32"},
	{"ignored-inbound-ports": 15021, "proxy-gid": float64(1000)},
	{"capture-dns": "all", "dns-proxy-port": 15054, "exclude-outbound-uids": "1000,2000", "exclude-outbound-gids": 3000,
		"include-outbound-ports": "80,443,8000-8080", "exclude-inbound-interfaces": "eth1,net1"},
}

// chartSettings are the policy's view of the chart's redirect settings.
type chartSettings struct {
	image    string
	args     []string
	podArgs  []int64
	uid, gid int64
	first    bool
	// listDefaults are the annotations' values for a pod without them.
	listDefaults map[string]string
}

// listAnnotations maps every list annotation the policy reads to the
// prefix of its variables.
func listAnnotations() map[string]string {
	out := map[string]string{}
	for _, a := range portListAnnotations {
		out[a.annotation] = a.prefix
	}
	for _, a := range cidrListAnnotations {
		out[a.annotation] = a.prefix
	}
	for _, a := range idListAnnotations {
		out[a.annotation] = a.prefix
	}
	return out
}

// scalarAnnotations are the annotations of settings that are not lists:
// the proxy's ports and identity (checked against the RedirectPolicy's
// allowProxy*Override) and DNS capture (not restricted: it only captures
// more).
var scalarAnnotations = []string{
	redirect.AnnotationOutboundProxyPort, redirect.AnnotationInboundProxyPort, redirect.AnnotationProxyUID, redirect.AnnotationProxyGID,
	redirect.AnnotationCaptureDNS, redirect.AnnotationDNSProxyPort,
}

// readChartSettings renders the chart's policy with values and reads its
// redirect settings in-process.
func readChartSettings(t *testing.T, values map[string]any) chartSettings {
	t.Helper()
	c := compile(t, chartPolicy(t, values))
	r := request{object: pod("p"), namespace: namespace("team"), params: redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{})}
	var s chartSettings
	// The image: what the trust policy's RedirectorTrust names as current.
	var trust v1alpha1.RedirectorTrust
	charts.DecodeOne(t, chartPolicyObjects(t, values), "RedirectorTrust", trustName, &trust)
	s.image = trust.Spec.Current
	c.eval(t, r, []string{"variables.chartArgs", "variables.podArgs", "variables.proxyUID", "variables.proxyGID", "variables.redirectFirst"},
		&s.args, &s.podArgs, &s.uid, &s.gid, &s.first)
	s.listDefaults = map[string]string{}
	for a, prefix := range listAnnotations() {
		var v string
		c.eval(t, r, []string{"variables." + prefix + "Value"}, &v)
		s.listDefaults[a] = v
	}
	return s
}

// redirectSettings is inject.redirect values as the webhook's
// configuration file holds them (the chart renders numbers in decimal).
func redirectSettings(values map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range values {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// annotationArgs returns, for each pod annotation (redirect.AnnotationNames,
// table order), the position in Config.Args of the setting it sets, found
// by setting it: the one argument that changes.
func annotationArgs(t *testing.T) map[string]int {
	t.Helper()
	defaults := redirect.Defaults().Args()
	out := map[string]int{}
	for _, a := range redirect.AnnotationNames() {
		for _, v := range []string{"1", "10.0.0.0/8", "all"} {
			c, err := redirect.FromAnnotations(map[string]string{a: v}, redirect.Defaults())
			if err != nil {
				continue
			}
			for i, arg := range c.Args() {
				if arg != defaults[i] {
					out[a] = i
				}
			}
			break
		}
		if _, ok := out[a]; !ok {
			t.Fatalf("no argument changes with annotation %s", a)
		}
	}
	return out
}

// TestChartSettingsMatchGo: what the policy expects of meshinit's init
// container is what the webhook, configured by the same chart values, writes
// (run in-process), and what the redirect package makes of those values.
// The chart's redirect defaults (one helper) are redirect.Defaults rendered
// by Config.Args; its argument keys are the settings table's, in its order;
// the arguments it leaves to pods are exactly the annotations' settings;
// and its proxy UID and GID are the redirector's.
func TestChartSettingsMatchGo(t *testing.T) {
	positions := annotationArgs(t)
	var wantPodArgs []int64
	for _, i := range positions {
		wantPodArgs = append(wantPodArgs, int64(i+1))
	}
	slices.Sort(wantPodArgs)
	for i, redirectSet := range redirectValues {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			values := map[string]any{"inject": map[string]any{"redirect": redirectSet}}
			s := readChartSettings(t, values)
			rc, err := redirect.FromSettings(redirectSettings(redirectSet), redirect.Defaults())
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"apply"}, rc.Args()...)
			if !slices.Equal(s.podArgs, wantPodArgs) {
				t.Errorf("the policy leaves arguments %v to pods, the annotations set %v", s.podArgs, wantPodArgs)
			}
			if len(s.args) != len(want) {
				t.Fatalf("the policy expects %d arguments %q, Go renders %d %q", len(s.args), s.args, len(want), want)
			}
			for i := range want {
				expect := want[i]
				if slices.Contains(s.podArgs, int64(i)) {
					expect = want[i][:strings.Index(want[i], "=")+1]
				}
				if s.args[i] != expect {
					t.Errorf("argument %d: the policy expects %q, Go renders %q", i, s.args[i], want[i])
				}
			}
			if s.uid != int64(rc.ProxyUID) || s.gid != int64(rc.ProxyGID) {
				t.Errorf("the policy's proxy UID %d GID %d, the redirector's %d %d", s.uid, s.gid, rc.ProxyUID, rc.ProxyGID)
			}

			in, err := newInjector(values)
			if err != nil {
				t.Fatal(err)
			}
			written := redirectContainer(pod("p", injectedBy(in)))
			if written.Image != s.image || !slices.Equal(written.Args, want) {
				t.Errorf("the webhook writes image %q args %q; the policy expects %q %q", written.Image, written.Args, s.image, s.args)
			}
			if s.first != (in.config.Placement == "first") {
				t.Errorf("the policy's placement first %v, the webhook's placement %s", s.first, in.config.Placement)
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		s := readChartSettings(t, nil)
		defaults := redirect.Defaults().Args()
		if got, want := len(s.listDefaults), len(redirect.AnnotationNames())-len(scalarAnnotations); got != want {
			t.Errorf("the policy reads %d list annotations, the webhook %d", got, want)
		}
		for a := range listAnnotations() {
			arg := defaults[positions[a]]
			if want := arg[strings.Index(arg, "=")+1:]; s.listDefaults[a] != want {
				t.Errorf("the policy reads a missing %s as %q, Go's default is %q", a, s.listDefaults[a], want)
			}
		}
	})
}
