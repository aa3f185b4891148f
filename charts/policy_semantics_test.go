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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/testkit"
)

// TestInterceptionSemantics (issue 21, class 7): what interception means,
// each RedirectPolicy alone (the chart's default one removed), with the
// webhook and with the policy injector. Required requires every port both
// ways: a pod that captures nothing, or excludes every port, is refused, as
// is opting out. AllowOptOut and Optional allow opting out and the node's
// network only while they list no port; with a port listed, a pod must be
// intercepted (and may not arrive without meshinit's container) whatever
// they say. What a container must give up follows the direction: a policy
// requiring only inbound ports asks no UID of it.
func TestInterceptionSemantics(t *testing.T) {
	inEachInjector(t, testInterceptionSemantics)
}

func testInterceptionSemantics(t *testing.T, c *cluster) {
	ctx := context.Background()
	c.withoutDefaultPolicy(t)
	optout, inbound := testkit.RunName("optout"), testkit.RunName("inbound")
	for ns, spec := range map[string]v1alpha1.RedirectPolicySpec{
		optout:  {Interception: v1alpha1.InterceptionAllowOptOut},
		inbound: {Interception: v1alpha1.InterceptionOptional, RequiredInboundPorts: ports(8080)},
	} {
		if err := c.client.Create(ctx, namespace(ns, namespaceLabel, "enabled")); err != nil {
			t.Fatal(err)
		}
		c.applyPolicy(t, ns, "x", spec)
	}
	c.awaitVerdict(t, inbound, pod("probe", labels(podLabel, "false")), verdict{namespaceBinding,
		"pod label meshinit.io/inject=false opts out of meshinit, but RedirectPolicy " + inbound + "/x requires inbound port 8080 to reach the proxy", metav1.StatusReasonForbidden})

	refused := func(message string) verdict { return verdict{namespaceBinding, message, metav1.StatusReasonForbidden} }
	const nodeNetwork = "SUBJECT uses the node's network (hostNetwork: true), where meshinit cannot redirect its traffic, but RedirectPolicy "
	const uninjected = "pod arrived without the meshinit-redirect init container (is the meshinit webhook running?), but RedirectPolicy "
	for _, tc := range []struct {
		name, namespace string
		pod             *corev1.Pod
		want            verdict
		// uninjected: the pod arrives without meshinit's container, which
		// the policy injector adds (the pod is then admitted); templates
		// are never expected to carry it.
		uninjected bool
	}{
		{name: "Required: capturing no inbound port", namespace: "team-strict", pod: pod("p", injected, annotations(includeInbound, "")),
			want: refused(`every inbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/include-inbound-ports must be "*"`)},
		{name: "Required: excluding every outbound port", namespace: "team-strict", pod: pod("p", injected, annotations(excludeOutbound, "1-65535")),
			want: refused("every outbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/exclude-outbound-ports cannot list 1-65535")},
		{name: "Required: capturing no outbound destination", namespace: "team-strict", pod: pod("p", injected, annotations(includeCIDRs, "")),
			want: refused(includeCIDRs + ` "" leaves IPv4 and IPv6 destinations out of the proxy (set it to "*"), but RedirectPolicy team-strict/strict requires every outbound port ` +
				"(interception: Required) to reach it and allows excluding no destination (allowedOutboundCIDRExclusions)")},
		{name: "Required: opting out", namespace: "team-strict", pod: pod("p", labels(podLabel, "false")),
			want: refused("SUBJECT label meshinit.io/inject=false opts out of meshinit, but RedirectPolicy team-strict/strict requires every pod in namespace team-strict to be intercepted (interception: Required)")},
		{name: "Required: the node's network", namespace: "team-strict", pod: pod("p", hostNetwork),
			want: refused(nodeNetwork + "team-strict/strict requires every port (interception: Required) to reach the proxy")},
		{name: "Required: a container keeping its capabilities", namespace: "team-strict", pod: pod("p", injected, security("app", func(sc *corev1.SecurityContext) { *sc = corev1.SecurityContext{} })),
			want: refused(strictMust("app", fixAPE, fixDrop))},

		{name: "AllowOptOut, nothing listed: opting out", namespace: optout, pod: pod("ok", labels(podLabel, "false"))},
		{name: "AllowOptOut, nothing listed: the node's network", namespace: optout, pod: pod("ok", hostNetwork)},
		{name: "AllowOptOut, nothing listed: capturing nothing", namespace: optout, pod: pod("ok", injected, annotations(includeInbound, "", includeOutbound, ""))},
		{name: "AllowOptOut, nothing listed: arriving without meshinit's container", namespace: optout, pod: pod("p"), uninjected: true,
			want: refused(uninjected + optout + "/x requires interception (interception: AllowOptOut)")},
		{name: "AllowOptOut, nothing listed: a privileged container", namespace: optout, pod: pod("p", injected, privileged("app")),
			want: refused("SUBJECT container app must not be privileged, because RedirectPolicy " + optout + "/x requires interception (interception: AllowOptOut): " +
				"a process that can take the proxy's UID or GID, reach the redirect rules or send raw packets goes around it (only the proxy containers the chart names in policy.proxyContainers may run as the proxy)")},
		{name: "AllowOptOut, nothing listed: the proxy's UID is no concern", namespace: optout, pod: pod("ok", injected, runAsUser("app", 1337))},

		{name: "Optional, nothing listed: arriving without meshinit's container", namespace: "team-lax", pod: pod("ok")},
		{name: "Optional, nothing listed: a privileged container", namespace: "team-lax", pod: pod("ok", injected, privileged("app"))},

		{name: "Optional, an inbound port listed: opting out", namespace: inbound, pod: pod("p", labels(podLabel, "false")),
			want: refused("SUBJECT label meshinit.io/inject=false opts out of meshinit, but RedirectPolicy " + inbound + "/x requires inbound port 8080 to reach the proxy")},
		{name: "Optional, an inbound port listed: the node's network", namespace: inbound, pod: pod("p", hostNetwork),
			want: refused(nodeNetwork + inbound + "/x requires inbound port 8080 to reach the proxy")},
		{name: "Optional, an inbound port listed: arriving without meshinit's container", namespace: inbound, pod: pod("p"), uninjected: true,
			want: refused(uninjected + inbound + "/x requires inbound port 8080 to reach the proxy")},
		{name: "Optional, an inbound port listed: a container keeping its capabilities (raw packets)", namespace: inbound,
			pod:  pod("p", injected, security("app", func(sc *corev1.SecurityContext) { sc.Capabilities = nil })),
			want: refused(msgMust(inbound+"/x", "inbound port 8080", "app", 0, fixDrop))},
		{name: "Optional, an inbound port listed: no identity asked outbound", namespace: inbound,
			pod: pod("ok", injected, runAsUser("app", 1337), security("app", func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = nil }))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if tc.uninjected && c.injector == "policy" {
				want = verdict{}
			}
			c.checkCase(t, tc.namespace, tc.pod, want, tc.want, tc.uninjected)
		})
	}
	_ = strings.ReplaceAll
}
