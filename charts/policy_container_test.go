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
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/redirect"
)

// msgNotMeshinit is the default RedirectPolicy's message for a pod whose
// init container meshinit-redirect is not meshinit's.
func msgNotMeshinit(problem string) string {
	return "init container meshinit-redirect is not meshinit's: " + problem +
		", but RedirectPolicy meshinit-system/default requires " + defaultRequires + " to reach the proxy"
}

// msgOwnMount is the problem of a meshinit-redirect whose mounts are not its
// one empty, read-only directory at the service-account token path.
const msgOwnMount = "it mounts something other than, or besides, the empty directory meshinit-no-api-token read-only at /var/run/secrets/kubernetes.io/serviceaccount"

// msgEnv is the problem of a meshinit-redirect whose env is not the pod's
// namespace, name and UID from the downward API (redirect.PodEnv), exactly.
const msgEnv = "its env is not exactly MESHINIT_POD_NAMESPACE, MESHINIT_POD_NAME, MESHINIT_POD_UID from fieldRef metadata.namespace, metadata.name, metadata.uid"

// redirectImage is the chart's default image of meshinit's init container.
const redirectImage = "ghcr.io/meshinit/redirector:0.1.0"

// trustName names the policy that checks the image of meshinit's init
// container (trust-redirector.yaml), its bindings' prefix and its
// RedirectorTrust; trustNamespaceBinding is its binding for namespaces labelled
// meshinit.io/injection=enabled.
const (
	trustName             = "meshinit-redirector-trust"
	trustNamespaceBinding = trustName + "-namespace"
)

// msgUntrusted is the trust policy's message for a meshinit-redirect with
// image found (as quoted, cut after 64 characters) while only the chart's
// image is trusted.
func msgUntrusted(found string) string {
	return `init container meshinit-redirect is not meshinit's: its image "` + found + `" is not "` + redirectImage + `"`
}

// meshinitArgs is how many arguments meshinit's init container has: apply
// and every setting.
var meshinitArgs = 1 + len(redirect.Defaults().Args())

