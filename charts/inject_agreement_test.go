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
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/redirect"
)

// printable reports whether every value is printable ASCII: where messages
// of both injectors are the same word for word (Go's strconv.Quote and CEL's
// strings.quote escape other characters differently, and Go cuts a long
// value after 64 bytes where CEL cuts after 64 characters).
func printable(values ...string) bool {
	for _, v := range values {
		for _, r := range v {
			if r > unicode.MaxASCII || !unicode.IsPrint(r) {
				return false
			}
		}
	}
	return true
}

// agree compares the two injectors' outcomes for p created in ns: the same
// refusal (word for word when exact, else both refusing), the same warning,
// the same container arguments.
func agree(t *testing.T, tw *twins, ns *corev1.Namespace, p *corev1.Pod, exact bool) {
	t.Helper()
	web, pol := tw.byWebhook(t, ns, p), tw.byPolicy(t, ns, p)
	if !exact && web.Denied != "" && pol.Denied != "" {
		web.Denied, pol.Denied = "(denied)", "(denied)"
	}
	if fmt.Sprint(web) != fmt.Sprint(pol) {
		t.Errorf("namespace %s %v, pod labels %v annotations %q hostNetwork %v:\n webhook %s\n policy  %s",
			ns.Name, ns.Labels, p.Labels, p.Annotations, p.Spec.HostNetwork, web, pol)
	}
}

// TestPolicyDecidesLikeWebhook: for every combination of namespace (an
// ordinary one, kube-system, the release's), its labels (injection,
// PodSecurity enforce), the pod's meshinit.io/inject label, hostNetwork and
// a valid or an invalid annotation, with the chart's defaults and with
// podSecurity deny and privileged, the policies and the webhook (as its
// selectors send it pods) refuse, warn and inject alike.
func TestPolicyDecidesLikeWebhook(t *testing.T) {
	absent := "(absent)"
	for _, values := range []map[string]any{nil,
		{"inject": map[string]any{"podSecurity": "deny", "privileged": true}}} {
		tw := newTwins(t, values)
		n := 0
		for _, nsName := range []string{"app", "kube-system", releaseNamespace} {
			for _, injection := range []string{absent, "enabled", "disabled", "other"} {
				for _, enforce := range []string{absent, "baseline", "restricted", "privileged"} {
					ns := namespace(nsName)
					if injection != absent {
						ns.Labels[namespaceLabel] = injection
					}
					if enforce != absent {
						ns.Labels["pod-security.kubernetes.io/enforce"] = enforce
					}
					for _, label := range []string{absent, "", "true", "false", "yes"} {
						for _, host := range []bool{false, true} {
							for _, excluded := range []string{"8080", "8080-"} {
								p := pod("p", annotations(excludeInbound, excluded))
								if label != absent {
									p.Labels[podLabel] = label
								}
								p.Spec.HostNetwork = host
								agree(t, tw, ns, p, true)
								n++
							}
						}
					}
				}
			}
		}
		t.Logf("values %v: %d cases", values, n)
	}
}

// inNamespace is the opted-in namespace of the list cases.
var inNamespace = namespace("team", namespaceLabel, "enabled")

// TestPolicyReadsSettingsLikeWebhook runs the shared tables of list values
// (portListCases, cidrListCases) through each list annotation of both
// injectors: the same refusals, naming the annotation and quoting the value
// and the bad entry as redirect does, or the same arguments. The CIDR lists
// again with inject.redirect.ipv6 off, which refuses IPv6 entries.
func TestPolicyReadsSettingsLikeWebhook(t *testing.T) {
	type list struct {
		annotation string
		values     []string
	}
	var portValues, cidrValues []string
	for _, tc := range portListCases {
		portValues = append(portValues, tc.value)
	}
	for _, tc := range cidrListCases {
		cidrValues = append(cidrValues, tc.value)
	}
	var idValues, interfaceValues []string
	for _, tc := range idListCases {
		idValues = append(idValues, tc.value)
	}
	for _, tc := range interfaceListCases {
		interfaceValues = append(interfaceValues, tc.value)
	}
	scalars := []string{"2102", " 2102 ", "0002102", "0", "1", "65535", "65536", "4294967294", "4294967295", "-1", "x", ""}
	ipv6Off := map[string]any{"inject": map[string]any{"redirect": map[string]any{"ipv6": "off"}}}
	for _, run := range []struct {
		values map[string]any
		lists  []list
	}{
		{nil, []list{{includeInbound, portValues}, {excludeInbound, portValues}, {excludeOutbound, portValues}, {includeCIDRs, cidrValues}, {excludeCIDRs, cidrValues},
			{includeOutbound, portValues}, {excludeUIDs, idValues}, {excludeGIDs, idValues}, {excludeInterfaces, interfaceValues},
			{proxyUIDAnnotation, scalars}, {proxyGIDAnnotation, scalars}, {outboundProxyPortAnnotation, scalars}, {inboundProxyPortAnnotation, scalars},
			{dnsProxyPortAnnotation, scalars}, {captureDNSAnnotation, []string{"off", "nameservers", "all", "on", "", " all"}}}},
		{ipv6Off, []list{{includeCIDRs, cidrValues}, {excludeCIDRs, cidrValues}}},
	} {
		tw := newTwins(t, run.values)
		for _, l := range run.lists {
			for _, v := range l.values {
				agree(t, tw, inNamespace, pod("p", annotations(l.annotation, v)), printable(v))
			}
		}
	}
}

