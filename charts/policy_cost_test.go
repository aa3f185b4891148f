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
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/redirect"
)

// maxRequiredPorts and maxAllowedCIDRs are the CRD's maxItems for each list
// of required ports and for allowedOutboundCIDRExclusions.
const (
	maxRequiredPorts = 64
	maxAllowedCIDRs  = 64
)

// costPolicy requires the most ports a RedirectPolicy can list, and allows
// excluding the most CIDRs, the one that contains bigPod's exclusions last.
func costPolicy() v1alpha1.RedirectPolicySpec {
	var in, out []int
	var allowed []string
	for i := range maxRequiredPorts {
		in = append(in, 20000+i)
		out = append(out, 30000+i)
	}
	for i := range maxAllowedCIDRs - 1 {
		allowed = append(allowed, fmt.Sprintf("172.16.%d.0/24", i))
	}
	allowed = append(allowed, "10.0.0.0/8")
	return v1alpha1.RedirectPolicySpec{
		RequiredInboundPorts: ports(in...), RequiredOutboundPorts: ports(out...),
		// AllowOptOut: with ports listed, a pod is held to exactly those
		// (Required would require every port, and no list could exclude
		// any: the lists would be cheap to check).
		AllowedOutboundCIDRExclusions: cidrs(allowed), Interception: v1alpha1.InterceptionAllowOptOut,
	}
}

// longPortList is n entries, alternating ports and ranges, none of them a
// port costPolicy requires; with violate, the last entry is port 20063.
func longPortList(n int, violate bool) string {
	entries := make([]string, n)
	for i := range entries {
		if i%2 == 0 {
			entries[i] = fmt.Sprint(1000 + i)
		} else {
			entries[i] = fmt.Sprintf("%d-%d", 40000+i, 40000+i+5)
		}
	}
	if violate {
		entries[n-1] = fmt.Sprint(20000 + maxRequiredPorts - 1)
	}
	return strings.Join(entries, ", ")
}

// bigPod has 100 app containers and 10 init containers (meshinit's first),
// each with a securityContext, and the five list settings with n entries
// each, in its annotations and in meshinit's arguments; the include lists
// carry what costPolicy and testValues require (the inbound ports,
// 0.0.0.0/0 and ::/0), so that the pod is compliant unless violate.
func bigPod(n int, violate bool) *corev1.Pod {
	lists := []string{
		redirect.AnnotationIncludeInboundPorts, "8443,9443,20000-20063, " + longPortList(n-3, false),
		redirect.AnnotationExcludeInboundPorts, longPortList(n, violate),
		redirect.AnnotationExcludeOutboundPorts, longPortList(n, false),
		redirect.AnnotationIncludeOutboundCIDRs, "0.0.0.0/0,::/0," + cidrList(n-2),
		redirect.AnnotationExcludeOutboundCIDRs, cidrList(n),
	}
	opts := []podOption{containers(100), labels(podLabel, "true"), func(p *corev1.Pod) {
		for i := range 9 {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init-%d", i), Image: "init"})
		}
		for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				list[i].SecurityContext = &corev1.SecurityContext{
					RunAsUser: ptr.To(int64(2000 + i)), RunAsGroup: ptr.To(int64(2000 + i)), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CHOWN", "NET_BIND_SERVICE", "KILL"}, Drop: []corev1.Capability{"ALL"}},
				}
			}
		}
	}, injected, annotations(lists...)}
	for i := 0; i < len(lists); i += 2 {
		opts = append(opts, withArg(strings.TrimPrefix(lists[i], "traffic.meshinit.io/"), lists[i+1]))
	}
	return pod("big", opts...)
}

// costFigures evaluates the policy in-process for r, fails on an evaluation
// error or a denial other than want, and returns the runtime cost of the
// validations and of the messages.
func costFigures(t *testing.T, c *compiled, r request, want string) (validations, messages int64) {
	t.Helper()
	denied := ""
	if all := c.denials(t, r); len(all) > 0 {
		denied = all[0]
	}
	if denied != want {
		t.Fatalf("denied with %q, want %q", denied, want)
	}
	return c.cost(t, r)
}

func logCost(t *testing.T, what string, validations, messages int64) {
	t.Helper()
	used := validations + messages
	t.Logf("%s: cost %d (validations %d + messages %d) of %d: %.1f%% used, headroom %d",
		what, used, validations, messages, celconfig.RuntimeCELCostBudget,
		100*float64(used)/celconfig.RuntimeCELCostBudget, celconfig.RuntimeCELCostBudget-used)
}

// TestCostHeadroom evaluates the policy in-process for a pod with 110
// containers and every list setting (annotations and meshinit's arguments)
// up to the most entries allowed, against a RedirectPolicy with the most
// required ports and allowed CIDRs, and checks the runtime cost stays under
// a quarter of the API server's budget of one evaluation
// (celconfig.RuntimeCELCostBudget; each expression is also limited to
// celconfig.PerCallLimit). Run with -v for the figures.
func TestCostHeadroom(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	params := redirectPolicy(releaseNamespace, "default", costPolicy())
	ns := namespace("team", namespaceLabel, "enabled")
	for _, n := range []int{10, 100, maxListEntries} {
		for _, violate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d entries, violating=%v", n, violate), func(t *testing.T) {
				p := bigPod(n, violate)
				for k, v := range p.Annotations {
					if overLimits(v) {
						t.Fatalf("%s is over the list limits: %d bytes", k, len(v))
					}
				}
				want := ""
				if violate {
					want = "port 20063 is required by RedirectPolicy meshinit-system/default and cannot be listed in traffic.meshinit.io/exclude-inbound-ports"
				}
				validations, messages := costFigures(t, c, request{object: p, namespace: ns, params: params}, want)
				logCost(t, fmt.Sprintf("lists of %d entries, %d required ports each way, %d allowed CIDRs", n, maxRequiredPorts, maxAllowedCIDRs), validations, messages)
				if used := validations + messages; used > celconfig.RuntimeCELCostBudget/4 {
					t.Errorf("cost %d is more than a quarter of the budget %d", used, celconfig.RuntimeCELCostBudget)
				}
			})
		}
	}
}

