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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/charts"
)

// TestWebhookAvailability checks what keeps the webhook answering: two
// replicas, a rolling update that never lowers that, a PodDisruptionBudget,
// spread over zones and nodes, and probes. (The Service's preference for a
// replica close to the API server: TestTrafficDistribution.)
func TestWebhookAvailability(t *testing.T) {
	var d appsv1.Deployment
	charts.MustObject(t, charts.Options{}, "Deployment", "", &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 || ru.MaxSurge == nil || ru.MaxSurge.IntValue() < 1 {
		t.Errorf("strategy %+v, want RollingUpdate maxUnavailable 0, maxSurge >= 1", d.Spec.Strategy)
	}
	spec := d.Spec.Template.Spec
	keys := map[string]bool{}
	for _, c := range spec.TopologySpreadConstraints {
		keys[c.TopologyKey] = true
		if c.LabelSelector == nil || c.LabelSelector.MatchLabels["app.kubernetes.io/component"] != "webhook" {
			t.Errorf("topology spread on %s selects %v, not the webhook's pods", c.TopologyKey, c.LabelSelector)
		}
	}
	if !keys["topology.kubernetes.io/zone"] || !keys["kubernetes.io/hostname"] {
		t.Errorf("topology spread keys %v, want zone and hostname", keys)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
		}
	}
	checkRestricted(t, "webhook", spec.SecurityContext, c)

	var pdb policyv1.PodDisruptionBudget
	charts.MustObject(t, charts.Options{}, "PodDisruptionBudget", "", &pdb)
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "webhook" {
		t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1 of the webhook's pods", pdb.Spec)
	}

}

// TestPodDisruptionBudget: only from 2 replicas up; with 0 or 1 a PDB
// keeping one available would block node drains forever.
func TestPodDisruptionBudget(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		want     bool
	}{{0, false}, {1, false}, {2, true}, {3, true}} {
		objs := charts.MustObjects(t, charts.Options{Values: map[string]any{"webhook": map[string]any{"replicas": tc.replicas}}}, false)
		var d appsv1.Deployment
		charts.DecodeOne(t, objs, "Deployment", "", &d)
		if d.Spec.Replicas == nil || *d.Spec.Replicas != int32(tc.replicas) {
			t.Errorf("replicas %d: Deployment has %v", tc.replicas, d.Spec.Replicas)
		}
		pdbs := len(charts.Find(objs, "PodDisruptionBudget", ""))
		if got := pdbs == 1; got != tc.want || pdbs > 1 {
			t.Errorf("replicas %d: %d PodDisruptionBudgets, want one: %v", tc.replicas, pdbs, tc.want)
		}
	}
}

// TestTrafficDistribution: PreferClose is rendered as PreferSameZone, its
// new name, on Kubernetes 1.35 and newer (where the API server warns that
// PreferClose is deprecated); the other values pass through on every version.
func TestTrafficDistribution(t *testing.T) {
	for _, tc := range []struct {
		value, kubeVersion, want string // want "" for no field
	}{
		{"PreferClose", "", "PreferClose"}, // Helm's default capabilities: v1.20
		{"PreferClose", "v1.34.3", "PreferClose"},
		{"PreferClose", "v1.35.0", "PreferSameZone"},
		{"PreferClose", "v1.35.1-eks-1234", "PreferSameZone"},
		{"PreferClose", "v1.37.2", "PreferSameZone"},
		{"PreferClose", "v2.0.0", "PreferSameZone"},
		{"PreferSameZone", "v1.34.0", "PreferSameZone"},
		{"PreferSameZone", "v1.37.2", "PreferSameZone"},
		{"PreferSameNode", "v1.34.0", "PreferSameNode"},
		{"PreferSameNode", "v1.37.2", "PreferSameNode"},
		{"", "v1.34.0", ""},
		{"", "v1.37.2", ""},
	} {
		t.Run(tc.value+"@"+tc.kubeVersion, func(t *testing.T) {
			var svc corev1.Service
			charts.MustObject(t, charts.Options{KubeVersion: tc.kubeVersion, Values: map[string]any{"webhook": map[string]any{"trafficDistribution": tc.value}}}, "Service", "", &svc)
			if got := ptr.Deref(svc.Spec.TrafficDistribution, ""); got != tc.want || (tc.want == "" && svc.Spec.TrafficDistribution != nil) {
				t.Errorf("trafficDistribution %q (set: %v), want %q", got, svc.Spec.TrafficDistribution != nil, tc.want)
			}
		})
	}
}

// TestNotesZeroReplicas: NOTES.txt warns when no webhook runs and
// failurePolicy Fail refuses the pods it would review.
func TestNotesZeroReplicas(t *testing.T) {
	for _, tc := range []struct {
		replicas      int
		failurePolicy string
		warn          bool
	}{{0, "Fail", true}, {0, "Ignore", false}, {1, "Fail", false}, {2, "Fail", false}} {
		files, err := charts.Render(charts.Options{Values: map[string]any{"webhook": map[string]any{"replicas": tc.replicas, "failurePolicy": tc.failurePolicy}}})
		if err != nil {
			t.Fatal(err)
		}
		notes := files["meshinit/templates/NOTES.txt"]
		if notes == "" {
			t.Fatal("no NOTES.txt")
		}
		if got := strings.Contains(notes, "webhook.replicas is 0 and webhook.failurePolicy is Fail"); got != tc.warn {
			t.Errorf("replicas %d failurePolicy %s: warning %v, want %v:\n%s", tc.replicas, tc.failurePolicy, got, tc.warn, notes)
		}
	}
}

