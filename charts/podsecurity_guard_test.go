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

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/charts"
)

// The PodSecurity guard (podsecurity-validatingadmissionpolicy.yaml) in
// process, compiled as the API server compiles it, against upstream's
// fixtures and checks (podsecurity_upstream_test.go) and meshinit's
// container as the webhook injects it (policy_inject_test.go).

// guardName is the guard's policy and its pods binding (release "meshinit").
const guardName = "meshinit-pod-security"

// guardPolicy is the guard the chart renders with values.
func guardPolicy(t *testing.T, values map[string]any) *compiled {
	t.Helper()
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	objs := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: values}, false)
	charts.DecodeOne(t, objs, "ValidatingAdmissionPolicy", guardName, &vap)
	return compile(t, &vap)
}

// guarded is a namespace labelled for the guard at level.
func guarded(level api.Level) *corev1.Namespace {
	return namespace("guarded", podSecurityLabel, string(level))
}

// refusal is the guard's message for p created in ns, "" when it admits p.
func (c *compiled) refusal(t *testing.T, ns *corev1.Namespace, p *corev1.Pod) string {
	t.Helper()
	denials := c.denials(t, request{object: p, namespace: ns})
	if len(denials) > 1 {
		t.Fatalf("%d denials, want at most one: %q", len(denials), denials)
	}
	if len(denials) == 0 {
		return ""
	}
	return denials[0]
}

// withMeshinit is p with meshinit's init container as the webhook injects
// it with the chart's default values; where the webhook leaves p alone
// (hostNetwork) the same container is added first.
func withMeshinit(p *corev1.Pod) *corev1.Pod {
	if out, err := defaultInjector().inject(p); err == nil {
		return out
	}
	out := p.DeepCopy()
	out.Spec.InitContainers = append([]corev1.Container{*redirectContainer(pod("canonical", injected))}, out.Spec.InitContainers...)
	return out
}

// withoutMeshinitCapabilities is p with meshinit's init container adding no
// capability: what upstream's checks see of the exemption the guard makes.
func withoutMeshinitCapabilities(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	redirectContainer(out).SecurityContext.Capabilities.Add = nil
	return out
}

// checkAgainstUpstream fails t unless the guard refuses p exactly when
// upstream's reasons (want) are not empty, naming each reason.
func checkAgainstUpstream(t *testing.T, what, got string, want []string) {
	t.Helper()
	switch {
	case len(want) == 0 && got != "":
		t.Errorf("%s: upstream admits it, the guard refuses it: %s", what, got)
	case len(want) > 0 && got == "":
		t.Errorf("%s: upstream refuses it (%s), the guard admits it", what, strings.Join(want, ", "))
	default:
		for _, reason := range want {
			if !strings.Contains(got, reason+" (") {
				t.Errorf("%s: the guard's message does not name upstream's reason %q: %s", what, reason, got)
			}
		}
	}
}

// TestGuardUpstreamFixtures: at each level, the guard refuses every
// upstream fixture (of every version) that upstream's checks at v1.37
// refuse, naming each of upstream's reasons, and admits every other; with
// meshinit's init container injected, it decides the same, as the
// container passes every check but the capabilities one it is exempt from.
func TestGuardUpstreamFixtures(t *testing.T) {
	guard := guardPolicy(t, nil)
	for _, level := range levels {
		ns := guarded(level)
		refused := 0
		for _, f := range upstreamFixtures(t) {
			want := upstreamVerdict(t, level, f.pod)
			checkAgainstUpstream(t, fmt.Sprintf("%s at %s", f.name, level), guard.refusal(t, ns, f.pod), want)
			meshed := withMeshinit(f.pod)
			if exempted := upstreamVerdict(t, level, withoutMeshinitCapabilities(meshed)); !slices.Equal(exempted, want) {
				t.Fatalf("%s at %s: meshinit's container changes upstream's verdict beyond capabilities: %v, was %v", f.name, level, exempted, want)
			}
			checkAgainstUpstream(t, fmt.Sprintf("%s with meshinit at %s", f.name, level), guard.refusal(t, ns, meshed), want)
			if len(want) > 0 {
				refused++
			}
		}
		t.Logf("%s: %d fixtures, %d refused", level, len(upstreamFixtures(t)), refused)
	}
}

