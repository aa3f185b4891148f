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
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
	msgUninjected         = "pod arrived without the meshinit-redirect init container (is the meshinit webhook running?), but RedirectPolicy meshinit-system/default requires " + defaultRequires + " to reach the proxy"
	msgStrictExcluded9090 = "every inbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/exclude-inbound-ports cannot list 9090"
	msgStrictNotIncluded  = `every inbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/include-inbound-ports must be "*"`
)

// defaultRequires is what the default RedirectPolicy requires, as its
// messages say.
const defaultRequires = "inbound ports 8443, 9443 and outbound port 5432"

// msgOptedOut is the default RedirectPolicy's message for a pod or
// template labelled meshinit.io/inject=false: with ports required, opting
// out is refused whatever interception says.
const msgOptedOut = "SUBJECT label meshinit.io/inject=false opts out of meshinit, but RedirectPolicy meshinit-system/default requires " + defaultRequires + " to reach the proxy"

// msgHostNetwork is the default RedirectPolicy's message for hostNetwork.
const msgHostNetwork = "SUBJECT uses the node's network (hostNetwork: true), where meshinit cannot redirect its traffic, but RedirectPolicy meshinit-system/default requires " + defaultRequires + " to reach the proxy"

// The fixes the policy asks of a container that could go around the proxy.
const (
	fixUID   = "set securityContext.runAsUser (its own or the pod's) to a UID other than the proxy's 1337"
	fixGID   = "set securityContext.runAsGroup (its own or the pod's) to a GID other than the proxy's 1337"
	fixAPE   = "set securityContext.allowPrivilegeEscalation: false"
	fixDrop  = "drop every capability (securityContext.capabilities.drop: [ALL])"
	fixPriv  = "not be privileged"
	addables = "AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETPCAP, SYS_CHROOT"
)

// fixAdd is the fix for a capability added that the policy does not allow.
func fixAdd(name string) string { return "not add capability " + name + " (only " + addables + ")" }

// fixKillTargeting is the fix for an ephemeral container that targets
// another and adds KILL: it shares that container's processes (the
// proxy's, say), whatever the pod's shareProcessNamespace says.
const fixKillTargeting = "not add capability KILL (it targets a container, so it shares that container processes: it could stop the proxy and take its port)"

// msgMust is the message of RedirectPolicy policy (requiring requires) for
// container name, which must make the fixes; others more containers must
// change too.
func msgMust(policy, requires, name string, others int, fixes ...string) string {
	more := ""
	switch {
	case others == 1:
		more = " (and 1 other container must change too)"
	case others > 1:
		more = fmt.Sprintf(" (and %d other containers must change too)", others)
	}
	return "SUBJECT container " + name + " must " + strings.Join(fixes, ", ") + more + ", because RedirectPolicy " + policy + " requires " + requires +
		" to reach the proxy: a process that can take the proxy's UID or GID, reach the redirect rules or send raw packets goes around it" +
		" (only the proxy containers the chart names in policy.proxyContainers may run as the proxy)"
}

// msgDefaultMust is msgMust for the default RedirectPolicy and one container.
func msgDefaultMust(name string, fixes ...string) string {
	return msgMust("meshinit-system/default", defaultRequires, name, 0, fixes...)
}

// Messages of the new opt-outs: the default RedirectPolicy allows excluding
// UID 2000, GID 3000 and interface net1 and setting the proxy identity, not
// the proxy ports; team-strict/strict allows none of it.
const (
	defaultAllows = ", but RedirectPolicy meshinit-system/default requires outbound port 5432 to reach the proxy and allows excluding only "
	strictAllows  = ", but RedirectPolicy team-strict/strict requires every outbound port (interception: Required) to reach the proxy and allows excluding no "
)

func msgUIDs(value, taken, allowed string) string {
	return excludeUIDs + " " + strconv.Quote(value) + " lets the processes of UID " + taken + " send their traffic around the proxy" + allowed
}

