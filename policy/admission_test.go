package policy

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Messages of the RedirectPolicies the cluster tests install: the default
// (meshinit-system/default: inbound 8443 and 9443, outbound 5432,
// AllowOptOut) and team-strict/strict (inbound 9090, Required).
const (
	msgExcluded8443       = "port 8443 is required by RedirectPolicy meshinit-system/default and cannot be listed in traffic.meshinit.io/exclude-inbound-ports"
	msgExcludedBoth       = "ports 8443, 9443 are required by RedirectPolicy meshinit-system/default and cannot be listed in traffic.meshinit.io/exclude-inbound-ports"
	msgNotIncluded        = `ports 8443, 9443 are required by RedirectPolicy meshinit-system/default and must be listed in traffic.meshinit.io/include-inbound-ports (or set it to "*")`
	msgNotIncluded9443    = `port 9443 is required by RedirectPolicy meshinit-system/default and must be listed in traffic.meshinit.io/include-inbound-ports (or set it to "*")`
	msgExcluded5432       = "port 5432 is required by RedirectPolicy meshinit-system/default and cannot be listed in traffic.meshinit.io/exclude-outbound-ports"
	msgUninjected         = "pod arrived without the meshinit-redirect init container (is the meshinit webhook running?), but RedirectPolicy meshinit-system/default requires interception (interception: AllowOptOut)"
	msgStrictExcluded9090 = "port 9090 is required by RedirectPolicy team-strict/strict and cannot be listed in traffic.meshinit.io/exclude-inbound-ports"
	msgStrictNotIncluded  = `port 9090 is required by RedirectPolicy team-strict/strict and must be listed in traffic.meshinit.io/include-inbound-ports (or set it to "*")`
	msgStrictOptOut       = "SUBJECT label meshinit.io/inject=false opts out of meshinit, but RedirectPolicy team-strict/strict requires every pod in namespace team-strict to be intercepted (interception: Required)"
)

func badEntry(annotation, entry, direction, ports string) string {
	return annotation + " entry " + entry + " is not a port 1-65535 or a range first-last of them, so RedirectPolicy meshinit-system/default cannot check that " + direction + " " + ports + " intercepted"
}

