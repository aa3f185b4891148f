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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The cases of issue 21, written as a pod's author with create rights on
// pods and workloads in an opted-in namespace (and none on Namespaces,
// RedirectPolicies or meshinit's objects) would try them: every route to
// the proxy's identity, around netfilter, or through the node, each
// refused with the fix it needs, next to the pod that does it right. They
// run as pods and as each workload's template, with the webhook
// (TestGuarantees) and with the policy injector (TestGuaranteesPolicyInjector),
// on a real API server with its default admission plugins. The README's
// threat model lists them by guarantee; docs/attackers-checklist.md says
// why everything else a Pod holds is safe.

// trustedEntries are the proxy containers testValues adds to envoy's: a
// tag-pinned image, a Docker Hub image written short, and a proxy as a
// mesh's injector writes one (Istio's istio-proxy, say), trusted in
// team-a only.
var trustedEntries = []any{
	map[string]any{"name": "pinned", "image": "registry.example/pinned:v1"},
	map[string]any{"name": "hub", "image": "envoyproxy/envoy"},
	map[string]any{
		"name": "mesh-proxy", "image": "registry.example/proxyv2:1.0",
		"args": []any{"proxy", "sidecar", map[string]any{"pattern": "--log-level=(debug|info|warning)"}},
		"env": []any{
			map[string]any{"name": "MODE", "value": "sidecar"},
			map[string]any{"name": "WORKLOAD", "pattern": ".{1,63}"},
			map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.name"}}},
		},
		"volumeMounts": []any{map[string]any{"name": "proxy-config", "mountPath": "/etc/proxy"}},
		"volumes":      []any{map[string]any{"name": "proxy-config", "emptyDir": map[string]any{}}},
		"execs":        []any{[]any{"proxy", "wait"}},
		"namespaces":   []any{"team-a"},
	},
}

// meshProxy is the mesh-proxy container as its entry trusts it, running as
// the proxy; withMeshProxy adds it and its volume to a pod.
func meshProxy() corev1.Container {
	return corev1.Container{
		Name: "mesh-proxy", Image: "registry.example/proxyv2:1.0", Args: []string{"proxy", "sidecar", "--log-level=info"},
		Env: []corev1.EnvVar{{Name: "MODE", Value: "sidecar"}, {Name: "WORKLOAD", Value: "web"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
		VolumeMounts:    []corev1.VolumeMount{{Name: "proxy-config", MountPath: "/etc/proxy"}},
		Lifecycle:       &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"proxy", "wait"}}}},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1337), RunAsGroup: ptr.To[int64](1337)},
	}
}

func withMeshProxy(change func(c *corev1.Container)) podOption {
	return func(p *corev1.Pod) {
		c := meshProxy()
		if change != nil {
			change(&c)
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "proxy-config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
}

// asProxy adds a container of image named name running as the proxy UID.
func asProxy(name, image string) podOption {
	return withContainer(corev1.Container{Name: name, Image: image, SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1337)}})
}

// volume adds a pod volume.
func volume(v corev1.Volume) podOption {
	return func(p *corev1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v) }
}

// mount adds a volume mount to the container named.
func mount(container string, m corev1.VolumeMount) podOption {
	return func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == container {
				p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts, m)
				return
			}
		}
		panic("no container " + container)
	}
}

// msgPodMust is the default RedirectPolicy's message for what the pod
// itself must change.
func msgPodMust(fixes ...string) string {
	return "SUBJECT must " + strings.Join(fixes, ", ") + ", because RedirectPolicy meshinit-system/default requires " + defaultRequires +
		" to reach the proxy, and the node's processes and files are a way around any proxy"
}

// strictMust is msgMust for team-strict/strict (interception Required).
func strictMust(name string, fixes ...string) string {
	return msgMust("team-strict/strict", "every port (interception: Required)", name, 0, fixes...)
}

const (
	volumeKinds     = "configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected, secret"
	fixProcMount    = "leave securityContext.procMount at Default"
	digest          = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	msgNeverCapture = "inbound port 8443 is required by RedirectPolicy meshinit-system/default, but meshinit's rules never capture it: it is "
)