// forgeries change meshinit's container, or where it is, in one way each:
// the guard exempts none of them, so upstream's capabilities check refuses
// the pod at both levels. Another image is not among them: the trust policy,
// bound wherever the guard is, refuses it (TestGuardPodUpdates,
// TestTrustBoundWhereverRecognised).
var forgeries = []struct {
	name   string
	change func(p *corev1.Pod)
}{
	{"a command", forged(func(c *corev1.Container) { c.Command = []string{"/bin/sh"} })},
	{"an argument more", forged(func(c *corev1.Container) { c.Args = append(c.Args, "--ipv6=off") })},
	{"an argument changed", withArg("iptables-mode", "legacy")},
	{"env", forged(func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Name: "XTABLES_LIBDIR", Value: "/tmp"}} })},
	{"a volume mount", forged(func(c *corev1.Container) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	})},
	{"its token volume a configMap", func(p *corev1.Pod) {
		for i, v := range p.Spec.Volumes {
			if v.EmptyDir != nil {
				p.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "token"}}}
			}
		}
	}},
	{"a native sidecar", forged(func(c *corev1.Container) { c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways) })},
	{"SYS_ADMIN added", forged(func(c *corev1.Container) {
		c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, "SYS_ADMIN")
	})},
	{"nothing dropped", forged(func(c *corev1.Container) { c.SecurityContext.Capabilities.Drop = nil })},
	{"as root", forged(func(c *corev1.Container) { c.SecurityContext.RunAsUser = ptr.To[int64](0) })},
	{"runAsNonRoot unset", forged(func(c *corev1.Container) { c.SecurityContext.RunAsNonRoot = nil })},
	{"a writable root", forged(func(c *corev1.Container) { c.SecurityContext.ReadOnlyRootFilesystem = ptr.To(false) })},
	{"privilege escalation", forged(func(c *corev1.Container) { c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true) })},
	{"privileged", forged(func(c *corev1.Container) { c.SecurityContext.Privileged = ptr.To(true) })},
	{"seccomp Localhost", forged(func(c *corev1.Container) {
		c.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
	})},
	{"an SELinux type", forged(func(c *corev1.Container) {
		c.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t"}
	})},
	{"not first", func(p *corev1.Pod) {
		p.Spec.InitContainers = append(p.Spec.InitContainers[1:], p.Spec.InitContainers[0])
	}},
	{"as an app container", func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, *redirectContainer(p))
		p.Spec.InitContainers = slices.DeleteFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == initContainerName })
	}},
	{"under another name", forged(func(c *corev1.Container) { c.Name = "redirect" })},
}

// TestGuardExemptsOnlyMeshinit: upstream's minimal valid pod of each level
// is admitted with meshinit's container as the webhook injects it, and
// refused (with upstream's capabilities reason, and why meshinit-redirect
// is not exempt) when that container is changed in any one way, or when
// another container adds what it adds.
func TestGuardExemptsOnlyMeshinit(t *testing.T) {
	guard := guardPolicy(t, nil)
	capabilitiesReason := map[api.Level]string{api.LevelBaseline: "non-default capabilities (", api.LevelRestricted: "unrestricted capabilities ("}
	for _, level := range levels {
		ns := guarded(level)
		base := minimalPod(t, level)
		base.Spec.InitContainers = append(base.Spec.InitContainers, corev1.Container{Name: "init2", Image: "registry.k8s.io/pause"})
		if level == api.LevelRestricted {
			base.Spec.InitContainers[1].SecurityContext = base.Spec.InitContainers[0].SecurityContext.DeepCopy()
		}
		meshed := withMeshinit(base)
		if got := guard.refusal(t, ns, meshed); got != "" {
			t.Fatalf("%s: upstream's minimal pod with meshinit's container refused: %s", level, got)
		}
		for _, f := range forgeries {
			p := meshed.DeepCopy()
			f.change(p)
			got := guard.refusal(t, ns, p)
			if !strings.Contains(got, capabilitiesReason[level]) {
				t.Errorf("%s, meshinit-redirect with %s: %q, want upstream's reason %q", level, f.name, got, capabilitiesReason[level])
			}
			if slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == initContainerName }) &&
				!strings.Contains(got, "init container meshinit-redirect is not exempt") {
				t.Errorf("%s, meshinit-redirect with %s: %q does not say why meshinit-redirect is not exempt", level, f.name, got)
			}
		}
		// Another container adding what meshinit's adds.
		p := meshed.DeepCopy()
		p.Spec.Containers[0].SecurityContext = redirectContainer(meshed).SecurityContext.DeepCopy()
		if got := guard.refusal(t, ns, p); !strings.Contains(got, capabilitiesReason[level]+`container "container1"`) {
			t.Errorf("%s: an app container with meshinit's securityContext: %q", level, got)
		}
	}
}