// admissionCases: every rule, as a pod and as each workload's pod template.
var admissionCases = []struct {
	name      string
	namespace string
	pod       *corev1.Pod
	want      verdict // for the pod; SUBJECT in the message is "pod" or "pod template"
	// podOnly: the rule holds for pods only, workloads are admitted (the
	// webhook injects pods, never templates).
	podOnly bool
}{
	{name: "compliant pod", namespace: "team-a", pod: pod("ok", injected)},
	{name: "compliant annotations", namespace: "team-a", pod: pod("ok", injected, annotations(
		includeInbound, "80, 8443,9443", excludeInbound, "22,8000-8442,9444", excludeOutbound, "53,5000-5431,5433"))},
	{name: "include-inbound-ports star", namespace: "team-a", pod: pod("ok", injected, annotations(includeInbound, " * "))},
	{name: "exclude-inbound-ports lists a required port", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeInbound, "80,8443")),
		want: verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden}},
	{name: "exclude-inbound-ports range covers required ports", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeInbound, "8000-9999")),
		want: verdict{clusterBinding, msgExcludedBoth, metav1.StatusReasonForbidden}},
	{name: "exclude-inbound-ports star", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeInbound, "*")),
		want: verdict{clusterBinding, msgExcludedBoth, metav1.StatusReasonForbidden}},
	{name: "include-inbound-ports leaves out required ports", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeInbound, "80,443")),
		want: verdict{clusterBinding, msgNotIncluded, metav1.StatusReasonForbidden}},
	{name: "include-inbound-ports leaves out one", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeInbound, "8443")),
		want: verdict{clusterBinding, msgNotIncluded9443, metav1.StatusReasonForbidden}},
	{name: "include-inbound-ports empty", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeInbound, "")),
		want: verdict{clusterBinding, msgNotIncluded, metav1.StatusReasonForbidden}},
	{name: "exclude-outbound-ports lists a required port", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeOutbound, "5432")),
		want: verdict{clusterBinding, msgExcluded5432, metav1.StatusReasonForbidden}},
	{name: "exclude-outbound-ports range covers a required port", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeOutbound, "80, 5000-6000")),
		want: verdict{clusterBinding, msgExcluded5432, metav1.StatusReasonForbidden}},
	{name: "exclude-inbound-ports unreadable", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeInbound, "80,8000-")),
		want: verdict{clusterBinding, badEntry(excludeInbound, `"8000-"`, "inbound", "ports 8443, 9443 are"), metav1.StatusReasonInvalid}},
	{name: "include-inbound-ports star in a list", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeInbound, "8443,9443,*")),
		want: verdict{clusterBinding, badEntry(includeInbound, `"*"`, "inbound", "ports 8443, 9443 are"), metav1.StatusReasonInvalid}},
	{name: "exclude-outbound-ports unreadable", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeOutbound, "http")),
		want: verdict{clusterBinding, badEntry(excludeOutbound, `"http"`, "outbound", "port 5432 is"), metav1.StatusReasonInvalid}},
	{name: "arrived without the init container", namespace: "team-a", pod: pod("p"), podOnly: true,
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},
	{name: "another init container is not meshinit's", namespace: "team-a", podOnly: true,
		pod:  pod("p", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup"}} }),
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},
	{name: "opted out where the default allows it", namespace: "team-a",
		pod: pod("p", labels(podLabel, "false"), annotations(excludeInbound, "8443", excludeOutbound, "5432"))},
	{name: "opted out where a namespace policy requires interception", namespace: "team-strict",
		pod:  pod("p", labels(podLabel, "false")),
		want: verdict{namespaceBinding, msgStrictOptOut, metav1.StatusReasonForbidden}},
	{name: "pod label opts in outside opted-in namespaces", namespace: "plain",
		pod:  pod("p", injected, labels(podLabel, "true"), annotations(excludeInbound, "8443")),
		want: verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden}},
	{name: "pod label opts in, webhook missed it", namespace: "plain", pod: pod("p", labels(podLabel, "true")), podOnly: true,
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},
	{name: "namespace not opted in: never touched", namespace: "plain",
		pod: pod("p", annotations(includeInbound, "", excludeInbound, "*", excludeOutbound, "garbage"))},
	{name: "namespace opted out: never touched", namespace: "opted-out",
		pod: pod("p", labels(podLabel, "true"), annotations(excludeInbound, "8443"))},
	{name: "host network: never intercepted", namespace: "team-a",
		pod: pod("p", hostNetwork, annotations(excludeInbound, "8443"))},
	{name: "namespace policy adds a port", namespace: "team-strict",
		pod:  pod("p", injected, annotations(excludeInbound, "9090")),
		want: verdict{namespaceBinding, msgStrictExcluded9090, metav1.StatusReasonForbidden}},
	{name: "namespace policy adds to the include list", namespace: "team-strict",
		pod:  pod("p", injected, annotations(includeInbound, "8443,9443")),
		want: verdict{namespaceBinding, msgStrictNotIncluded, metav1.StatusReasonForbidden}},
	{name: "namespace policy keeps the default's ports", namespace: "team-strict",
		pod:  pod("p", injected, annotations(excludeInbound, "8443")),
		want: verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden}},
	{name: "namespace policy cannot relax ports", namespace: "team-lax",
		pod:  pod("p", injected, annotations(excludeOutbound, "5432")),
		want: verdict{clusterBinding, msgExcluded5432, metav1.StatusReasonForbidden}},
	{name: "namespace policy cannot relax injection", namespace: "team-lax", pod: pod("p"), podOnly: true,
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},
}

// TestAdmission creates (dry run) every case as a pod and as the pod
// template of each workload kind against a real API server, and checks the
// verdict: admitted, or denied by the right binding with the exact message.
func TestAdmission(t *testing.T) {
	c := apiServer(t)
	for _, tc := range admissionCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			want.message = strings.ReplaceAll(want.message, "SUBJECT", "pod")
			if err := c.checkVerdict(tc.namespace, tc.pod, want); err != nil {
				t.Error(err)
			}
			for _, w := range workloads {
				want := tc.want
				want.message = strings.ReplaceAll(want.message, "SUBJECT", "pod template")
				if tc.podOnly {
					want = verdict{}
				}
				if err := c.checkVerdict(tc.namespace, w.of(tc.pod), want); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestNothingStored creates a compliant and a violating pod for real: the
// first is stored, the second is not.
func TestNothingStored(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	ok := pod("stored", injected)
	ok.Namespace = "team-a"
	if err := c.client.Create(ctx, ok); err != nil {
		t.Fatalf("creating a compliant pod: %v", err)
	}
	t.Cleanup(func() { _ = c.client.Delete(ctx, ok) })
	bad := pod("refused", injected, annotations(excludeInbound, "8443"))
	bad.Namespace = "team-a"
	if got, err := verdictOf(c.client.Create(ctx, bad)); err != nil || got.message != msgExcluded8443 {
		t.Fatalf("creating a violating pod: verdict %+v, error %v", got, err)
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(bad), &corev1.Pod{}); err == nil {
		t.Fatal("the refused pod was stored")
	}
}
