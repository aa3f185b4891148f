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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
)

// guardLimits are the sizes the guard checks at most (its variables
// maxContainers, maxVolumes, maxAnnotations and maxItems: sysctls, and each
// container's ports, added and dropped capabilities).
type guardLimits struct{ containers, volumes, annotations, items int }

func readGuardLimits(t *testing.T, guard *compiled) guardLimits {
	t.Helper()
	var l guardLimits
	var c, v, a, i int64
	guard.eval(t, request{object: pod("p"), namespace: guarded(api.LevelBaseline)},
		[]string{"variables.maxContainers", "variables.maxVolumes", "variables.maxAnnotations", "variables.maxItems"}, &c, &v, &a, &i)
	l.containers, l.volumes, l.annotations, l.items = int(c), int(v), int(a), int(i)
	return l
}

// long is a value of n characters, different for each i.
func long(i, n int) string { return fmt.Sprintf("%d-%s", i, strings.Repeat("x", n))[:n] }

// largestPod is a pod at every limit of the guard (scale 1), or over them
// (scale > 1), that fails every check it can at once, with long values, so
// that every message is built too: the most work the guard does for a pod.
func largestPod(l guardLimits, scale int) *corev1.Pod {
	p := withMeshinit(pod("large"))
	p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
	p.Spec.SecurityContext = &corev1.PodSecurityContext{
		SELinuxOptions: &corev1.SELinuxOptions{Type: long(0, 200), User: "u", Role: "r"},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
	}
	for i := range l.items * scale {
		p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: long(i, 200), Value: "1"})
	}
	p.Annotations = map[string]string{}
	for i := range l.annotations * scale {
		p.Annotations[fmt.Sprintf("container.apparmor.security.beta.kubernetes.io/c%d", i)] = long(i, 200)
	}
	for i := range l.volumes*scale - len(p.Spec.Volumes) { // with meshinit's own
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", i),
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	}
	var containers []corev1.Container
	for i := range l.containers*scale - 2 { // with meshinit's and the app container
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "app",
			SecurityContext: &corev1.SecurityContext{
				Privileged: ptr.To(true), ProcMount: ptr.To(corev1.UnmaskedProcMount), RunAsUser: ptr.To[int64](0),
				SELinuxOptions:  &corev1.SELinuxOptions{Type: long(i, 200)},
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
				WindowsOptions:  &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)},
				Capabilities:    &corev1.Capabilities{},
			},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: long(i, 200)}}},
			Lifecycle:     &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: long(i, 200)}}},
		}
		for j := range l.items {
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: int32(j + 1), HostPort: int32(j + 1)})
			c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, corev1.Capability(long(j, 48)))
			c.SecurityContext.Capabilities.Drop = append(c.SecurityContext.Capabilities.Drop, corev1.Capability(long(j, 48)))
		}
		containers = append(containers, c)
	}
	p.Spec.InitContainers = append(p.Spec.InitContainers, containers[:len(containers)/2]...)
	p.Spec.Containers = append(p.Spec.Containers, containers[len(containers)/2:]...)
	return p
}

// TestGuardCost: the largest pod the guard checks costs, validation and
// message together, a fraction of the API server's budget for one
// evaluation (celconfig.RuntimeCELCostBudget) at each level, and no
// expression reaches the limit for one (celconfig.PerCallLimit: the
// evaluation would fail); a pod over the limits is refused, saying which,
// at a cost that does not grow with it. So no cost limit ever decides, and
// failurePolicy Fail never refuses a pod for its size alone. The policy is
// compiled as the API server compiles it, with the same limits
// (policy_inprocess_test.go): each variable is a program of its own, held
// to the limit for one, and their costs add up to the evaluation's.
// go test -run TestGuardCost -v prints the figures.
func TestGuardCost(t *testing.T) {
	guard := guardPolicy(t, nil)
	l := readGuardLimits(t, guard)
	for _, level := range levels {
		ns := guarded(level)
		largest := largestPod(l, 1)
		if got := guard.refusal(t, ns, largest); !strings.Contains(got, "violates PodSecurity") {
			t.Fatalf("%s: the largest pod: %.200q", level, got)
		}
		v, m := guard.cost(t, request{object: largest, namespace: ns})
		t.Logf("%s: the largest pod (%d containers, %d volumes, %d annotations, %d ports and capabilities each): validation %d, message %d: %.1f%% of the budget",
			level, len(largest.Spec.InitContainers)+len(largest.Spec.Containers), l.volumes, l.annotations, l.items, v, m, 100*float64(v+m)/celconfig.RuntimeCELCostBudget)
		if v+m > celconfig.RuntimeCELCostBudget/2 {
			t.Errorf("%s: the largest pod costs %d, more than half the budget", level, v+m)
		}
		for _, scale := range []int{2, 4} {
			over := largestPod(l, scale)
			if got := guard.refusal(t, ns, over); !strings.Contains(got, "not checked against PodSecurity") {
				t.Errorf("%s: a pod %d times over the limits: %.200q", level, scale, got)
			}
			ov, om := guard.cost(t, request{object: over, namespace: ns})
			t.Logf("%s: %d times over the limits: validation %d, message %d", level, scale, ov, om)
			if ov+om > (v+m)/10 {
				t.Errorf("%s: a pod %d times over the limits costs %d, more than a tenth of the largest checked (%d)", level, scale, ov+om, v+m)
			}
		}
	}
	// Each limit alone.
	for name, over := range map[string]func(p *corev1.Pod){
		"containers":  func(p *corev1.Pod) { p.Spec.Containers = largestPod(l, 2).Spec.Containers },
		"volumes":     func(p *corev1.Pod) { p.Spec.Volumes = largestPod(l, 2).Spec.Volumes },
		"annotations": func(p *corev1.Pod) { p.Annotations = largestPod(l, 2).Annotations },
		"sysctls":     func(p *corev1.Pod) { p.Spec.SecurityContext = largestPod(l, 2).Spec.SecurityContext },
		"ports":       func(p *corev1.Pod) { p.Spec.Containers[0].Ports = make([]corev1.ContainerPort, l.items+1) },
		"capabilities": func(p *corev1.Pod) {
			sc(&p.Spec.Containers[0]).Capabilities = &corev1.Capabilities{Drop: make([]corev1.Capability, l.items+1)}
		},
	} {
		p := minimalPod(t, api.LevelBaseline)
		over(p)
		if got := guard.refusal(t, guarded(api.LevelBaseline), p); !strings.Contains(got, "not checked against PodSecurity") {
			t.Errorf("over the limit of %s: %.200q", name, got)
		}
	}
}