// fixesAsProxy are the fixes for a container that runs as the proxy UID
// (explicitly, the pod giving it its GID) without being trusted.
var fixesAsProxy = []string{fixUID, fixAPE, fixDrop}

func mustAsProxy(name string) string { return msgDefaultMust(name, fixesAsProxy...) }

// guaranteeCases: issue 21's classes 1, 2, 4, 5 and 7, by class. SUBJECT
// in a message is "pod" or "pod template"; every case holds for templates
// too (none depends on injection).
var guaranteeCases = []struct {
	class, name, namespace string
	pod                    *corev1.Pod
	want                   verdict
	// forged: the case is in meshinit's container's arguments, which the
	// policy injector replaces with its own (the pod is admitted; a
	// template, never injected, is not).
	forged bool
	// procMount: the case needs the API server to keep procMount (feature
	// ProcMountType; v1.32 drops the field, so the kubelet never sees it
	// and the pod is admitted).
	procMount bool
}{
	// Class 1: the proxy's identity by any route the kernel offers
	// (redirect's TestIdentityRoutes shows each route on a real kernel).
	{class: "identity", name: "the pod as the policy wants it", namespace: "team-a", pod: pod("ok", injected)},
	{class: "identity", name: "no runAsUser: the image's USER decides", namespace: "team-a",
		pod:  pod("p", injected, podSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsUser, sc.RunAsGroup = nil, nil })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixUID, fixGID), metav1.StatusReasonForbidden}},
	{class: "identity", name: "no runAsGroup: the image's /etc/passwd decides", namespace: "team-a",
		pod:  pod("p", injected, podSecurity(func(sc *corev1.PodSecurityContext) { sc.RunAsGroup = nil })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixGID), metav1.StatusReasonForbidden}},
	{class: "identity", name: "root keeping the runtime's capabilities (setuid)", namespace: "team-a",
		pod:  pod("p", injected, runAsUser("app", 0), security("app", func(sc *corev1.SecurityContext) { sc.Capabilities = nil })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixDrop), metav1.StatusReasonForbidden}},
	{class: "identity", name: "a UID of its own keeping the runtime's capabilities (file capabilities on its command)", namespace: "team-a",
		pod:  pod("p", injected, security("app", func(sc *corev1.SecurityContext) { sc.Capabilities.Drop = []corev1.Capability{"NET_RAW", "NET_ADMIN"} })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixDrop), metav1.StatusReasonForbidden}},
	{class: "identity", name: "privilege escalation left on (a setuid or setgid executable)", namespace: "team-a",
		pod:  pod("p", injected, security("app", func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = nil })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixAPE), metav1.StatusReasonForbidden}},
	{class: "identity", name: "SETUID added back", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "SETUID")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("SETUID")), metav1.StatusReasonForbidden}},
	{class: "identity", name: "SETGID added back", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "SETGID")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("SETGID")), metav1.StatusReasonForbidden}},
	{class: "identity", name: "SYS_PTRACE added (the proxy's process in a shared process namespace)", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "SYS_PTRACE")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("SYS_PTRACE")), metav1.StatusReasonForbidden}},
	{class: "identity", name: "KILL added in a shared process namespace (the proxy's port freed)", namespace: "team-a",
		pod:  pod("p", injected, addCapabilities("app", "KILL"), func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = ptr.To(true) }),
		want: verdict{clusterBinding, msgDefaultMust("app", "not add capability KILL (only "+strings.Replace(addables, " KILL,", "", 1)+")"), metav1.StatusReasonForbidden}},
	{class: "identity", name: "KILL added, no shared process namespace", namespace: "team-a", pod: pod("ok", injected, addCapabilities("app", "KILL"))},
	{class: "identity", name: "a per-pod proxy UID of 0 where a container runs as root", namespace: "team-a",
		pod:  pod("p", annotations(proxyUIDAnnotation, "0"), injected, runAsUser("app", 0)),
		want: verdict{clusterBinding, msgDefaultMust("app", strings.Replace(fixUID, "1337", "0", 1)), metav1.StatusReasonForbidden}},
	{class: "identity", name: "a per-pod proxy GID that the pod's containers run as", namespace: "team-a",
		pod:  pod("p", annotations(proxyGIDAnnotation, "4000"), injected),
		want: verdict{clusterBinding, msgDefaultMust("app", strings.Replace(fixGID, "1337", "4000", 1)), metav1.StatusReasonForbidden}},
	{class: "identity", name: "fsGroup and supplementalGroups of the proxy's GID: supplementary groups are not matched", namespace: "team-a",
		pod: pod("ok", injected, podSecurity(func(sc *corev1.PodSecurityContext) {
			sc.FSGroup, sc.SupplementalGroups = ptr.To[int64](1337), []int64{1337}
		}))},
	{class: "identity", name: "procMount Unmasked (a writable /proc/sys)", namespace: "team-a", procMount: true,
		pod: pod("p", injected, func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false) },
			security("app", func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixProcMount), metav1.StatusReasonForbidden}},
	{class: "identity", name: "the node's processes (hostPID)", namespace: "team-a",
		pod:  pod("p", injected, func(p *corev1.Pod) { p.Spec.HostPID = true }),
		want: verdict{clusterBinding, msgPodMust("share the node's process namespace (hostPID: true)"), metav1.StatusReasonForbidden}},
	{class: "identity", name: "the node's IPC (hostIPC)", namespace: "team-a",
		pod:  pod("p", injected, func(p *corev1.Pod) { p.Spec.HostIPC = true }),
		want: verdict{clusterBinding, msgPodMust("share the node's IPC namespace (hostIPC: true)"), metav1.StatusReasonForbidden}},
	{class: "identity", name: "the node's files (hostPath)", namespace: "team-a",
		pod: pod("p", injected, volume(corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})),
		want: verdict{clusterBinding, msgPodMust("not have volume root (only " + volumeKinds + " volumes: others are served by the node, from its own file system or network)"),
			metav1.StatusReasonForbidden}},
	{class: "identity", name: "a server the node mounts (nfs)", namespace: "team-a",
		pod: pod("p", injected, volume(corev1.Volume{Name: "share", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "192.0.2.1", Path: "/"}}})),
		want: verdict{clusterBinding, msgPodMust("not have volume share (only " + volumeKinds + " volumes: others are served by the node, from its own file system or network)"),
			metav1.StatusReasonForbidden}},

	// Class 2: trusted proxy containers, for what they run and where.
	{class: "trust", name: "the mesh's proxy as its entry trusts it", namespace: "team-a", pod: pod("ok", injected, withMeshProxy(nil))},
	{class: "trust", name: "the mesh's proxy with an argument its pattern refuses", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.Args[2] = "--log-level=trace" })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy in client mode (another argument)", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.Args = append(c.Args, "--dial=db:5432") })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with a command", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.Command = []string{"/bin/sh", "-c"} })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with LD_PRELOAD", namespace: "team-a",
		pod: pod("p", injected, withMeshProxy(func(c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/tmp/x.so"})
		})),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with another value of a pinned variable", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.Env[0].Value = "passthrough" })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with a pattern's variable expanding another", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.Env[1].Value = "$(MODE)" })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with a valueFrom replaced by a value", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.Env[2] = corev1.EnvVar{Name: "POD_NAME", Value: "x"} })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with a working directory", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(func(c *corev1.Container) { c.WorkingDir = "/tmp" })),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with an exec probe (it runs as the proxy)", namespace: "team-a",
		pod: pod("p", injected, withMeshProxy(func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "nc db 5432"}}}}
		})),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy with an HTTP probe (the kubelet's, from the node)", namespace: "team-a",
		pod: pod("ok", injected, withMeshProxy(func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(15021)}}}
		}))},
	{class: "trust", name: "the mesh's proxy with a mount over its binary", namespace: "team-a",
		pod: pod("p", injected, volume(corev1.Volume{Name: "bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}),
			withMeshProxy(func(c *corev1.Container) {
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "bin", MountPath: "/usr/local/bin"})
			})),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the mesh's proxy's volume from a ConfigMap of the author's", namespace: "team-a",
		pod: pod("p", injected, withMeshProxy(nil), func(p *corev1.Pod) {
			p.Spec.Volumes[len(p.Spec.Volumes)-1].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "mine"}}}
		}),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "an app writing the mesh's proxy's volume", namespace: "team-a",
		pod:  pod("p", injected, withMeshProxy(nil), mount("app", corev1.VolumeMount{Name: "proxy-config", MountPath: "/config"})),
		want: verdict{clusterBinding, msgDefaultMust("app", "mount volume proxy-config read-only (a proxy container reads it)"), metav1.StatusReasonForbidden}},
	{class: "trust", name: "an app reading the mesh's proxy's volume", namespace: "team-a",
		pod: pod("ok", injected, withMeshProxy(nil), mount("app", corev1.VolumeMount{Name: "proxy-config", MountPath: "/config", ReadOnly: true}))},
	{class: "trust", name: "the mesh's proxy outside the namespaces its entry names", namespace: "plain",
		pod:  pod("p", injected, labels(podLabel, "true"), withMeshProxy(nil)),
		want: verdict{clusterBinding, msgDefaultMust("mesh-proxy", fixUID, fixGID, fixAPE, fixDrop), metav1.StatusReasonForbidden}},
	{class: "trust", name: "the trusted image under another name", namespace: "team-a",
		pod: pod("p", injected, asProxy("debug", envoyImage+":v1.30")), want: verdict{clusterBinding, mustAsProxy("debug"), metav1.StatusReasonForbidden}},

	// Class 4: images and capability names read as the container runtime
	// reads them (TestImagesReadAsTheRuntime compares many more images with
	// github.com/distribution/reference, containerd's reader).
	{class: "names", name: "any tag and digest of an entry without one", namespace: "team-a", pod: pod("ok", injected, asProxy("envoy", envoyImage+":v1.30"+digest))},
	{class: "names", name: "the entry's tag", namespace: "team-a", pod: pod("ok", injected, asProxy("pinned", "registry.example/pinned:v1"))},
	{class: "names", name: "the entry's tag with a digest, which wins", namespace: "team-a",
		pod: pod("p", injected, asProxy("pinned", "registry.example/pinned:v1"+digest)), want: verdict{clusterBinding, mustAsProxy("pinned"), metav1.StatusReasonForbidden}},
	{class: "names", name: "another tag than the entry's", namespace: "team-a",
		pod: pod("p", injected, asProxy("pinned", "registry.example/pinned:v2")), want: verdict{clusterBinding, mustAsProxy("pinned"), metav1.StatusReasonForbidden}},
	{class: "names", name: "no tag where the entry has one (latest)", namespace: "team-a",
		pod: pod("p", injected, asProxy("pinned", "registry.example/pinned")), want: verdict{clusterBinding, mustAsProxy("pinned"), metav1.StatusReasonForbidden}},
	{class: "names", name: "a Docker Hub image with its registry", namespace: "team-a", pod: pod("ok", injected, asProxy("hub", "docker.io/envoyproxy/envoy:v1.30"))},
	{class: "names", name: "a Docker Hub image through index.docker.io", namespace: "team-a", pod: pod("ok", injected, asProxy("hub", "index.docker.io/envoyproxy/envoy"))},
	{class: "names", name: "a longer repository name", namespace: "team-a",
		pod: pod("p", injected, asProxy("hub", "envoyproxy/envoy-contrib:v1.30")), want: verdict{clusterBinding, mustAsProxy("hub"), metav1.StatusReasonForbidden}},
	{class: "names", name: "a repository under the trusted one", namespace: "team-a",
		pod: pod("p", injected, asProxy("hub", "envoyproxy/envoy/debug")), want: verdict{clusterBinding, mustAsProxy("hub"), metav1.StatusReasonForbidden}},
	{class: "names", name: "net_admın with a dotless i (containerd reads CAP_NET_ADMIN)", namespace: "team-a",
		pod:  pod("p", injected, addCapabilities("app", "net_admın")),
		want: verdict{clusterBinding, msgDefaultMust("app", `name capabilities in ASCII only ("net_admın" is not: the container runtime upper-cases it with Unicode rules)`), metav1.StatusReasonForbidden}},
	{class: "names", name: "ſys_admin with a long s (containerd reads CAP_SYS_ADMIN)", namespace: "team-a",
		pod:  pod("p", injected, addCapabilities("app", "ſys_admin")),
		want: verdict{clusterBinding, msgDefaultMust("app", `name capabilities in ASCII only ("ſys_admin" is not: the container runtime upper-cases it with Unicode rules)`), metav1.StatusReasonForbidden}},
	{class: "names", name: "a CAP_ prefix (CRI-O keeps it)", namespace: "team-a",
		pod: pod("p", injected, addCapabilities("app", "CAP_NET_RAW")), want: verdict{clusterBinding, msgDefaultMust("app", fixAdd("NET_RAW")), metav1.StatusReasonForbidden}},
	{class: "names", name: "a lower-case name the runtime upper-cases", namespace: "team-a", pod: pod("ok", injected, addCapabilities("app", "net_bind_service"))},
	{class: "names", name: "drop all in lower case (runtimes read it; the policy wants ALL, as PodSecurity restricted does)", namespace: "team-a",
		pod:  pod("p", injected, security("app", func(sc *corev1.SecurityContext) { sc.Capabilities.Drop = []corev1.Capability{"all"} })),
		want: verdict{clusterBinding, msgDefaultMust("app", fixDrop), metav1.StatusReasonForbidden}},
	{class: "names", name: "the trusted proxy with a dotless i", namespace: "team-a",
		pod: pod("p", injected, asProxy("envoy", envoyImage), addCapabilities("envoy", "net_admın")),
		want: verdict{clusterBinding, msgDefaultMust("envoy", `name capabilities in ASCII only ("net_admın" is not: the container runtime upper-cases it with Unicode rules)`),
			metav1.StatusReasonForbidden}},

	// Class 5: each setting's effect in both directions, from the rule plan
	// (TestNeverCapturedLikeThePlan compares the two).
	{class: "direction", name: "the outbound proxy port moved onto a required inbound port", namespace: "team-a",
		pod:  pod("p", annotations(outboundProxyPortAnnotation, "8443"), injected),
		want: verdict{clusterBinding, msgNeverCapture + "the outbound proxy port (traffic.meshinit.io/outbound-proxy-port)", metav1.StatusReasonForbidden}},
	{class: "direction", name: "the inbound proxy port moved onto a required inbound port", namespace: "team-a",
		pod:  pod("p", annotations(inboundProxyPortAnnotation, "8443"), injected),
		want: verdict{clusterBinding, msgNeverCapture + "the inbound proxy port (traffic.meshinit.io/inbound-proxy-port)", metav1.StatusReasonForbidden}},
	{class: "direction", name: "the outbound proxy port moved onto a port not required", namespace: "team-a",
		pod: pod("ok", annotations(outboundProxyPortAnnotation, "16001"), injected)},
	{class: "direction", name: "the outbound proxy port moved in meshinit's arguments only", namespace: "team-a",
		pod: pod("p", injected, withArg("outbound-proxy-port", "8443")), forged: true,
		want: verdict{clusterBinding, msgNeverCapture + "the outbound proxy port (traffic.meshinit.io/outbound-proxy-port)", metav1.StatusReasonForbidden}},
	{class: "direction", name: "the outbound proxy port moved where only inbound ports are left to require it", namespace: "team-strict",
		pod: pod("p", injected, annotations(outboundProxyPortAnnotation, "16001")),
		want: verdict{namespaceBinding, "SUBJECT sets the outbound proxy port 16001 (traffic.meshinit.io/outbound-proxy-port; the chart's: 15001), but RedirectPolicy team-strict/strict " +
			"requires its traffic to reach the proxy and does not allow setting the proxy ports per pod (allowProxyPortOverride)", metav1.StatusReasonForbidden}},

	// Class 7: interception Required requires every port, both ways.
	{class: "semantics", name: "Required: capturing only the inbound ports another policy lists", namespace: "team-strict",
		pod: pod("p", injected, annotations(includeInbound, "8443,9443")),
		want: verdict{namespaceBinding, `every inbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/include-inbound-ports must be "*"`,
			metav1.StatusReasonForbidden}},
	{class: "semantics", name: "Required: excluding outbound ports no policy lists", namespace: "team-strict",
		pod: pod("p", injected, annotations(excludeOutbound, "1-100")),
		want: verdict{namespaceBinding, "every outbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/exclude-outbound-ports cannot list 1-100",
			metav1.StatusReasonForbidden}},
	{class: "semantics", name: "Required: capturing only the port the default requires", namespace: "team-strict",
		pod: pod("p", injected, annotations(includeOutbound, "5432")),
		want: verdict{namespaceBinding, `every outbound port is required by RedirectPolicy team-strict/strict (interception: Required), so traffic.meshinit.io/include-outbound-ports must be "*"`,
			metav1.StatusReasonForbidden}},
	{class: "semantics", name: "Required: excluding destinations without outbound ports listed", namespace: "team-strict",
		pod: pod("p", injected, annotations(excludeCIDRs, "10.1.0.0/16")),
		want: verdict{namespaceBinding, excludeCIDRs + ` "10.1.0.0/16" takes 10.1.0.0/16 around the proxy, but RedirectPolicy team-strict/strict requires every outbound port (interception: Required) ` +
			"to reach it and allows excluding no destination (allowedOutboundCIDRExclusions)", metav1.StatusReasonForbidden}},
	{class: "semantics", name: "ports listed: opting out", namespace: "team-a",
		pod: pod("p", labels(podLabel, "false")), want: verdict{clusterBinding, msgOptedOut, metav1.StatusReasonForbidden}},
	{class: "semantics", name: "ports listed: the node's network", namespace: "team-a",
		pod: pod("p", hostNetwork), want: verdict{clusterBinding, msgHostNetwork, metav1.StatusReasonForbidden}},
}

