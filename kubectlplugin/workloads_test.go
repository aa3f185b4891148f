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

package kubectlplugin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func controlledBy(kind, name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}
}

func ownedPod(refs []metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "app", OwnerReferences: refs}}
}

func TestWorkloadOf(t *testing.T) {
	o := owners{}
	o.add("ReplicaSet", metav1.ObjectMeta{Name: "web-5d9c", Namespace: "app", OwnerReferences: controlledBy("Deployment", "web")})
	o.add("ReplicaSet", metav1.ObjectMeta{Name: "alone", Namespace: "app"})
	o.add("Job", metav1.ObjectMeta{Name: "nightly-123", Namespace: "app", OwnerReferences: controlledBy("CronJob", "nightly")})
	o.add("ReplicaSet", metav1.ObjectMeta{Name: "web-5d9c", Namespace: "other", OwnerReferences: controlledBy("Deployment", "elsewhere")})
	for _, tc := range []struct {
		refs []metav1.OwnerReference
		want Workload
	}{
		{nil, Workload{"Pod", "p"}},
		{[]metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-5d9c"}}, Workload{"Pod", "p"}}, // an owner, not a controller
		{controlledBy("ReplicaSet", "web-5d9c"), Workload{"Deployment", "web"}},
		{controlledBy("ReplicaSet", "alone"), Workload{"ReplicaSet", "alone"}},
		{controlledBy("ReplicaSet", "unknown"), Workload{"ReplicaSet", "unknown"}},
		{controlledBy("Job", "nightly-123"), Workload{"CronJob", "nightly"}},
		{controlledBy("StatefulSet", "db"), Workload{"StatefulSet", "db"}},
		{controlledBy("DaemonSet", "agent"), Workload{"DaemonSet", "agent"}},
		{controlledBy("Rollout", "canary"), Workload{"Rollout", "canary"}},
	} {
		if got := workloadOf(ownedPod(tc.refs), o); got != tc.want {
			t.Errorf("owners %+v: workload %v, want %v", tc.refs, got, tc.want)
		}
	}
}

func TestWorkloadFix(t *testing.T) {
	pod := func(name, why string, problem bool) PodReport {
		return PodReport{Name: name, Why: why, Problem: problem}
	}
	stale := pod("a", "", true)
	for _, tc := range []struct {
		name string
		w    Workload
		pods []PodReport
		want string
	}{
		{"nothing to fix", Workload{"Deployment", "web"}, []PodReport{pod("a", "", false)}, ""},
		{"a stale Deployment", Workload{"Deployment", "web"}, []PodReport{stale, pod("b", "", false)},
			"kubectl rollout restart deployment/web -n app"},
		{"a StatefulSet with a pod missing its container", Workload{"StatefulSet", "db"}, []PodReport{pod("db-0", WhyMissing, true)},
			"kubectl rollout restart statefulset/db -n app"},
		{"a bare pod", Workload{"Pod", "a"}, []PodReport{stale},
			"kubectl delete pod a -n app && kubectl apply -f <its manifest>"},
		{"a ReplicaSet's pods", Workload{"ReplicaSet", "rs"}, []PodReport{stale, pod("b", WhyMissing, true), pod("c", "", false)},
			"kubectl delete pod a b -n app   # its ReplicaSet creates them again"},
		{"PodSecurity", Workload{"DaemonSet", "agent"}, []PodReport{pod("a", WhyPodSecurity, true)},
			"kubectl label namespace app pod-security.kubernetes.io/enforce=privileged --overwrite && kubectl rollout restart daemonset/agent -n app"},
		{"a refused template", Workload{"Deployment", "web"}, []PodReport{stale, pod("b", WhyRefused, true)},
			"kubectl edit deployment/web -n app   # correct the pod template as the detail says; the change rolls the pods"},
		{"a refused Job pod", Workload{"Job", "once"}, []PodReport{pod("once-x", WhyRefused, true)},
			"kubectl edit job/once -n app   # correct the pod template as the detail says, then: kubectl delete pod once-x -n app   # its Job creates them again"},
	} {
		if got := workloadFix(WorkloadReport{Namespace: "app", Workload: tc.w, Pods: tc.pods}); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestGroupPods: pods grouped by workload, sorted, each workload with a
// problem given its fix, the problems counted by pod.
func TestGroupPods(t *testing.T) {
	o := owners{}
	o.add("ReplicaSet", metav1.ObjectMeta{Name: "web-1", Namespace: "b", OwnerReferences: controlledBy("Deployment", "web")})
	pods := []corev1.Pod{*ownedPod(controlledBy("ReplicaSet", "web-1")), *ownedPod(controlledBy("ReplicaSet", "web-1")), *ownedPod(nil)}
	pods[0].Namespace, pods[0].Name = "b", "web-1-y"
	pods[1].Namespace, pods[1].Name = "b", "web-1-x"
	pods[2].Namespace, pods[2].Name = "a", "solo"
	reports := []PodReport{{Name: "web-1-y", Problem: true}, {Name: "web-1-x"}, {Name: "solo"}}
	got := groupPods(pods, reports, o)
	if got.Problems != 1 || len(got.Workloads) != 2 {
		t.Fatalf("groupPods = %+v, want 2 workloads, 1 problem", got)
	}
	if w := got.Workloads[0]; w.Namespace != "a" || w.Workload != (Workload{"Pod", "solo"}) || w.Fix != "" {
		t.Errorf("first workload %+v, want pod/solo in a, nothing to fix", w)
	}
	w := got.Workloads[1]
	if w.Workload != (Workload{"Deployment", "web"}) || w.Pods[0].Name != "web-1-x" || w.Pods[1].Name != "web-1-y" ||
		w.Fix != "kubectl rollout restart deployment/web -n b" {
		t.Errorf("second workload %+v, want deployment/web's two pods by name, with its rollout restart", w)
	}
}