// checkRestricted checks the PodSecurity restricted profile's container
// rules: non-root, no privilege escalation, all capabilities dropped,
// RuntimeDefault seccomp (on the pod or the container).
func checkRestricted(t *testing.T, name string, pod *corev1.PodSecurityContext, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("%s: no securityContext", name)
	}
	nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot)
	seccomp := (sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault) ||
		(pod != nil && pod.SeccompProfile != nil && pod.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
	dropAll := sc.Capabilities != nil && len(sc.Capabilities.Add) == 0 && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL"
	if !nonRoot || !seccomp || !dropAll || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("%s: securityContext %+v (pod %+v) is not PodSecurity restricted", name, sc, pod)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: root filesystem writable", name)
	}
}

// TestHelmTestPod checks the helm test: its pod runs in a namespace of its
// own opted in to injection, restricted apart from what injection adds, the
// proxy as a native sidecar under the proxy UID on the outbound port, and
// follows the redirect settings.
func TestHelmTestPod(t *testing.T) {
	for _, tc := range []struct {
		name            string
		values          map[string]any
		port, uid, gid  int64
		listen, dialArg string
	}{
		{"defaults", nil, 15001, 1337, 1337, ":15001", "192.0.2.1:80"},
		{"redirect settings", map[string]any{
			"inject": map[string]any{"redirect": map[string]any{"outbound-proxy-port": 16001, "proxy-uid": "2000"}},
			"tests":  map[string]any{"dialAddress": "198.51.100.1:443"},
		}, 16001, 2000, 2000, ":16001", "198.51.100.1:443"},
		{"GID 0 set", map[string]any{
			"inject": map[string]any{"redirect": map[string]any{"proxy-uid": "2000", "proxy-gid": 0}},
		}, 15001, 2000, 0, ":15001", "192.0.2.1:80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := charts.MustObjects(t, charts.Options{Values: tc.values}, true)
			var ns corev1.Namespace
			charts.DecodeOne(t, objs, "Namespace", "", &ns)
			if ns.Labels["meshinit.io/injection"] != "enabled" || ns.Annotations["helm.sh/hook"] != "test" {
				t.Errorf("test namespace labels %v annotations %v", ns.Labels, ns.Annotations)
			}
			var pod corev1.Pod
			charts.DecodeOne(t, objs, "Pod", "", &pod)
			if pod.Namespace != ns.Name || pod.Annotations["helm.sh/hook"] != "test" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("pod %s/%s annotations %v restartPolicy %s", pod.Namespace, pod.Name, pod.Annotations, pod.Spec.RestartPolicy)
			}
			if len(pod.Spec.InitContainers) != 1 || len(pod.Spec.Containers) != 1 {
				t.Fatalf("%d init containers, %d containers", len(pod.Spec.InitContainers), len(pod.Spec.Containers))
			}
			proxy, app := pod.Spec.InitContainers[0], pod.Spec.Containers[0]
			if proxy.RestartPolicy == nil || *proxy.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				t.Error("the proxy is not a native sidecar")
			}
			if proxy.SecurityContext == nil || *proxy.SecurityContext.RunAsUser != tc.uid || *proxy.SecurityContext.RunAsGroup != tc.gid {
				t.Errorf("proxy securityContext %+v, want UID %d GID %d", proxy.SecurityContext, tc.uid, tc.gid)
			}
			if proxy.StartupProbe == nil || proxy.StartupProbe.TCPSocket.Port.IntValue() != int(tc.port) || proxy.Args[len(proxy.Args)-1] != tc.listen {
				t.Errorf("proxy args %v probe %+v, want it on %d", proxy.Args, proxy.StartupProbe, tc.port)
			}
			if len(app.Args) != 4 || app.Args[1] != tc.dialArg || app.Args[3] != "proxy orig="+tc.dialArg {
				t.Errorf("app args %v", app.Args)
			}
			if *app.SecurityContext.RunAsUser == tc.uid {
				t.Error("the app runs as the proxy UID: its traffic would not be redirected")
			}
			checkRestricted(t, "proxy", pod.Spec.SecurityContext, proxy)
			checkRestricted(t, "app", pod.Spec.SecurityContext, app)
		})
	}
	objs := charts.MustObjects(t, charts.Options{Values: map[string]any{"tests": map[string]any{"enabled": false}}}, true)
	for _, o := range append(charts.Find(objs, "Pod", ""), charts.Find(objs, "Namespace", "")...) {
		t.Errorf("tests.enabled false still renders %s %s", o.GetKind(), o.GetName())
	}
}
