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
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/redirect"
)

// withoutDefaultPolicy installs the chart with defaultRedirectPolicy.enabled
// false and deletes the default RedirectPolicy (as helm upgrade would),
// restoring both when the test ends.
func (c *cluster) withoutDefaultPolicy(t *testing.T) {
	t.Helper()
	c.install(t, testValuesWith(func(policy map[string]any) { policy["defaultRedirectPolicy"] = map[string]any{"enabled": false} }))
	if err := c.client.Delete(context.Background(), redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{})); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.install(t, testValues())
		c.awaitInstalled(t)
	})
	c.awaitVerdict(t, "team-a", pod("probe", injected, annotations(excludeInbound, "8443")), verdict{})
}

// TestMissingParameters: with no RedirectPolicy for a binding to select,
// that binding admits (parameterNotFoundAction: Allow); namespaces with their
// own RedirectPolicy still get it.
func TestMissingParameters(t *testing.T) {
	c := apiServer(t)
	c.withoutDefaultPolicy(t)
	for _, tc := range []struct {
		name, namespace string
		pod             *corev1.Pod
		want            verdict
	}{
		{"no RedirectPolicy at all: anything goes", "team-a",
			pod("p", annotations(excludeInbound, "*", includeInbound, "", excludeOutbound, "garbage")), verdict{}},
		{"the namespace's own policy still holds", "team-strict",
			pod("p", injected, annotations(excludeInbound, "9090")), verdict{namespaceBinding, msgStrictExcluded9090, metav1.StatusReasonForbidden}},
		{"the namespace's own Required still holds", "team-strict",
			pod("p"), verdict{namespaceBinding, "pod arrived without the meshinit-redirect init container (is the meshinit webhook running?), but RedirectPolicy team-strict/strict requires every port (interception: Required) to reach the proxy", metav1.StatusReasonForbidden}},
		{"interception Optional admits an un-injected pod", "team-lax", pod("p"), verdict{}},
		{"interception Optional admits a privileged container", "team-lax", pod("p", injected, privileged("app")), verdict{}},
		{"interception Optional, no outbound ports: the proxy UID is no concern", "team-lax", pod("p", injected, runAsUser("app", 1337)), verdict{}},
		{"interception Required forbids the proxy UID without outbound ports", "team-strict",
			pod("p", injected, runAsUser("app", 1337)), verdict{namespaceBinding, strings.ReplaceAll(msgMust("team-strict/strict", "every port (interception: Required)", "app", 0, fixUID), "SUBJECT", "pod"),
				metav1.StatusReasonForbidden}},
		{"interception Required forbids a forged meshinit-redirect", "team-strict",
			pod("p", injected, forged(func(c *corev1.Container) { c.Command = []string{"true"} })), verdict{namespaceBinding,
				"init container meshinit-redirect is not meshinit's: it sets command, but RedirectPolicy team-strict/strict requires every port (interception: Required) to reach the proxy", metav1.StatusReasonForbidden}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.checkVerdict(tc.namespace, tc.pod, tc.want); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestAPIServerParsesLikeGo runs the shared table of annotation values
// through a real API server: for each value in each annotation, the policy
// must reject exactly the values redirect.ParsePortList rejects (its list
// limits included), and name exactly the required ports the parsed list fails
// to intercept.
func TestAPIServerParsesLikeGo(t *testing.T) {
	c := apiServer(t)
	c.withoutDefaultPolicy(t)
	ns := testkit.RunName("table")
	c.createNamespace(t, namespace(ns, namespaceLabel, "enabled"))
	c.applyPolicy(t, ns, "probes", v1alpha1.RedirectPolicySpec{
		RequiredInboundPorts: ports(probePorts...), RequiredOutboundPorts: ports(probePorts...), Interception: v1alpha1.InterceptionOptional,
	})
	// Injected: with ports required, an intercepted pod must carry
	// meshinit's container, even under interception Optional.
	c.awaitVerdict(t, ns, pod("probe", injected, annotations(excludeOutbound, "1")), verdict{namespaceBinding,
		"port 1 is required by RedirectPolicy " + ns + "/probes and cannot be listed in traffic.meshinit.io/exclude-outbound-ports", ""})

	direction := map[string]string{includeInbound: "inbound", excludeInbound: "inbound", includeOutbound: "outbound", excludeOutbound: "outbound"}
	for _, a := range portListAnnotations {
		for _, tc := range portListCases {
			t.Run(a.prefix+"/"+tc.name, func(t *testing.T) {
				l, goErr := redirect.ParsePortList(tc.value)
				got, err := verdictOf(c.createDryRun(ns, pod("p", injected, annotations(a.annotation, tc.value))))
				if err != nil {
					t.Fatal(err)
				}
				if goErr != nil {
					prefix, why := unreadable(a.annotation, tc.value, " is not a port 1-65535 or a range first-last of them")
					suffix := fmt.Sprintf("%s, so RedirectPolicy %s/probes cannot check that %s %s intercepted",
						why, ns, direction[a.annotation], portsAre(probePorts))
					if got.binding != namespaceBinding || got.reason != metav1.StatusReasonInvalid ||
						!strings.HasPrefix(got.message, prefix) || !strings.HasSuffix(got.message, suffix) {
						t.Errorf("%s (Go: %v): got %+v", short(tc.value), goErr, got)
					}
					return
				}
				var missed []int
				for _, p := range probePorts {
					if a.violates(l, uint16(p)) {
						missed = append(missed, p)
					}
				}
				want := verdict{}
				switch {
				case len(missed) == 0:
				case a.annotation == includeInbound || a.annotation == includeOutbound:
					want = verdict{namespaceBinding, fmt.Sprintf(`%s required by RedirectPolicy %s/probes and must be listed in %s (or set it to "*")`, portsAre(missed), ns, a.annotation), metav1.StatusReasonForbidden}
				default:
					want = verdict{namespaceBinding, fmt.Sprintf("%s required by RedirectPolicy %s/probes and cannot be listed in %s", portsAre(missed), ns, a.annotation), metav1.StatusReasonForbidden}
				}
				if got != want {
					t.Errorf("%s (Go: %q):\n got  %+v\n want %+v", short(tc.value), l, got, want)
				}
			})
		}
	}
}

// portsAre renders ports as the policy's messages do.
func portsAre(ps []int) string {
	if len(ps) == 1 {
		return fmt.Sprintf("port %d is", ps[0])
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return "ports " + strings.Join(s, ", ") + " are"
}

// TestWorkloadUpdates: a workload update is checked only when it changes the
// pod template, so a workload created before its namespace opted in can
// still be scaled, relabelled and deleted, but not given another violating
// template.
func TestWorkloadUpdates(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	ns := namespace(testkit.RunName("team-later"))
	c.createNamespace(t, ns)
	for _, w := range workloads {
		t.Run("before opting in/"+w.kind, func(t *testing.T) {
			obj := w.of(pod(strings.ToLower(w.kind), annotations(excludeInbound, "8443")))
			obj.SetNamespace(ns.Name)
			if err := c.client.Create(ctx, obj); err != nil {
				t.Fatalf("creating before the namespace opts in: %v", err)
			}
		})
	}
	ns.Labels[namespaceLabel] = "enabled"
	if err := c.client.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	c.awaitVerdict(t, ns.Name, pod("probe", injected, annotations(excludeInbound, "8443")), verdict{clusterBinding, msgExcluded8443, ""})

	for _, w := range workloads {
		t.Run("after/"+w.kind, func(t *testing.T) {
			obj := w.of(pod(strings.ToLower(w.kind)))
			obj.SetNamespace(ns.Name)
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			obj.SetLabels(map[string]string{"relabelled": "yes"})
			if err := c.client.Update(ctx, obj); err != nil {
				t.Errorf("an update that keeps the pod template: %v", err)
			}
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			// A Job's pod template is immutable (the API server says so before
			// admission policies run).
			if w.kind != "Job" {
				templateOf(obj).Annotations[excludeInbound] = "8443,9443"
				if got, err := verdictOf(c.client.Update(ctx, obj)); err != nil || got.message != msgExcludedBoth {
					t.Errorf("an update that changes the pod template: verdict %+v, error %v", got, err)
				}
			}
			if err := c.client.Delete(ctx, obj); err != nil {
				t.Errorf("deleting: %v", err)
			}
		})
	}
}

// TestDNSRequired: where a RedirectPolicy requires outbound port 53
// (team-dns, interception AllowOptOut, so that alone decides) or
// interception (team-strict), a pod can neither point its captured DNS at a
// port of its own (dns-proxy-port, unless allowProxyPortOverride) nor
// capture less DNS than the chart does (capture-dns), in its annotations or,
// with the webhook, in meshinit's init container's arguments. In policy
// mode the API server injects the annotations' values, so the same
// annotations are refused the same way.
func TestDNSRequired(t *testing.T) {
	inEachInjector(t, testDNSRequired)
}

func testDNSRequired(t *testing.T, c *cluster) {
	dnsNS := testkit.RunName("team-dns")
	c.createNamespace(t, namespace(dnsNS, namespaceLabel, "enabled"))
	spec := v1alpha1.RedirectPolicySpec{RequiredOutboundPorts: ports(53), Interception: v1alpha1.InterceptionAllowOptOut}
	c.applyPolicy(t, dnsNS, "dns", spec)
	// In policy mode a forged init container is replaced by meshinit's, so
	// its arguments are the webhook's concern only.
	forged := c.injector == ""
	refused := func(ns, policy, what, requires string) verdict {
		return verdict{namespaceBinding, "pod sets " + what + ", but RedirectPolicy " + policy + " requires " + requires, metav1.StatusReasonForbidden}
	}

	t.Run("DNS proxy port", func(t *testing.T) {
		port := refused(dnsNS, dnsNS+"/dns", "the DNS proxy port 5353 (traffic.meshinit.io/dns-proxy-port; the chart's: 15053)",
			"its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)")
		byAnnotation := pod("p", injected, annotations(captureDNSAnnotation, "all", dnsProxyPortAnnotation, "5353"))
		byArgument := pod("p", injected, withArg("capture-dns", "all"), withArg("dns-proxy-port", "5353"))
		c.awaitVerdict(t, dnsNS, byAnnotation, port)
		if forged {
			if err := c.checkVerdict(dnsNS, byArgument, port); err != nil {
				t.Error(err)
			}
		}
		allowed := spec
		allowed.AllowProxyPortOverride = true
		c.applyPolicy(t, dnsNS, "dns", allowed)
		t.Cleanup(func() { c.applyPolicy(t, dnsNS, "dns", spec) })
		c.awaitVerdict(t, dnsNS, byAnnotation, verdict{})
		if err := c.checkVerdict(dnsNS, byArgument, verdict{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("DNS capture", func(t *testing.T) {
		captureAll := testValues()
		captureAll["inject"] = map[string]any{"redirect": map[string]any{"capture-dns": "all"}}
		c.install(t, captureAll)
		t.Cleanup(func() {
			c.install(t, testValues())
			c.awaitInstalled(t)
		})
		captured := withArg("capture-dns", "all") // meshinit's container under this chart
		requires53 := "outbound port 53 to reach the proxy"
		requiresInterception := "interception (interception: Required)"
		capture := func(value, chart string) string {
			return "DNS capture to " + value + " (traffic.meshinit.io/capture-dns; the chart's: " + chart + "), which sends DNS around the DNS proxy"
		}
		c.awaitVerdict(t, dnsNS, pod("p", injected, captured, annotations(captureDNSAnnotation, "off")),
			refused(dnsNS, dnsNS+"/dns", capture("off", "all"), requires53))
		// The API server refreshes each policy on its own: in policy mode the
		// injector may still inject the previous chart's capture-dns after the
		// validating policy reads the new one (a full charts run at load 4-8
		// saw it). A pod that sets nothing is admitted once both agree.
		c.awaitVerdict(t, "team-strict", pod("ok", injected, captured), verdict{})
		for _, tc := range []struct {
			name, ns string
			pod      *corev1.Pod
			want     verdict
			forged   bool // the pod's own init container arguments
		}{
			{name: "off where port 53 is required", ns: dnsNS, pod: pod("p", injected, captured, annotations(captureDNSAnnotation, "off")),
				want: refused(dnsNS, dnsNS+"/dns", capture("off", "all"), requires53)},
			{name: "nameservers where interception is Required", ns: "team-strict", pod: pod("p", injected, captured, annotations(captureDNSAnnotation, "nameservers")),
				want: refused("team-strict", "team-strict/strict", capture("nameservers", "all"), requiresInterception)},
			{name: "the chart's", ns: "team-strict", pod: pod("ok", injected, captured, annotations(captureDNSAnnotation, "all"))},
			{name: "not set", ns: "team-strict", pod: pod("ok", injected, captured)},
			{name: "off where nothing requires DNS", ns: "team-a", pod: pod("ok", injected, captured, annotations(captureDNSAnnotation, "off"))},
			{name: "off in the arguments", ns: dnsNS, pod: pod("p", injected, withArg("capture-dns", "off")), forged: true,
				want: refused(dnsNS, dnsNS+"/dns", capture("off", "all"), requires53)},
			{name: "unreadable in the arguments", ns: "team-strict", pod: pod("p", injected, withArg("capture-dns", "on")), forged: true,
				want: refused("team-strict", "team-strict/strict", capture("a value that cannot be read", "all"), requiresInterception)},
			{name: "the arguments less than the annotation", ns: "team-strict", pod: pod("p", injected, withArg("capture-dns", "nameservers"), annotations(captureDNSAnnotation, "all")), forged: true,
				want: refused("team-strict", "team-strict/strict", capture("nameservers", "all"), requiresInterception)},
		} {
			if tc.forged && !forged {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				if err := c.checkVerdict(tc.ns, tc.pod, tc.want); err != nil {
					t.Error(err)
				}
			})
		}
	})
}