// containerCases: pods that bring their own meshinit-redirect init
// container, or change the one the webhook wrote. The policy recognises
// meshinit's by what it runs, not by its name, and reads the lists in its
// arguments as it reads the annotations.
var containerCases = []struct {
	name      string
	namespace string // team-a when empty
	pod       *corev1.Pod
	want      verdict
}{
	{name: "as the webhook writes it", pod: pod("ok", injected)},
	{name: "as the webhook writes it, from annotations", pod: pod("ok",
		annotations(excludeInbound, "22", excludeOutbound, "53", includeInbound, "80,8443,9443", excludeCIDRs, "169.254.169.254", includeCIDRs, "0.0.0.0/0,::/0"),
		injected)},
	// Its name and image are not enough (the RedirectPolicy's policy
	// refuses); another image is refused by the trust policy whatever else
	// the container holds.
	{name: "only the name and image", pod: pod("p", withInit(corev1.Container{Name: initContainerName, Image: redirectImage})),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "another image", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Image = "ghcr.io/meshinit/redirector:0.0.9" })),
		want: verdict{trustNamespaceBinding, msgUntrusted("ghcr.io/meshinit/redirector:0.0.9"), metav1.StatusReasonForbidden}},
	{name: "the image by digest", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Image = redirectImage + "@sha256:" + strings.Repeat("0", 64) })),
		want: verdict{trustNamespaceBinding, msgUntrusted(redirectImage + "@sha256:" + strings.Repeat("0", 64-len(redirectImage)-8) + "..."), metav1.StatusReasonForbidden}},
	{name: "a command", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Command = []string{"/bin/true"} })),
		want: verdict{clusterBinding, msgNotMeshinit("it sets command"), metav1.StatusReasonForbidden}},
	{name: "an extra argument", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Args = append(c.Args, "--exclude-outbound-cidrs=0.0.0.0/0") })),
		want: verdict{clusterBinding, msgNotMeshinit(fmt.Sprintf("it has %d arguments, not %d", meshinitArgs+1, meshinitArgs)), metav1.StatusReasonForbidden}},
	{name: "an argument missing", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Args = c.Args[:len(c.Args)-1] })),
		want: verdict{clusterBinding, msgNotMeshinit(fmt.Sprintf("it has %d arguments, not %d", meshinitArgs-1, meshinitArgs)), metav1.StatusReasonForbidden}},
	{name: "no arguments", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Args = nil })),
		want: verdict{clusterBinding, msgNotMeshinit(fmt.Sprintf("it has 0 arguments, not %d", meshinitArgs)), metav1.StatusReasonForbidden}},
	{name: "arguments reordered", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Args[1], c.Args[2] = c.Args[2], c.Args[1] })),
		want: verdict{clusterBinding, msgNotMeshinit(`argument 1 "--inbound-proxy-port=15006" is not "--outbound-proxy-port=..."`), metav1.StatusReasonForbidden}},
	{name: "print instead of apply", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Args[0] = "print" })),
		want: verdict{clusterBinding, msgNotMeshinit(`argument 0 "print" is not "apply"`), metav1.StatusReasonForbidden}},
	// The proxy's ports and identity are pod settings (annotations): in the
	// arguments they are checked as the annotations are, against the
	// RedirectPolicy's allowProxy*Override (the tests' default allows the
	// identity, not the ports).
	{name: "another proxy UID, allowed", pod: pod("p", injected, withArg("proxy-uid", "1000"))},
	{name: "another proxy UID makes the app a proxy impostor", pod: pod("p", injected, withArg("proxy-uid", "1000"), runAsUser("app", 1000)),
		want: verdict{clusterBinding, strings.NewReplacer("SUBJECT", "pod", "1337", "1000").Replace(msgDefaultMust("app", fixUID)), metav1.StatusReasonForbidden}},
	{name: "another outbound proxy port", pod: pod("ok", injected, withArg("outbound-proxy-port", "9"))},
	{name: "another outbound proxy port where not allowed", namespace: "team-strict", pod: pod("p", injected, withArg("outbound-proxy-port", "9")),
		want: verdict{namespaceBinding, "pod sets the outbound proxy port 9 (traffic.meshinit.io/outbound-proxy-port; the chart's: 15001), but RedirectPolicy team-strict/strict " +
			"requires its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)", metav1.StatusReasonForbidden}},
	{name: "another DNS proxy port where interception is Required", namespace: "team-strict",
		pod: pod("p", injected, withArg("capture-dns", "all"), withArg("dns-proxy-port", "53")),
		want: verdict{namespaceBinding, "pod sets the DNS proxy port 53 (traffic.meshinit.io/dns-proxy-port; the chart's: 15053), but RedirectPolicy team-strict/strict " +
			"requires its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)", metav1.StatusReasonForbidden}},
	{name: "a DNS proxy port that cannot be read where interception is Required", namespace: "team-strict",
		pod: pod("p", injected, withArg("dns-proxy-port", "dns")),
		want: verdict{namespaceBinding, "pod sets the DNS proxy port to a value that cannot be read (traffic.meshinit.io/dns-proxy-port; the chart's: 15053), but RedirectPolicy team-strict/strict " +
			"requires its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)", metav1.StatusReasonForbidden}},
	{name: "another DNS proxy port where port 53 is not required", pod: pod("p", injected, withArg("capture-dns", "all"), withArg("dns-proxy-port", "5353"))},
	{name: "ignored inbound ports widened", pod: pod("p", injected, withArg("ignored-inbound-ports", "1-65535")),
		want: verdict{clusterBinding, msgNotMeshinit(`argument 7 "--ignored-inbound-ports=1-65535" is not "--ignored-inbound-ports=15020,15021,15090"`), metav1.StatusReasonForbidden}},
	{name: "a pod setting's key swapped", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Args[6] = "--exclude-outbound-ports=" })),
		want: verdict{clusterBinding, msgNotMeshinit(`argument 6 "--exclude-outbound-ports=" is not "--exclude-inbound-ports=..."`), metav1.StatusReasonForbidden}},
	// Its env is the pod's namespace, name and UID from the downward API
	// (redirect.PodEnv), which only label the redirector's logs; no other
	// env, and no other value of those, is meshinit's: a pod author cannot
	// use env to change what the redirector programs or runs (iptables
	// reads XTABLES_LIBDIR, the dynamic loader LD_PRELOAD), nor to make its
	// logs name another pod.
	{name: "env", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "PATH", Value: "/tmp"}} })),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "no env", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Env = nil })),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "an env variable added", pod: pod("p", injected, forged(func(c *corev1.Container) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "XTABLES_LIBDIR", Value: "/tmp"})
	})), want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "an env variable added first", pod: pod("p", injected, forged(func(c *corev1.Container) {
		c.Env = append([]corev1.EnvVar{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}}, c.Env...)
	})), want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "an env variable missing", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Env = c.Env[:len(c.Env)-1] })),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "the pod's name as a literal", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Env[1].ValueFrom, c.Env[1].Value = nil, "someone-else" })),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "the pod's name from another field", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Env[1].ValueFrom.FieldRef.FieldPath = "spec.nodeName" })),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "the pod's UID from a secret", pod: pod("p", injected, forged(func(c *corev1.Container) {
		c.Env[2].ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "uid"}}
	})), want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "the env variables swapped", pod: pod("p", injected, forged(func(c *corev1.Container) { c.Env[0], c.Env[1] = c.Env[1], c.Env[0] })),
		want: verdict{clusterBinding, msgNotMeshinit(msgEnv), metav1.StatusReasonForbidden}},
	{name: "envFrom", pod: pod("p", injected, forged(func(c *corev1.Container) {
		c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}}}}
	})), want: verdict{clusterBinding, msgNotMeshinit("it sets envFrom"), metav1.StatusReasonForbidden}},
	{name: "a volume mount", pod: pod("p", injected, func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}, forged(func(c *corev1.Container) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "bin", MountPath: "/usr/sbin"})
	})),
		want: verdict{clusterBinding, msgNotMeshinit(msgOwnMount), metav1.StatusReasonForbidden}},
	{name: "the API token instead of its own mount", pod: pod("p", injected, func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access-x", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}})
	}, forged(func(c *corev1.Container) { c.VolumeMounts[0].Name = "kube-api-access-x" })),
		want: verdict{clusterBinding, msgNotMeshinit(msgOwnMount), metav1.StatusReasonForbidden}},
	{name: "its mount's volume a token", pod: pod("p", injected, func(p *corev1.Pod) {
		for i := range p.Spec.Volumes {
			if p.Spec.Volumes[i].Name == "meshinit-no-api-token" {
				p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}
			}
		}
	}), want: verdict{clusterBinding, msgNotMeshinit(msgOwnMount), metav1.StatusReasonForbidden}},
	{name: "its mount writable", pod: pod("p", injected, forged(func(c *corev1.Container) { c.VolumeMounts[0].ReadOnly = false })),
		want: verdict{clusterBinding, msgNotMeshinit(msgOwnMount), metav1.StatusReasonForbidden}},
	{name: "its mount a sub path", pod: pod("p", injected, forged(func(c *corev1.Container) { c.VolumeMounts[0].SubPath = "x" })),
		want: verdict{clusterBinding, msgNotMeshinit(msgOwnMount), metav1.StatusReasonForbidden}},
	{name: "a working directory", pod: pod("p", injected, forged(func(c *corev1.Container) { c.WorkingDir = "/tmp" })),
		want: verdict{clusterBinding, msgNotMeshinit("it sets workingDir"), metav1.StatusReasonForbidden}},
	{name: "a native sidecar", pod: pod("p", injected, forged(func(c *corev1.Container) { c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways) })),
		want: verdict{clusterBinding, msgNotMeshinit("it sets restartPolicy"), metav1.StatusReasonForbidden}},
	{name: "not first", pod: pod("p", injected, func(p *corev1.Pod) {
		p.Spec.InitContainers = append([]corev1.Container{setup}, p.Spec.InitContainers...)
	}), want: verdict{clusterBinding, msgNotMeshinit("it is not the first init container (inject.placement: first)"), metav1.StatusReasonForbidden}},

	// The lists in the arguments, checked as the annotations are.
	{name: "argument excludes a required inbound port", pod: pod("p", injected, withArg("exclude-inbound-ports", "22,8443")),
		want: verdict{clusterBinding, "port 8443 is required by RedirectPolicy meshinit-system/default and cannot be listed in meshinit-redirect argument --exclude-inbound-ports", metav1.StatusReasonForbidden}},
	{name: "argument leaves out required inbound ports", pod: pod("p", injected, withArg("include-inbound-ports", "80")),
		want: verdict{clusterBinding, `ports 8443, 9443 are required by RedirectPolicy meshinit-system/default and must be listed in meshinit-redirect argument --include-inbound-ports (or set it to "*")`, metav1.StatusReasonForbidden}},
	{name: "argument excludes the required outbound port", pod: pod("p", injected, withArg("exclude-outbound-ports", "5000-6000")),
		want: verdict{clusterBinding, "port 5432 is required by RedirectPolicy meshinit-system/default and cannot be listed in meshinit-redirect argument --exclude-outbound-ports", metav1.StatusReasonForbidden}},
	{name: "argument unreadable", pod: pod("p", injected, withArg("exclude-outbound-ports", "x")),
		want: verdict{clusterBinding, badEntry("meshinit-redirect argument --exclude-outbound-ports", `"x"`, "outbound", "port 5432 is"), metav1.StatusReasonInvalid}},
	{name: "argument too long", pod: pod("p", injected, withArg("exclude-inbound-ports", longList(maxListEntries+1))),
		want: verdict{clusterBinding, tooLong("meshinit-redirect argument --exclude-inbound-ports", longList(maxListEntries+1), "meshinit-system/default", "inbound", "ports 8443, 9443 are"), metav1.StatusReasonInvalid}},
	{name: "argument excludes every destination", pod: pod("p", injected, withArg("exclude-outbound-cidrs", "0.0.0.0/0,::/0")),
		want: verdict{clusterBinding, cidrsTaken("meshinit-redirect argument --exclude-outbound-cidrs", "0.0.0.0/0,::/0", "0.0.0.0/0, ::/0"), metav1.StatusReasonForbidden}},
	{name: "argument excludes an allowed destination", pod: pod("ok", injected, withArg("exclude-outbound-cidrs", "10.1.0.0/16"))},
	{name: "argument excludes a UID not allowed", pod: pod("p", injected, withArg("exclude-outbound-uids", "0,2000")),
		want: verdict{clusterBinding, `meshinit-redirect argument --exclude-outbound-uids "0,2000" lets the processes of UID 0 send their traffic around the proxy` +
			defaultAllows + "2000 (allowedOutboundUIDExclusions)", metav1.StatusReasonForbidden}},
	{name: "argument excludes an allowed interface", pod: pod("ok", injected, withArg("exclude-inbound-interfaces", "net1"))},
	{name: "argument includes outbound ports without the required one", pod: pod("p", injected, withArg("include-outbound-ports", "443")),
		want: verdict{clusterBinding, `port 5432 is required by RedirectPolicy meshinit-system/default and must be listed in meshinit-redirect argument --include-outbound-ports (or set it to "*")`,
			metav1.StatusReasonForbidden}},
	{name: "argument includes no destination", pod: pod("p", injected, withArg("include-outbound-cidrs", "")),
		want: verdict{clusterBinding, cidrsNarrowed("meshinit-redirect argument --include-outbound-cidrs", "", "IPv4 and IPv6"), metav1.StatusReasonForbidden}},
}