// TestGuarantees creates (dry run) every guarantee case as a pod and as
// each workload's template on a real API server, pods injected by the
// webhook (in-process), and checks the verdict.
func TestGuarantees(t *testing.T) {
	c := apiServer(t)
	keeps := c.keepsProcMount(t)
	for _, tc := range guaranteeCases {
		t.Run(tc.class+"/"+tc.name, func(t *testing.T) {
			want := tc.want
			if tc.procMount && !keeps {
				want = verdict{}
			}
			c.checkCase(t, tc.namespace, tc.pod, want, want, false)
		})
	}
}

// keepsProcMount reports whether the API server keeps a container's
// procMount Unmasked (where its features ProcMountType or
// UserNamespacesSupport are off, as on 1.32, it drops hostUsers and sets
// procMount to Default, so the pod is safe as created).
func (c *cluster) keepsProcMount(t *testing.T) bool {
	t.Helper()
	p := pod("procmount", func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false) },
		security("app", func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) }))
	if err := c.createDryRun("plain", p); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(p.Spec.Containers[0].SecurityContext.ProcMount, corev1.DefaultProcMount) == corev1.UnmaskedProcMount
}

// TestGuaranteesPolicyInjector is TestGuarantees in policy mode: the same
// pods and templates get the same verdicts, or the injector's own refusal
// where the webhook would refuse the pod.
func TestGuaranteesPolicyInjector(t *testing.T) {
	c := injectorAPIServer(t)
	if c == nil {
		return
	}
	tw := newTwins(t, testValues())
	keeps := c.keepsProcMount(t)
	for _, tc := range guaranteeCases {
		t.Run(tc.class+"/"+tc.name, func(t *testing.T) {
			want, templateWant := tc.want, tc.want
			if tc.procMount && !keeps {
				want, templateWant = verdict{}, verdict{}
			}
			if web := tw.byWebhook(t, clusterNamespaces[tc.namespace], tc.pod); web.Denied != "" {
				want = verdict{injectName, web.Denied, metav1.StatusReasonForbidden}
			} else if tc.forged {
				want = verdict{}
			}
			c.checkCase(t, tc.namespace, tc.pod, want, templateWant, false)
		})
	}
}