// TestGuardPrivilegedMode: with inject.privileged the injected
// container is privileged, which the guard never exempts: an injected pod is
// refused in a guarded namespace, saying so.
func TestGuardPrivilegedMode(t *testing.T) {
	values := map[string]any{"inject": map[string]any{"privileged": true}}
	in, err := newInjector(values)
	if err != nil {
		t.Fatal(err)
	}
	p, err := in.inject(minimalPod(t, api.LevelBaseline))
	if err != nil {
		t.Fatal(err)
	}
	got := guardPolicy(t, values).refusal(t, guarded(api.LevelBaseline), p)
	for _, want := range []string{`privileged (container "meshinit-redirect" must not set securityContext.privileged=true)`, "inject.privileged: true"} {
		if !strings.Contains(got, want) {
			t.Errorf("got %q, want it to contain %q", got, want)
		}
	}
}

// TestGuardLabelValues: a namespace labelled with anything but baseline or
// restricted has every pod refused, naming the label, rather than none
// checked; the level's name is the label's whole value.
func TestGuardLabelValues(t *testing.T) {
	guard := guardPolicy(t, nil)
	p := withMeshinit(minimalPod(t, api.LevelBaseline))
	for _, value := range []string{"Baseline", "privileged", "", "baseline "} {
		ns := namespace("guarded", podSecurityLabel, value)
		want := fmt.Sprintf("namespace guarded has label %s=%q, which is not a level the guard enforces: label it baseline or restricted", podSecurityLabel, value)
		if got := guard.refusal(t, ns, p); got != want {
			t.Errorf("label %q:\n got  %q\n want %q", value, got, want)
		}
	}
}

// beyondFixtures change upstream's minimal valid pod of a level in ways its
// fixtures do not (allowed values they leave out, ephemeral containers,
// several violations at once, Windows and user-namespace pods): the guard
// must decide each as upstream's checks do.
var beyondFixtures = []struct {
	name   string
	change func(p *corev1.Pod)
}{
	{"SELinux container_engine_t", func(p *corev1.Pod) {
		sc(&p.Spec.Containers[0]).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		podSC(p).SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
	}},
	{"SELinux user, role and type on the pod", func(p *corev1.Pod) {
		podSC(p).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t", User: "u", Role: "r"}
	}},
	{"SELinux level only", func(p *corev1.Pod) {
		sc(&p.Spec.InitContainers[0]).SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1"}
	}},
	{"Unmasked procMount in a user namespace", func(p *corev1.Pod) {
		p.Spec.HostUsers = ptr.To(false)
		sc(&p.Spec.Containers[0]).ProcMount = ptr.To(corev1.UnmaskedProcMount)
	}},
	{"Default procMount", func(p *corev1.Pod) { sc(&p.Spec.Containers[0]).ProcMount = ptr.To(corev1.DefaultProcMount) }},
	{"root in a user namespace", func(p *corev1.Pod) {
		p.Spec.HostUsers = ptr.To(false)
		podSC(p).RunAsUser = ptr.To[int64](0)
		podSC(p).RunAsNonRoot = ptr.To(false)
	}},
	{"every safe sysctl", func(p *corev1.Pod) {
		for _, s := range []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
			"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
			"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
			"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"} {
			podSC(p).Sysctls = append(podSC(p).Sysctls, corev1.Sysctl{Name: s, Value: "1"})
		}
	}},
	{"an unsafe sysctl among safe ones", func(p *corev1.Pod) {
		podSC(p).Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}}
	}},
	{"lifecycle hosts", func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
			PreStop:   &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1"}},
			PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "example.com"}},
		}
		p.Spec.InitContainers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "h"}}}
	}},
	{"a privileged ephemeral container", func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
	}},
	{"an ephemeral container with NET_ADMIN and a host port", func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}},
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}}}}
	}},
	{"a host port on an init container", func(p *corev1.Pod) {
		p.Spec.InitContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 81, HostPort: 81}}
	}},
	{"AppArmor annotations", func(p *corev1.Pod) {
		p.Annotations = map[string]string{
			"container.apparmor.security.beta.kubernetes.io/container1":     "unconfined",
			"container.apparmor.security.beta.kubernetes.io/initcontainer1": "localhost/profile",
			"container.apparmor.security.beta.kubernetes.io/other":          "runtime/default",
		}
	}},
	{"AppArmor fields", func(p *corev1.Pod) {
		podSC(p).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		sc(&p.Spec.Containers[0]).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("p")}
	}},
	{"a lower-case capability", func(p *corev1.Pod) {
		sc(&p.Spec.Containers[0]).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"net_admin"}, Drop: []corev1.Capability{"ALL"}}
	}},
	{"only NET_BIND_SERVICE and CHOWN", func(p *corev1.Pod) {
		sc(&p.Spec.Containers[0]).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "CHOWN"}, Drop: []corev1.Capability{"ALL"}}
	}},
	{"a Windows hostProcess pod", func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		podSC(p).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
	}},
	{"a Windows pod unconfined, with capabilities", func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		sc(&p.Spec.Containers[0]).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		sc(&p.Spec.Containers[0]).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
		sc(&p.Spec.Containers[0]).AllowPrivilegeEscalation = nil
	}},
	{"seccomp: a container unconfined under a RuntimeDefault pod", func(p *corev1.Pod) {
		podSC(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		sc(&p.Spec.Containers[0]).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}},
	{"seccomp Localhost on the pod, none on containers", func(p *corev1.Pod) {
		podSC(p).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
	}},
	{"runAsNonRoot false on one container under a true pod", func(p *corev1.Pod) {
		podSC(p).RunAsNonRoot = ptr.To(true)
		sc(&p.Spec.InitContainers[0]).RunAsNonRoot = ptr.To(false)
	}},
	{"runAsNonRoot only on the containers", func(p *corev1.Pod) {
		podSC(p).RunAsNonRoot = nil
		sc(&p.Spec.InitContainers[0]).RunAsNonRoot = ptr.To(true)
		sc(&p.Spec.Containers[0]).RunAsNonRoot = ptr.To(true)
	}},
	{"volumes of every kind", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
			{Name: "nfs", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}},
			{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "r"}}},
			{Name: "ephemeral", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}},
		}
	}},
	{"everything at once", func(p *corev1.Pod) {
		p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
		p.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		sc(&p.Spec.Containers[0]).Privileged = ptr.To(true)
		sc(&p.Spec.Containers[0]).RunAsUser = ptr.To[int64](0)
		sc(&p.Spec.Containers[0]).AllowPrivilegeEscalation = ptr.To(true)
		sc(&p.Spec.InitContainers[0]).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN", "NET_RAW"}}
		podSC(p).Sysctls = []corev1.Sysctl{{Name: "kernel.sem", Value: "1"}}
	}},
}