// TestMeshinitContainer creates (dry run) each of containerCases as a pod in
// an opted-in namespace against a real API server, with no webhook: the
// policy alone refuses every container that is not meshinit's, and every
// argument that takes a required port or destination around the proxy.
func TestMeshinitContainer(t *testing.T) {
	c := apiServer(t)
	for _, tc := range containerCases {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.checkVerdict(cmp.Or(tc.namespace, "team-a"), tc.pod, tc.want); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPodUpdate: the API server lets a pod's init container images change
// (the kubelet then restarts the init containers), so the policy checks pod
// updates that change them: meshinit's image cannot be swapped, while
// updates that leave the init containers alone are not checked at all.
func TestPodUpdate(t *testing.T) { testPodUpdate(t, apiServer(t)) }

// TestPodUpdatePolicyInjector is TestPodUpdate in policy mode: the mutating
// policy injects pods when they are created, never when they are updated,
// and the same updates are refused.
func TestPodUpdatePolicyInjector(t *testing.T) {
	if c := injectorAPIServer(t); c != nil {
		testPodUpdate(t, c)
	}
}

func testPodUpdate(t *testing.T, c *cluster) {
	c.createFor(t, "team-a", pod("updated", injected, withInit(setup)))
	for _, tc := range []struct {
		name   string
		change func(p *corev1.Pod)
		want   verdict
	}{
		{"meshinit's image swapped", func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "evil/redirector:0.1.0" },
			verdict{trustNamespaceBinding, msgUntrusted("evil/redirector:0.1.0"), metav1.StatusReasonForbidden}},
		{"another init container's image", func(p *corev1.Pod) { p.Spec.InitContainers[1].Image = "setup:v2" }, verdict{}},
		{"labels, even a violating annotation", func(p *corev1.Pod) {
			p.Labels["relabelled"] = "yes"
			p.Annotations[excludeInbound] = "8443"
		}, verdict{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.updatePod("team-a", "updated", tc.change)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("\n got  %+v\n want %+v", got, tc.want)
			}
		})
	}
}