// TestMessagesOnAdmittedPods: the API server evaluates every
// messageExpression after the validations, passed or not, in an activation
// of its own (k8s.io/apiserver validating.validator.Validate), so a message
// that reads more than whether its validation admitted would make every
// admitted pod pay for computing it. On pods the policy admits, the
// messages cost no more than the validations (which their activation
// computes again to know they admitted).
func TestMessagesOnAdmittedPods(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	ns := namespace("team", namespaceLabel, "enabled")
	for name, r := range map[string]request{
		"injected, the default RedirectPolicy": {object: pod("small", injected), namespace: ns,
			params: redirectPolicy(releaseNamespace, "default", v1alpha1.RedirectPolicySpec{Interception: v1alpha1.InterceptionRequired})},
		"every list at its most entries, the costliest RedirectPolicy": {object: bigPod(maxListEntries, false), namespace: ns,
			params: redirectPolicy(releaseNamespace, "default", costPolicy())},
	} {
		t.Run(name, func(t *testing.T) {
			validations, messages := costFigures(t, c, r, "")
			logCost(t, name, validations, messages)
			if messages > validations {
				t.Errorf("on an admitted pod the messages cost %d, more than the validations' %d: a message reads more than whether its validation admitted", messages, validations)
			}
		})
	}
}

// paddedPod carries, in an annotation and in meshinit's argument, a list
// of about size bytes: far over the limits.
func paddedPod(size int) *corev1.Pod {
	v := strings.Repeat("80,", size/3)
	return pod("padded", labels(podLabel, "true"), injected,
		annotations(redirect.AnnotationExcludeInboundPorts, v), withArg("exclude-outbound-ports", v))
}

// TestCostOfPaddedLists: lists far over the limits (an annotation near the
// API server's 256 KiB, an argument of 1 MiB) are refused before they are
// read (nor quoted in the message) at a cost that grows with their size,
// so they cannot exhaust the budget to slip through under
// policy.failurePolicy Ignore.
func TestCostOfPaddedLists(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	params := redirectPolicy(releaseNamespace, "default", costPolicy())
	ns := namespace("team", namespaceLabel, "enabled")
	costs := map[int64]bool{}
	for _, size := range []int{8 << 10, 200 << 10, 1 << 20} {
		p := paddedPod(size)
		v := p.Annotations[redirect.AnnotationExcludeInboundPorts]
		want := tooLong(redirect.AnnotationExcludeInboundPorts, v, "meshinit-system/default", "inbound", "ports "+portList(costPolicy().RequiredInboundPorts)+" are")
		validations, messages := costFigures(t, c, request{object: p, namespace: ns, params: params}, want)
		logCost(t, fmt.Sprintf("lists of %d bytes", len(v)), validations, messages)
		costs[validations+messages] = true
		if used := validations + messages; used > celconfig.RuntimeCELCostBudget/100 {
			t.Errorf("cost %d is more than 1%% of the budget %d", used, celconfig.RuntimeCELCostBudget)
		}
	}
	if len(costs) != 1 {
		t.Errorf("the cost grows with the size of the lists: %v", costs)
	}
}

// portList renders ports as the policy's messages list them.
func portList(ps []v1alpha1.Port) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// TestCostOnAPIServer creates (dry run) the big pod with lists of the most
// entries and the padded pod in a namespace whose RedirectPolicy requires
// the most ports: a real API server admits the compliant one and denies the
// violating and the padded ones with the policy's message, not a cost error.
func TestCostOnAPIServer(t *testing.T) {
	c := apiServer(t)
	ns := testkit.RunName("cost")
	c.createNamespace(t, namespace(ns))
	c.applyPolicy(t, ns, "max", costPolicy())
	c.awaitVerdict(t, ns, bigPod(maxListEntries, true), verdict{namespaceBinding,
		"port 20063 is required by RedirectPolicy " + ns + "/max and cannot be listed in traffic.meshinit.io/exclude-inbound-ports", metav1.StatusReasonForbidden})
	if err := c.checkVerdict(ns, bigPod(maxListEntries, false), verdict{}); err != nil {
		t.Fatal(err)
	}
	// Both RedirectPolicies refuse it; the API server names either.
	padded := paddedPod(200 << 10)
	v := padded.Annotations[redirect.AnnotationExcludeInboundPorts]
	got, err := verdictOf(c.createDryRun(ns, padded))
	want := redirect.AnnotationExcludeInboundPorts + " " + strconv.Quote(v[:64]+"...") + " is longer than 4096 bytes or 256 entries, so RedirectPolicy "
	if err != nil || got.reason != metav1.StatusReasonInvalid || !strings.HasPrefix(got.message, want) {
		t.Fatalf("the padded pod: verdict %+v, error %v; want a message starting %s", got, err, want)
	}
}