func msgInterfaces(value, taken, allowed string) string {
	return excludeInterfaces + " " + strconv.Quote(value) + " takes inbound traffic on interface " + taken + " around the proxy" + allowed
}

func badEntry(annotation, entry, direction, ports string) string {
	return annotation + " entry " + entry + " is not a port 1-65535 or a range first-last of them, so RedirectPolicy meshinit-system/default cannot check that " + direction + " " + ports + " intercepted"
}

// cidrsAllowed is the end of the default RedirectPolicy's CIDR messages.
const cidrsAllowed = ", but RedirectPolicy meshinit-system/default requires outbound port 5432 to reach it and allows excluding only 10.0.0.0/8, 169.254.169.254/32 (allowedOutboundCIDRExclusions)"

// cidrsTaken and cidrsNarrowed are the default RedirectPolicy's messages for
// an exclude list taking destinations around the proxy, and an include list
// leaving families out.
func cidrsTaken(field, value, taken string) string {
	return field + " " + strconv.Quote(value) + " takes " + taken + " around the proxy" + cidrsAllowed
}

func cidrsNarrowed(field, value, families string) string {
	return field + " " + strconv.Quote(value) + " leaves " + families + ` destinations out of the proxy (set it to "*")` + cidrsAllowed
}

// tooLong is a policy's message for a list value over the limits.
func tooLong(field, value, policy, direction, ports string) string {
	return field + " " + strconv.Quote(value[:64]+"...") + " is longer than 4096 bytes or 256 entries, so RedirectPolicy " + policy +
		" cannot check that " + direction + " " + ports + " intercepted"
}