// TestPolicyChecksSettingsLikeWebhook: what redirect.Config.Validate refuses
// of the settings together, both injectors refuse alike: each pair of
// include-inbound-ports and exclude-inbound-ports values (the lowest port
// both list), every annotation at once, and two bad ones.
func TestPolicyChecksSettingsLikeWebhook(t *testing.T) {
	tw := newTwins(t, nil)
	lists := []string{"", "*", "80", "80,443", "443,80", "8000-8080", "8080", "1-65535", "9090,8000-8100,80", "8100-8200, 8050-8150", "22,80-80", "65535"}
	for _, include := range lists {
		for _, exclude := range lists {
			agree(t, tw, inNamespace, pod("p", annotations(includeInbound, include, excludeInbound, exclude)), true)
		}
	}
	for _, include := range lists {
		for _, exclude := range lists {
			agree(t, tw, inNamespace, pod("p", annotations(includeOutbound, include, excludeOutbound, exclude)), true)
		}
	}
	for _, capture := range []string{"off", "nameservers", "all"} {
		for _, port := range []string{"15053", "15001", "15006", "16001"} {
			agree(t, tw, inNamespace, pod("p", annotations(captureDNSAnnotation, capture, dnsProxyPortAnnotation, port, outboundProxyPortAnnotation, "16001")), true)
		}
	}
	for _, kv := range [][]string{
		{includeOutbound, "80,443,8000-8100", excludeUIDs, "2000, 1000,2000", excludeGIDs, "3000", excludeInterfaces, "net1,eth1", captureDNSAnnotation, "nameservers",
			dnsProxyPortAnnotation, "15054", outboundProxyPortAnnotation, "16001", inboundProxyPortAnnotation, "16006", proxyUIDAnnotation, "2102", proxyGIDAnnotation, "2103"},
		{excludeUIDs, "*", excludeInterfaces, "net+", captureDNSAnnotation, "on", inboundProxyPortAnnotation, "15001"},
		{includeInbound, " * ", excludeInbound, "9050", excludeOutbound, "5432,6379", includeCIDRs, "10.0.0.0/8,fd00::/8", excludeCIDRs, "10.96.0.1/32"},
		{excludeInbound, "x", excludeCIDRs, "y"},
		{excludeInbound, "*", excludeOutbound, "*", excludeCIDRs, "*"},
		{includeInbound, "80,x", excludeInbound, "80", excludeOutbound, "0", includeCIDRs, "::ffff:1.2.3.4", excludeCIDRs, "10.0.0.0/33"},
	} {
		agree(t, tw, inNamespace, pod("p", annotations(kv...)), true)
	}
}

// TestPolicyUsesChartValuesLikeWebhook: the cluster-wide settings
// (inject.redirect, as values files and --set give them), image,
// pull policy, resources, privileged mode and the redirector's log format
// (logFormat json: --log-format=json) reach both injectors alike,
// pods without annotations and with them.
func TestPolicyUsesChartValuesLikeWebhook(t *testing.T) {
	for i, redirectSet := range append(redirectValues,
		map[string]any{"include-inbound-ports": "8080, 0080,80-90", "exclude-outbound-ports": 22, "exclude-outbound-cidrs": "FD00::1/8, 10.1.2.3", "ipv6": "on"},
		map[string]any{"include-outbound-cidrs": "", "exclude-inbound-ports": "9090-9091", "iptables-mode": "legacy"}) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			tw := newTwins(t, map[string]any{"inject": map[string]any{
				"redirect": redirectSet, "image": map[string]any{"repository": "registry.example/redirector", "tag": "v2"},
				"imagePullPolicy": "Always", "privileged": i%2 == 1, "logFormat": []string{"json", "text"}[i%2],
			}})
			agree(t, tw, inNamespace, pod("p"), true)
			agree(t, tw, inNamespace, pod("p", annotations(excludeInbound, "9091", includeCIDRs, "*", excludeOutbound, "")), true)
		})
	}
}