func sc(c *corev1.Container) *corev1.SecurityContext {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	return c.SecurityContext
}

func podSC(p *corev1.Pod) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

// TestGuardBeyondFixtures: the guard decides each of beyondFixtures, on the
// minimal valid pod of each level and of the other, with and without
// meshinit's container, as upstream's checks decide it.
func TestGuardBeyondFixtures(t *testing.T) {
	guard := guardPolicy(t, nil)
	for _, level := range levels {
		ns := guarded(level)
		for _, baseLevel := range levels {
			base := minimalPod(t, baseLevel)
			for _, tc := range beyondFixtures {
				p := base.DeepCopy()
				tc.change(p)
				what := fmt.Sprintf("%s on %s's minimal pod, at %s", tc.name, baseLevel, level)
				want := upstreamVerdict(t, level, p)
				checkAgainstUpstream(t, what, guard.refusal(t, ns, p), want)
				meshed := withMeshinit(p)
				checkAgainstUpstream(t, what+", with meshinit", guard.refusal(t, ns, meshed), upstreamVerdict(t, level, withoutMeshinitCapabilities(meshed)))
			}
		}
	}
}

// TestGuardTemplates: the guard checks the pod template of every workload
// kind it matches as it checks a pod (the binding that matches them warns
// instead of refusing: TestGuardWarnsAboutTemplates).
func TestGuardTemplates(t *testing.T) {
	guard := guardPolicy(t, nil)
	for _, level := range levels {
		for _, w := range workloads {
			clean := minimalPod(t, level)
			clean.Name = "w"
			if got := guard.denials(t, request{object: w.of(clean), namespace: guarded(level)}); len(got) > 0 {
				t.Errorf("%s at %s: upstream's minimal pod as its template: %q", w.kind, level, got)
			}
			host := clean.DeepCopy()
			host.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			want := map[api.Level]string{api.LevelBaseline: `hostPath volumes (volume "host")`, api.LevelRestricted: `restricted volume types (volume "host" uses restricted volume types "hostPath")`}[level]
			if got := guard.denials(t, request{object: w.of(host), namespace: guarded(level)}); len(got) != 1 || !strings.Contains(got[0], want) {
				t.Errorf("%s at %s: a hostPath volume in its template: %q, want %q", w.kind, level, got, want)
			}
		}
	}
}