// Containers the proxy-identity cases add.
var (
	envoy   = corev1.Container{Name: "envoy", Image: envoyImage + ":v1.30"}
	setup   = corev1.Container{Name: "setup", Image: "setup", SecurityContext: hardened()}
	sidecar = corev1.Container{Name: "sidecar", Image: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), SecurityContext: hardened()}
)

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
		pod:  pod("p", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{*setup.DeepCopy()} }),
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},
	// Ports are required: whatever interception says (the default's is
	// AllowOptOut), a pod cannot opt out of them (TestNothingRequired has
	// the opt-outs where nothing is).
	{name: "opted out where ports are required", namespace: "team-a",
		pod:  pod("p", labels(podLabel, "false"), annotations(excludeInbound, "8443", excludeOutbound, "5432")),
		want: verdict{clusterBinding, msgOptedOut, metav1.StatusReasonForbidden}},
	{name: "pod label opts in outside opted-in namespaces", namespace: "plain",
		pod:  pod("p", injected, labels(podLabel, "true"), annotations(excludeInbound, "8443")),
		want: verdict{clusterBinding, msgExcluded8443, metav1.StatusReasonForbidden}},
	{name: "pod label opts in, webhook missed it", namespace: "plain", pod: pod("p", labels(podLabel, "true")), podOnly: true,
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},
	{name: "namespace not opted in: never touched", namespace: "plain",
		pod: pod("p", annotations(includeInbound, "", excludeInbound, "*", excludeOutbound, "garbage"))},
	{name: "namespace opted out: never touched", namespace: "opted-out",
		pod: pod("p", labels(podLabel, "true"), annotations(excludeInbound, "8443"))},
	{name: "host network where ports are required", namespace: "team-a",
		pod:  pod("p", hostNetwork, annotations(excludeInbound, "8443")),
		want: verdict{clusterBinding, msgHostNetwork, metav1.StatusReasonForbidden}},
	{name: "namespace policy adds a port", namespace: "team-strict",
		pod:  pod("p", injected, annotations(excludeInbound, "9090")),
		want: verdict{namespaceBinding, msgStrictExcluded9090, metav1.StatusReasonForbidden}},
	{name: "namespace policy adds to the include list", namespace: "team-strict",
		pod:  pod("p", injected, annotations(includeInbound, "8443,9443")),
		want: verdict{namespaceBinding, msgStrictNotIncluded, metav1.StatusReasonForbidden}},
	// Where both refuse, the API server names either (its policies are
	// evaluated in no fixed order): team-lax shows that a namespace
	// policy keeps the default's ports.
	{name: "namespace policy cannot relax ports", namespace: "team-lax",
		pod:  pod("p", injected, annotations(excludeOutbound, "5432")),
		want: verdict{clusterBinding, msgExcluded5432, metav1.StatusReasonForbidden}},
	{name: "namespace policy cannot relax injection", namespace: "team-lax", pod: pod("p"), podOnly: true,
		want: verdict{clusterBinding, msgUninjected, metav1.StatusReasonForbidden}},

	// Outbound CIDRs, while the default RedirectPolicy requires outbound port 5432.
	{name: "exclude-outbound-cidrs inside the allowed ones", namespace: "team-a",
		pod: pod("ok", injected, annotations(excludeCIDRs, "10.1.0.0/16, 169.254.169.254"))},
	{name: "exclude-outbound-cidrs everything", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeCIDRs, "0.0.0.0/0,::/0")),
		want: verdict{clusterBinding, cidrsTaken(excludeCIDRs, "0.0.0.0/0,::/0", "0.0.0.0/0, ::/0"), metav1.StatusReasonForbidden}},
	{name: "exclude-outbound-cidrs partly outside", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeCIDRs, "10.0.0.0/8,192.168.1.1")),
		want: verdict{clusterBinding, cidrsTaken(excludeCIDRs, "10.0.0.0/8,192.168.1.1", "192.168.1.1/32"), metav1.StatusReasonForbidden}},
	{name: "exclude-outbound-cidrs wider than the allowed one", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeCIDRs, "10.0.0.0/7")),
		want: verdict{clusterBinding, cidrsTaken(excludeCIDRs, "10.0.0.0/7", "10.0.0.0/7"), metav1.StatusReasonForbidden}},
	{name: "exclude-outbound-cidrs star", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeCIDRs, "*")),
		want: verdict{clusterBinding, cidrsTaken(excludeCIDRs, "*", "*"), metav1.StatusReasonForbidden}},
	{name: "exclude-outbound-cidrs unreadable", namespace: "team-a",
		pod: pod("p", injected, annotations(excludeCIDRs, "10.0.0.0/8,example.com")),
		want: verdict{clusterBinding, excludeCIDRs + ` entry "example.com" is not an IP address or a CIDR (IPv4-mapped IPv6 addresses are refused: write them as IPv4), ` +
			"so RedirectPolicy meshinit-system/default cannot check that outbound port 5432 is intercepted", metav1.StatusReasonInvalid}},
	{name: "include-outbound-cidrs star", namespace: "team-a", pod: pod("ok", injected, annotations(includeCIDRs, "*"))},
	{name: "include-outbound-cidrs everything listed", namespace: "team-a", pod: pod("ok", injected, annotations(includeCIDRs, "0.0.0.0/0, ::/0"))},
	{name: "include-outbound-cidrs empty", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeCIDRs, "")),
		want: verdict{clusterBinding, cidrsNarrowed(includeCIDRs, "", "IPv4 and IPv6"), metav1.StatusReasonForbidden}},
	{name: "include-outbound-cidrs narrowed", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeCIDRs, "10.0.0.0/8")),
		want: verdict{clusterBinding, cidrsNarrowed(includeCIDRs, "10.0.0.0/8", "IPv4 and IPv6"), metav1.StatusReasonForbidden}},
	{name: "include-outbound-cidrs without IPv6", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeCIDRs, "0.0.0.0/0")),
		want: verdict{clusterBinding, cidrsNarrowed(includeCIDRs, "0.0.0.0/0", "IPv6"), metav1.StatusReasonForbidden}},
	{name: "annotation too long", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeInbound, paddedList(maxListBytes+1))),
		want: verdict{clusterBinding, tooLong(excludeInbound, paddedList(maxListBytes+1), "meshinit-system/default", "inbound", "ports 8443, 9443 are"), metav1.StatusReasonInvalid}},
	{name: "annotation with too many entries", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeCIDRs, cidrList(maxListEntries+1))),
		want: verdict{clusterBinding, tooLong(excludeCIDRs, cidrList(maxListEntries+1), "meshinit-system/default", "outbound", "port 5432 is"), metav1.StatusReasonInvalid}},

	// The proxy's identity, while the default RedirectPolicy requires outbound port 5432.
	{name: "app container runs as the proxy UID", namespace: "team-a",
		pod: pod("p", injected, runAsUser("app", 1337)), want: verdict{clusterBinding, msgDefaultMust("app", fixUID), metav1.StatusReasonForbidden}},
	{name: "app container runs as the proxy GID", namespace: "team-a",
		pod: pod("p", injected, runAsGroup("app", 1337)), want: verdict{clusterBinding, msgDefaultMust("app", fixGID), metav1.StatusReasonForbidden}},
	{name: "pod runs as the proxy UID", namespace: "team-a",
		pod:  pod("p", injected, withContainer(corev1.Container{Name: "second", Image: "app", SecurityContext: hardened()}), podSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsUser = ptr.To[int64](1337) })),
		want: verdict{clusterBinding, msgMust("meshinit-system/default", defaultRequires, "app", 1, fixUID), metav1.StatusReasonForbidden}},
	{name: "pod runs as the proxy GID", namespace: "team-a",
		pod:  pod("p", injected, podSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsGroup = ptr.To[int64](1337) })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixGID), metav1.StatusReasonForbidden}},
	{name: "pod runs as the proxy GID, the container as another", namespace: "team-a",
		pod: pod("ok", injected, runAsGroup("app", 1000), podSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsGroup = ptr.To[int64](1337) }))},
	{name: "init container runs as the proxy UID", namespace: "team-a",
		pod: pod("p", injected, withInit(setup), runAsUser("setup", 1337)), want: verdict{clusterBinding, msgDefaultMust("setup", fixUID), metav1.StatusReasonForbidden}},
	{name: "native sidecar runs as the proxy UID", namespace: "team-a",
		pod: pod("p", injected, withInit(sidecar), runAsUser("sidecar", 1337)), want: verdict{clusterBinding, msgDefaultMust("sidecar", fixUID), metav1.StatusReasonForbidden}},
	{name: "the proxy container runs as the proxy", namespace: "team-a",
		pod: pod("ok", injected, withContainer(envoy), runAsUser("envoy", 1337), runAsGroup("envoy", 1337))},
	{name: "the proxy container by digest", namespace: "team-a",
		pod: pod("ok", injected, withContainer(corev1.Container{Name: "envoy", Image: envoyImage + "@sha256:" + strings.Repeat("ab", 32)}), runAsUser("envoy", 1337))},
	{name: "the proxy container untagged", namespace: "team-a",
		pod: pod("ok", injected, withContainer(corev1.Container{Name: "envoy", Image: envoyImage}), runAsUser("envoy", 1337))},
	{name: "the proxy's name with another image", namespace: "team-a",
		pod:  pod("p", injected, withContainer(corev1.Container{Name: "envoy", Image: envoyImage + "-debug:v1"}), runAsUser("envoy", 1337)),
		want: verdict{clusterBinding, msgDefaultMust("envoy", fixUID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{name: "the proxy's image under another name", namespace: "team-a",
		pod:  pod("p", injected, withContainer(corev1.Container{Name: "shell", Image: envoy.Image}), runAsUser("shell", 1337)),
		want: verdict{clusterBinding, msgDefaultMust("shell", fixUID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	// The helm test's proxy is trusted in the test's own namespace only
	// (TestPolicyAdmitsHelmTestPod).
	{name: "the helm test's proxy outside the test's namespace", namespace: "team-a",
		pod: pod("p", injected, withInit(corev1.Container{Name: "proxy", Image: "ghcr.io/meshinit/test-proxy:0.1.0", RestartPolicy: sidecar.RestartPolicy,
			Args: []string{"-name", "proxy", "-listen", ":15001"}}), runAsUser("proxy", 1337)),
		want: verdict{clusterBinding, msgDefaultMust("proxy", fixUID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{name: "opted out while running as the proxy UID", namespace: "team-a",
		pod:  pod("p", labels(podLabel, "false"), runAsUser("app", 1337)),
		want: verdict{clusterBinding, msgOptedOut, metav1.StatusReasonForbidden}},

	// Containers that could rewrite the redirect rules.
	{name: "privileged app container", namespace: "team-a",
		pod: pod("p", injected, privileged("app")), want: verdict{clusterBinding, msgDefaultMust("app", fixPriv, fixAPE), metav1.StatusReasonForbidden}},
	{name: "app container adds NET_ADMIN", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "CHOWN", "NET_ADMIN")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("NET_ADMIN")), metav1.StatusReasonForbidden}},
	{name: "app container adds net_raw", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "net_raw")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("NET_RAW")), metav1.StatusReasonForbidden}},
	{name: "app container adds CAP_SYS_ADMIN", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "CAP_SYS_ADMIN")), want: verdict{clusterBinding, msgDefaultMust("app", fixAPE, fixAdd("SYS_ADMIN")), metav1.StatusReasonForbidden}},
	{name: "app container adds ALL", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "ALL")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("ALL")), metav1.StatusReasonForbidden}},
	{name: "init container adds NET_ADMIN", namespace: "team-a",
		pod: pod("p", injected, withInit(setup), addCapabilities("setup", "NET_ADMIN")), want: verdict{clusterBinding, msgDefaultMust("setup", fixAdd("NET_ADMIN")), metav1.StatusReasonForbidden}},
	{name: "harmless capability", namespace: "team-a", pod: pod("ok", injected, addCapabilities("app", "NET_BIND_SERVICE"))},
	{name: "opted out while privileged", namespace: "team-a", pod: pod("p", labels(podLabel, "false"), privileged("app")),
		want: verdict{clusterBinding, msgOptedOut, metav1.StatusReasonForbidden}},

	// Outbound include ports, while the default RedirectPolicy requires outbound port 5432.
	{name: "include-outbound-ports lists the required port", namespace: "team-a", pod: pod("ok", injected, annotations(includeOutbound, "443,5432"))},
	{name: "include-outbound-ports range covers the required port", namespace: "team-a", pod: pod("ok", injected, annotations(includeOutbound, "5000-6000"))},
	{name: "include-outbound-ports leaves out the required port", namespace: "team-a",
		pod: pod("p", injected, annotations(includeOutbound, "80,443")),
		want: verdict{clusterBinding, `port 5432 is required by RedirectPolicy meshinit-system/default and must be listed in traffic.meshinit.io/include-outbound-ports (or set it to "*")`,
			metav1.StatusReasonForbidden}},
	{name: "include-outbound-ports unreadable", namespace: "team-a",
		pod:  pod("p", injected, annotations(includeOutbound, "https")),
		want: verdict{clusterBinding, badEntry(includeOutbound, `"https"`, "outbound", "port 5432 is"), metav1.StatusReasonInvalid}},

	// UID, GID and interface exclusions.
	{name: "excluded UID and GID the default allows", namespace: "team-a",
		pod: pod("ok", injected, annotations(excludeUIDs, "2000", excludeGIDs, " 3000 ", excludeInterfaces, "net1"))},
	{name: "excluded UID the default does not allow", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeUIDs, "2000,0")),
		want: verdict{clusterBinding, msgUIDs("2000,0", "0", defaultAllows+"2000 (allowedOutboundUIDExclusions)"), metav1.StatusReasonForbidden}},
	{name: "excluded GID the default does not allow", namespace: "team-a",
		pod: pod("p", injected, annotations(excludeGIDs, "3001")),
		want: verdict{clusterBinding, excludeGIDs + ` "3001" lets the processes of GID 3001 send their traffic around the proxy` + defaultAllows + "3000 (allowedOutboundGIDExclusions)",
			metav1.StatusReasonForbidden}},
	{name: "excluded interface the default does not allow", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeInterfaces, "eth1")),
		want: verdict{clusterBinding, msgInterfaces("eth1", "eth1", ", but RedirectPolicy meshinit-system/default requires inbound ports 8443, 9443 to reach the proxy and allows excluding only net1 (allowedInboundInterfaceExclusions)"), metav1.StatusReasonForbidden}},
	{name: "excluded UIDs unreadable", namespace: "team-a",
		pod:  pod("p", injected, annotations(excludeUIDs, "fluentbit")),
		want: verdict{clusterBinding, excludeUIDs + ` entry "fluentbit" is not a numeric ID 0-4294967294, so RedirectPolicy meshinit-system/default cannot check it against allowedOutboundUIDExclusions`, metav1.StatusReasonInvalid}},
	{name: "excluded interfaces unreadable", namespace: "team-a",
		pod: pod("p", injected, annotations(excludeInterfaces, "net+")),
		want: verdict{clusterBinding, excludeInterfaces + ` entry "net+" is not an interface name (1-15 letters, digits, "_", "." or "-", not starting with "-" or "."), ` +
			"so RedirectPolicy meshinit-system/default cannot check it against allowedInboundInterfaceExclusions", metav1.StatusReasonInvalid}},
	{name: "a namespace policy requiring interception allows no UID", namespace: "team-strict",
		pod:  pod("p", injected, annotations(excludeUIDs, "2000")),
		want: verdict{namespaceBinding, msgUIDs("2000", "2000", strictAllows+"UID (allowedOutboundUIDExclusions)"), metav1.StatusReasonForbidden}},
	{name: "a namespace policy requiring interception allows no interface", namespace: "team-strict",
		pod:  pod("p", injected, annotations(excludeInterfaces, "net1")),
		want: verdict{namespaceBinding, msgInterfaces("net1", "net1", ", but RedirectPolicy team-strict/strict requires every inbound port (interception: Required) to reach the proxy and allows excluding no interface (allowedInboundInterfaceExclusions)"), metav1.StatusReasonForbidden}},
	{name: "opted out with exclusions", namespace: "team-a",
		pod:  pod("p", labels(podLabel, "false"), annotations(excludeUIDs, "0", excludeInterfaces, "eth0")),
		want: verdict{clusterBinding, msgOptedOut, metav1.StatusReasonForbidden}},

	// The proxy's identity and ports set per pod: the default allows the identity, not the ports.
	{name: "proxy UID and GID set per pod where allowed", namespace: "team-a",
		pod: pod("ok", annotations(proxyUIDAnnotation, "2102", proxyGIDAnnotation, "2103"), injected)},
	{name: "the chart's proxy UID set per pod", namespace: "team-a", pod: pod("ok", injected, annotations(proxyUIDAnnotation, "01337"))},
	{name: "a container runs as the pod's own proxy UID", namespace: "team-a",
		pod:  pod("p", annotations(proxyUIDAnnotation, "2102"), injected, runAsUser("app", 2102)),
		want: verdict{clusterBinding, msgDefaultMust("app", strings.Replace(fixUID, "1337", "2102", 1)), metav1.StatusReasonForbidden}},
	{name: "the chart's proxy UID is an app's once the pod names another", namespace: "team-a",
		pod: pod("ok", annotations(proxyUIDAnnotation, "2102", proxyGIDAnnotation, "2103"), injected, runAsUser("app", 1337))},
	{name: "proxy UID set per pod where interception is Required", namespace: "team-strict",
		pod: pod("p", injected, annotations(proxyUIDAnnotation, "2102")),
		want: verdict{namespaceBinding, "SUBJECT sets the proxy UID 2102 (traffic.meshinit.io/proxy-uid; the chart's: 1337), whose traffic is never redirected, " +
			"but RedirectPolicy team-strict/strict requires every outbound port (interception: Required) to reach the proxy and does not allow setting the proxy identity per pod (allowProxyIdentityOverride)",
			metav1.StatusReasonForbidden}},
	// The default allows setting the proxy ports (allowProxyPortOverride),
	// never onto a required inbound port (the inbound chain returns both).
	{name: "proxy ports set per pod", namespace: "team-a",
		pod: pod("ok", injected, annotations(outboundProxyPortAnnotation, "16001", inboundProxyPortAnnotation, "16006"))},
	{name: "proxy ports set per pod where not allowed", namespace: "team-strict",
		pod: pod("p", injected, annotations(outboundProxyPortAnnotation, "16001", inboundProxyPortAnnotation, "16006")),
		want: verdict{namespaceBinding, "SUBJECT sets the outbound proxy port 16001 (traffic.meshinit.io/outbound-proxy-port; the chart's: 15001) " +
			"and the inbound proxy port 16006 (traffic.meshinit.io/inbound-proxy-port; the chart's: 15006), but RedirectPolicy team-strict/strict " +
			"requires its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)", metav1.StatusReasonForbidden}},
	{name: "the chart's proxy port set per pod", namespace: "team-a", pod: pod("ok", injected, annotations(outboundProxyPortAnnotation, "15001"))},
	// The DNS proxy port: with DNS captured, a pod's own listener there would
	// take port 53 around the proxy. Refused where outbound port 53 or
	// interception is required, like the other proxy ports.
	{name: "DNS capture set per pod", namespace: "team-strict", pod: pod("ok", injected, annotations(captureDNSAnnotation, "all", dnsProxyPortAnnotation, "15053"))},
	{name: "DNS proxy port set per pod where interception is Required", namespace: "team-strict",
		pod: pod("p", injected, annotations(captureDNSAnnotation, "all", dnsProxyPortAnnotation, "5353")),
		want: verdict{namespaceBinding, "SUBJECT sets the DNS proxy port 5353 (traffic.meshinit.io/dns-proxy-port; the chart's: 15053), but RedirectPolicy team-strict/strict " +
			"requires its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)", metav1.StatusReasonForbidden}},
	// The default RedirectPolicy requires outbound 5432, not 53: a DNS proxy
	// port of the pod's own takes nothing it requires around the proxy.
	{name: "DNS proxy port set per pod where port 53 is not required", namespace: "team-a",
		pod: pod("ok", injected, annotations(captureDNSAnnotation, "all", dnsProxyPortAnnotation, "5353"))},

	// hostNetwork.
	{name: "host network opted in by label where ports are required", namespace: "plain", pod: pod("p", hostNetwork, labels(podLabel, "true")),
		want: verdict{clusterBinding, msgHostNetwork, metav1.StatusReasonForbidden}},
}