// TestPolicyRefusesBadChartValues: a cluster-wide list the webhook would not
// start with (redirect.FromSettings refuses it) makes the policies refuse
// every pod they would inject, naming the value, with redirect's reason.
func TestPolicyRefusesBadChartValues(t *testing.T) {
	for key, value := range map[string]string{
		"exclude-outbound-ports": "x", "include-inbound-ports": "80-", "exclude-outbound-cidrs": "::ffff:10.0.0.1", "include-outbound-cidrs": "10.0.0.0/8,*",
	} {
		t.Run(key, func(t *testing.T) {
			values := map[string]any{"inject": map[string]any{"redirect": map[string]any{key: value}}}
			_, goErr := redirect.FromSettings(map[string]string{key: value}, redirect.Defaults())
			if goErr == nil {
				t.Fatalf("redirect accepts %s %q", key, value)
			}
			pol := renderMode(t, values, "policy")
			var vap, ps admissionregistrationv1.ValidatingAdmissionPolicy
			charts.DecodeOne(t, pol, "ValidatingAdmissionPolicy", injectName, &vap)
			charts.DecodeOne(t, pol, "ValidatingAdmissionPolicy", injectPodSecurityName, &ps)
			tw := &twins{inject: compile(t, &vap), podSecurity: compile(t, &ps), matchNS: vap.Spec.MatchConstraints.NamespaceSelector}
			got := tw.byPolicy(t, inNamespace, pod("p"))
			// redirect names the setting by its key: "invalid <key> <value>: <why>".
			want := "meshinit: pod not injected: invalid inject.redirect." + strings.TrimPrefix(goErr.Error(), "invalid ")
			if got.Denied != want {
				t.Errorf("got  %s\nwant denied: %s", got, want)
			}
			if other := tw.byPolicy(t, namespace("plain"), pod("p")); other.String() != (outcome{}).String() {
				t.Errorf("a pod not opted in: %s, want it admitted untouched", other)
			}
		})
	}
}

// TestInjectDefaultsAsLiterals: where the chart's value of a setting is
// redirect's default, the policies take it as a literal for a pod without
// its annotation instead of reading it again. Such a pod gets
// redirect.Defaults' arguments and no error, the same as a pod that writes
// every default as its annotation (which the policies read in full), at
// less than half the cost.
func TestInjectDefaultsAsLiterals(t *testing.T) {
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(t, renderMode(t, nil, "policy"), "ValidatingAdmissionPolicy", injectName, &vap)
	c := compile(t, &vap)
	defaults := map[string]string{}
	for _, a := range redirect.Defaults().Args() {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		defaults[k] = v
	}
	var kv []string
	for _, a := range redirect.AnnotationNames() {
		v, ok := defaults[a[strings.LastIndex(a, "/")+1:]]
		if !ok {
			t.Fatalf("annotation %s: no setting of that name in redirect.Defaults().Args()", a)
		}
		kv = append(kv, a, v)
	}
	want := append([]string{"apply"}, redirect.Defaults().Args()...)
	var costs []int64
	for _, p := range []*corev1.Pod{pod("p"), pod("p", annotations(kv...))} {
		r := request{object: p, namespace: inNamespace}
		var args, errs []string
		c.eval(t, r, []string{"variables.args", "variables.settingErrors"}, &args, &errs)
		if !slices.Equal(args, want) || len(errs) > 0 {
			t.Errorf("annotations %v: args %q, errors %q; want %q and none", p.Annotations, args, errs, want)
		}
		cost, _ := c.cost(t, r)
		costs = append(costs, cost)
	}
	t.Logf("cost without annotations %d, with every default as one %d", costs[0], costs[1])
	if 2*costs[0] >= costs[1] {
		t.Errorf("cost without annotations %d, with every default as one %d: the defaults are read again", costs[0], costs[1])
	}
}