// TestWebhookDown registers the chart's MutatingWebhookConfiguration with
// failurePolicy Ignore while no webhook runs (its Service does not exist):
// the API server tries the webhook, fails open (its audit log says so), and
// the policy still refuses a forged meshinit-redirect and admits meshinit's.
func TestWebhookDown(t *testing.T) {
	c := apiServer(t)
	ctx := context.Background()
	objs := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: map[string]any{"webhook": map[string]any{"failurePolicy": "Ignore"}}}, false)
	mwcs := charts.Find(objs, "MutatingWebhookConfiguration", "")
	if len(mwcs) != 1 {
		t.Fatalf("the chart renders %d MutatingWebhookConfigurations, want 1", len(mwcs))
	}
	mwc := mwcs[0]
	c.apply(t, mwc)
	t.Cleanup(func() { _ = c.client.Delete(ctx, mwc) })

	// Created for real, so that the audit log records the webhook failing open.
	forgedPod := pod("forged", injected, forged(func(c *corev1.Container) { c.Image = "evil/redirector" }))
	forgedPod.Namespace = "team-a"
	want := msgUntrusted("evil/redirector")
	n := 0
	testkit.Eventually(t, 30*time.Second, "the webhook failing open and the policy refusing", func() error {
		n++
		forgedPod.Name = fmt.Sprintf("forged-%d", n)
		got, err := verdictOf(c.client.Create(ctx, forgedPod.DeepCopy()))
		if err != nil || got.message != want {
			return fmt.Errorf("verdict %+v, error %v", got, err)
		}
		annotation, err := c.auditAnnotation("team-a", forgedPod.Name, "failed-open.mutation.webhook.admission.k8s.io/round_0_index_0")
		if err != nil {
			return err
		}
		if !strings.Contains(annotation, "meshinit") {
			return fmt.Errorf("the webhook that failed open: %s", annotation)
		}
		return nil
	})
	ok := pod("meshinits", injected)
	ok.Namespace = "team-a"
	if err := c.client.Create(ctx, ok); err != nil {
		t.Fatalf("a pod with meshinit's container: %v", err)
	}
	c.deletePod(t, "team-a", ok.Name)
}