// TestAdmission creates (dry run) every case as a pod and as the pod
// template of each workload kind against a real API server, and checks the
// verdict: admitted, or denied by the right binding with the exact message.
func TestAdmission(t *testing.T) {
	c := apiServer(t)
	for _, tc := range admissionCases {
		t.Run(tc.name, func(t *testing.T) { c.checkCase(t, tc.namespace, tc.pod, tc.want, tc.want, tc.podOnly) })
	}
}

// checkCase creates (dry run) p in ns, and a workload of each kind with it
// as the pod template, and compares their verdicts with want for the pod,
// and templateWant for the templates (admitted when podOnly); SUBJECT in a
// message is "pod" or "pod template".
func (c *cluster) checkCase(t *testing.T, ns string, p *corev1.Pod, want, templateWant verdict, podOnly bool) {
	t.Helper()
	want.message = strings.ReplaceAll(want.message, "SUBJECT", "pod")
	if err := c.checkVerdict(ns, p, want); err != nil {
		t.Error(err)
	}
	templateWant.message = strings.ReplaceAll(templateWant.message, "SUBJECT", "pod template")
	if podOnly {
		templateWant = verdict{}
	}
	for _, w := range workloads {
		if err := c.checkVerdict(ns, w.of(p), templateWant); err != nil {
			t.Error(err)
		}
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
