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
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/webhook"
)

// Workload is what owns a pod and creates it again: a Deployment,
// StatefulSet, DaemonSet, CronJob, a ReplicaSet or Job of no other, any
// other controller, or the Pod itself.
type Workload struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func (w Workload) String() string { return strings.ToLower(w.Kind) + "/" + w.Name }

// owners are the controllers of the ReplicaSets and Jobs that own pods,
// keyed by ownerKey; nil for one without a controller.
type owners map[string]*metav1.OwnerReference

func ownerKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// add records the controller of a ReplicaSet or Job.
func (o owners) add(kind string, meta metav1.ObjectMeta) {
	o[ownerKey(kind, meta.Namespace, meta.Name)] = metav1.GetControllerOfNoCopy(&meta)
}

// workloadOf is the workload pod belongs to: its controller, or that
// controller's own (a ReplicaSet's Deployment, a Job's CronJob).
func workloadOf(pod *corev1.Pod, o owners) Workload {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return Workload{Kind: "Pod", Name: pod.Name}
	}
	if up := o[ownerKey(ref.Kind, pod.Namespace, ref.Name)]; up != nil && (ref.Kind == "ReplicaSet" || ref.Kind == "Job") {
		return Workload{Kind: up.Kind, Name: up.Name}
	}
	return Workload{Kind: ref.Kind, Name: ref.Name}
}

// WorkloadReport is one workload's pods in `pods`, and the command that
// brings them up to date.
type WorkloadReport struct {
	Namespace string `json:"namespace"`
	Workload
	Pods []PodReport `json:"pods"`
	// Fix is what to run when a pod has a problem.
	Fix string `json:"fix,omitempty"`
}

// PodsReport is `pods`: the pods by workload, and how many have a problem.
type PodsReport struct {
	Workloads []WorkloadReport `json:"workloads"`
	Problems  int              `json:"problems"`
}

// groupPods groups pod reports by workload (workloadOf each), sorted by
// namespace and workload, and gives each workload with a problem its fix.
func groupPods(pods []corev1.Pod, reports []PodReport, o owners) PodsReport {
	byWorkload := map[[2]string]*WorkloadReport{}
	var out PodsReport
	for i := range pods {
		w := workloadOf(&pods[i], o)
		key := [2]string{pods[i].Namespace, w.String()}
		if byWorkload[key] == nil {
			byWorkload[key] = &WorkloadReport{Namespace: pods[i].Namespace, Workload: w}
		}
		byWorkload[key].Pods = append(byWorkload[key].Pods, reports[i])
		if reports[i].Problem {
			out.Problems++
		}
	}
	for _, w := range byWorkload {
		slices.SortFunc(w.Pods, func(a, b PodReport) int { return cmp.Compare(a.Name, b.Name) })
		w.Fix = workloadFix(*w)
		out.Workloads = append(out.Workloads, *w)
	}
	slices.SortFunc(out.Workloads, func(a, b WorkloadReport) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// workloadFix is the command that brings a workload's pods up to date, ""
// when none has a problem. Pods get the current init container when they
// are created again: a rollout restart for the workloads that have one,
// deleting the pods where their controller creates them again. A refused
// pod needs its template corrected first (which rolls it out); a
// PodSecurity conflict its namespace relabelled.
func workloadFix(w WorkloadReport) string {
	var problems, failing []string
	why := map[string]bool{}
	second := false
	for _, p := range w.Pods {
		if p.State == StateFailing {
			failing = append(failing, p.Name)
		}
		for _, is := range p.Issues {
			second = second || is.Code == CodeSecondRedirector
		}
		// A problem of its injection (stale, missing, ...), not of how it
		// runs (failing) or of an issue beside a current injection.
		if p.Problem && p.State != StateFailing && p.State != StateCurrent {
			problems = append(problems, p.Name)
			why[p.Why] = true
		}
	}
	var fixes []string
	if len(failing) > 0 {
		fixes = append(fixes, fmt.Sprintf("kubectl logs %s -n %s -c %s --previous   # why it fails (%s%s.md)", failing[0], w.Namespace, webhook.ContainerName, codesURL, CodeRedirectFailing))
	}
	if second {
		fixes = append(fixes, fmt.Sprintf("kubectl edit %s -n %s   # one traffic redirect per pod: take it out of the other mesh, or opt it out of meshinit (label %s=false)", w, w.Namespace, webhook.PodLabel))
	}
	if f := injectionFix(w, problems, why); f != "" {
		fixes = append(fixes, f)
	}
	return strings.Join(fixes, "; then ")
}

// injectionFix is workloadFix for pods that are stale or not injected
// (problems, with why they are not).
func injectionFix(w WorkloadReport, problems []string, why map[string]bool) string {
	if len(problems) == 0 {
		return ""
	}
	restart := ""
	switch w.Kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		if why[WhyRefused] {
			return fmt.Sprintf("kubectl edit %s -n %s   # correct the pod template as the detail says; the change rolls the pods", w, w.Namespace)
		}
		restart = fmt.Sprintf("kubectl rollout restart %s -n %s", w, w.Namespace)
	case "Pod":
		restart = fmt.Sprintf("kubectl delete pod %s -n %s && kubectl apply -f <its manifest>", w.Name, w.Namespace)
		if why[WhyRefused] {
			restart += "   # corrected as the detail says"
		}
	default:
		restart = fmt.Sprintf("kubectl delete pod %s -n %s   # its %s creates them again", strings.Join(problems, " "), w.Namespace, w.Kind)
		if why[WhyRefused] {
			return fmt.Sprintf("kubectl edit %s -n %s   # correct the pod template as the detail says, then: %s", w, w.Namespace, restart)
		}
	}
	if why[WhyPodSecurity] {
		return fmt.Sprintf("kubectl label namespace %s %s=privileged --overwrite && %s", w.Namespace, webhook.EnforceLabel, restart)
	}
	return restart
}
