package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/redirect"
)

// maxRequiredPorts is the CRD's maxItems for each list of required ports.
const maxRequiredPorts = 64

// costPolicy requires the most ports a RedirectPolicy can list.
func costPolicy() v1alpha1.RedirectPolicySpec {
	var in, out []int
	for i := range maxRequiredPorts {
		in = append(in, 20000+i)
		out = append(out, 30000+i)
	}
	return v1alpha1.RedirectPolicySpec{RequiredInboundPorts: ports(in...), RequiredOutboundPorts: ports(out...), Interception: v1alpha1.InterceptionRequired}
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

// bigPod has 100 app containers and 10 init containers, meshinit's first (as
// the webhook injects it), and the three port-list annotations with n
// entries each; the include list carries the required inbound ports
// (costPolicy's and testValues') so that it is compliant.
func bigPod(n int, violate bool) *corev1.Pod {
	return pod("big", containers(100), labels(podLabel, "true"), func(p *corev1.Pod) {
		for i := range 9 {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init-%d", i), Image: "init"})
		}
	}, injected, annotations(
		redirect.AnnotationIncludeInboundPorts, "8443,9443,20000-20063, "+longPortList(n, false),
		redirect.AnnotationExcludeInboundPorts, longPortList(n, violate),
		redirect.AnnotationExcludeOutboundPorts, longPortList(n, false),
	))
}

// TestCostHeadroom evaluates the policy in-process for a pod with 100
// containers and long annotation lists against a RedirectPolicy with the
// most required ports, and logs the runtime cost against the API server's
// budget of one evaluation (celconfig.RuntimeCELCostBudget; each expression
// is also limited to celconfig.PerCallLimit). Run with -v for the figures.
func TestCostHeadroom(t *testing.T) {
	c := compile(t, chartPolicy(t, nil))
	params := redirectPolicy(releaseNamespace, "default", costPolicy())
	ns := namespace("team", namespaceLabel, "enabled")
	for _, n := range []int{10, 100, 1000} {
		for _, violate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d entries, violating=%v", n, violate), func(t *testing.T) {
				r := request{object: bigPod(n, violate), namespace: ns, params: params}
				res := c.validate(t, r)
				denied := ""
				for _, d := range res.Decisions {
					if d.Evaluation == validating.EvalError {
						t.Fatalf("evaluation error: %s", d.Message)
					}
					if d.Action == validating.ActionDeny && denied == "" {
						denied = d.Message
					}
				}
				want := ""
				if violate {
					want = "port 20063 is required by RedirectPolicy meshinit-system/default and cannot be listed in traffic.meshinit.io/exclude-inbound-ports"
				}
				if denied != want {
					t.Fatalf("denied with %q, want %q", denied, want)
				}
				validations, messages := c.cost(t, r)
				used := validations + messages
				t.Logf("annotation lists of %d entries, %d required ports each way: cost %d (validations %d + messages %d) of %d: %.1f%% used, headroom %d",
					n, maxRequiredPorts, used, validations, messages, celconfig.RuntimeCELCostBudget,
					100*float64(used)/celconfig.RuntimeCELCostBudget, celconfig.RuntimeCELCostBudget-used)
			})
		}
	}
}

// TestCostOnAPIServer creates (dry run) the big pod with 1000-entry lists in
// a namespace whose RedirectPolicy requires the most ports: a real API
// server admits the compliant one and denies the violating one with the
// policy's message, not a cost error.
func TestCostOnAPIServer(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	if err := c.client.Create(ctx, namespace("cost")); err != nil {
		t.Fatal(err)
	}
	c.applyPolicy(t, "cost", "max", costPolicy())
	c.awaitVerdict(t, "cost", bigPod(1000, true), verdict{namespaceBinding,
		"port 20063 is required by RedirectPolicy cost/max and cannot be listed in traffic.meshinit.io/exclude-inbound-ports", metav1.StatusReasonForbidden})
	if err := c.checkVerdict("cost", bigPod(1000, false), verdict{}); err != nil {
		t.Fatal(err)
	}
}
