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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Verdict is what the API server said to a dry-run create.
type Verdict string

const (
	// VerdictAdmitted: created, without a policy's warning.
	VerdictAdmitted Verdict = "admitted"
	// VerdictWarned: created, with a ValidatingAdmissionPolicy's warning
	// (a binding with validationActions Warn).
	VerdictWarned Verdict = "warned"
	// VerdictRefused: refused by admission (a ValidatingAdmissionPolicy, a
	// webhook) or validation.
	VerdictRefused Verdict = "refused"
	// VerdictUnchecked: the dry run failed otherwise.
	VerdictUnchecked Verdict = "unchecked"
)

// AuditResult is one pod or workload in `audit`.
type AuditResult struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// Workload is a pod's (see workloadOf).
	Workload string  `json:"workload,omitempty"`
	Verdict  Verdict `json:"verdict"`
	// Code is CodeAuditRefused for a result refused or warned about.
	Code Code `json:"code,omitempty"`
	// Message is the API server's: its refusal, the policy's warnings.
	Message string `json:"message,omitempty"`
	// Fix for a result that is not admitted.
	Fix string `json:"fix,omitempty"`
}

// AuditReport is `audit`.
type AuditReport struct {
	// RedirectPolicies are those the API server holds for the scope
	// ("namespace/name"), as context: what it enforces is its own answer.
	RedirectPolicies []string      `json:"redirectPolicies"`
	Results          []AuditResult `json:"results"`
	Problems         int           `json:"problems"`
}

// verdict reads the API server's answer to a dry-run create: its error and
// warnings. Only a ValidatingAdmissionPolicy's warnings count (others, such
// as PodSecurity's in warn mode, are not about RedirectPolicies).
func verdict(warnings []string, err error) (Verdict, string) {
	var policy []string
	for _, w := range warnings {
		if strings.Contains(w, "ValidatingAdmissionPolicy") {
			policy = append(policy, w)
		}
	}
	var status apierrors.APIStatus
	switch {
	case err == nil && len(policy) == 0:
		return VerdictAdmitted, ""
	case err == nil:
		return VerdictWarned, strings.Join(policy, "; ")
	case errors.As(err, &status) && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)):
		return VerdictRefused, withoutSubject(status.Status().Message)
	}
	return VerdictUnchecked, err.Error()
}

// withoutSubject drops what a refusal starts with, `pods "web-x7k2p" is
// forbidden: `: the dry run's generated name says nothing.
func withoutSubject(msg string) string {
	for _, sep := range []string{" is forbidden: ", " is invalid: "} {
		if _, rest, ok := strings.Cut(msg, sep); ok {
			return rest
		}
	}
	return msg
}

// auditFix is what to do about a result that is not admitted.
func auditFix(r AuditResult) string {
	switch {
	case r.Verdict == VerdictAdmitted:
		return ""
	case r.Verdict == VerdictUnchecked:
		return "kubectl meshinit audit   # again once the API server answers; the message says why it did not"
	case r.Kind == "Pod" && strings.HasPrefix(r.Workload, "pod/"):
		return fmt.Sprintf("correct the pod's manifest as the message says, then: kubectl delete pod %s -n %s && kubectl apply -f <its manifest>   # or change the RedirectPolicy it names", r.Name, r.Namespace)
	case r.Kind == "Pod":
		return fmt.Sprintf("kubectl edit %s -n %s   # make its pod template meet the RedirectPolicy the message names, or change that RedirectPolicy", r.Workload, r.Namespace)
	}
	return fmt.Sprintf("kubectl edit %s/%s -n %s   # make its pod template meet the RedirectPolicy the message names, or change that RedirectPolicy",
		strings.ToLower(r.Kind), r.Name, r.Namespace)
}

// auditReport sorts the results (pods by workload, then workloads),
// gives each its fix and counts the problems.
func auditReport(policies []string, results []AuditResult) AuditReport {
	slices.Sort(policies)
	for i := range results {
		results[i].Fix = auditFix(results[i])
		if v := results[i].Verdict; v == VerdictRefused || v == VerdictWarned {
			results[i].Code = CodeAuditRefused
		}
	}
	slices.SortFunc(results, func(a, b AuditResult) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Workload, b.Workload), cmp.Compare(a.Name, b.Name))
	})
	out := AuditReport{RedirectPolicies: policies, Results: results}
	for _, r := range results {
		if r.Verdict != VerdictAdmitted {
			out.Problems++
		}
	}
	return out
}

// forCreate is the metadata an object is created again with: its labels
// and annotations under a generated name (name-), in its namespace;
// nothing the API server sets (uid, resourceVersion, owners, timestamps).
func forCreate(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{GenerateName: m.Name + "-", Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations}
}

// podForCreate is a running pod as a create would send it again: its spec
// without what the scheduler set (its node) and what a create may not
// carry (ephemeral containers), no status.
func podForCreate(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: forCreate(p.ObjectMeta), Spec: *p.Spec.DeepCopy()}
	out.Spec.NodeName = ""
	out.Spec.EphemeralContainers = nil
	return out
}

// jobForCreate is a Job as a create would send it again: without the
// selector and the template labels the API server generates (unless the
// Job chose its selector itself, spec.manualSelector).
func jobForCreate(j *batchv1.Job) *batchv1.Job {
	out := &batchv1.Job{ObjectMeta: forCreate(j.ObjectMeta), Spec: *j.Spec.DeepCopy()}
	if out.Spec.ManualSelector == nil || !*out.Spec.ManualSelector {
		out.Spec.Selector = nil
		labels := maps.Clone(out.Spec.Template.Labels)
		for _, generated := range []string{batchv1.ControllerUidLabel, "controller-uid", batchv1.JobNameLabel, "job-name"} {
			delete(labels, generated)
		}
		out.Spec.Template.Labels = labels
	}
	return out
}

// The other workloads are created again with their spec as it is.

func deploymentForCreate(d *appsv1.Deployment) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: forCreate(d.ObjectMeta), Spec: *d.Spec.DeepCopy()}
}

func statefulSetForCreate(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: forCreate(s.ObjectMeta), Spec: *s.Spec.DeepCopy()}
}

func daemonSetForCreate(d *appsv1.DaemonSet) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: forCreate(d.ObjectMeta), Spec: *d.Spec.DeepCopy()}
}

func replicaSetForCreate(r *appsv1.ReplicaSet) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: forCreate(r.ObjectMeta), Spec: *r.Spec.DeepCopy()}
}

func cronJobForCreate(c *batchv1.CronJob) *batchv1.CronJob {
	return &batchv1.CronJob{ObjectMeta: forCreate(c.ObjectMeta), Spec: *c.Spec.DeepCopy()}
}
