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
	"errors"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestVerdict(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	const vapDenied = "ValidatingAdmissionPolicy 'meshinit-redirectpolicy' with binding 'meshinit-redirectpolicy-namespace' denied request: port 8080 is required by RedirectPolicy app/require-8080"
	const vapWarned = "Validation failed for ValidatingAdmissionPolicy 'meshinit-redirectpolicy' with binding 'meshinit-redirectpolicy-namespace': port 8080 is required"
	for _, tc := range []struct {
		name     string
		warnings []string
		err      error
		want     Verdict
		message  string
	}{
		{"admitted", nil, nil, VerdictAdmitted, ""},
		{"admitted with another warning", []string{`would violate PodSecurity "restricted:latest": runAsNonRoot != true`}, nil, VerdictAdmitted, ""},
		{"a policy's warning", []string{"other", vapWarned}, nil, VerdictWarned, vapWarned},
		{"refused by the policy", nil, apierrors.NewForbidden(pods, "web-x", errors.New(vapDenied)), VerdictRefused, vapDenied},
		{"refused by a webhook", nil, apierrors.NewForbidden(pods, "", errors.New(`admission webhook "x" denied the request: no`)), VerdictRefused, `admission webhook "x" denied the request: no`},
		{"invalid", nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-x", field.ErrorList{field.Required(field.NewPath("spec"), "")}), VerdictRefused, "spec: Required value"},
		{"the API server failed", nil, apierrors.NewInternalError(errors.New("etcd")), VerdictUnchecked, "etcd"},
		{"the webhook could not be called", nil, errors.New(`Internal error occurred: failed calling webhook "x": connection refused`), VerdictUnchecked, "failed calling webhook"},
	} {
		got, msg := verdict(tc.warnings, tc.err)
		if got != tc.want || !strings.Contains(msg, tc.message) {
			t.Errorf("%s: verdict %s %q, want %s containing %q", tc.name, got, msg, tc.want, tc.message)
		}
	}
}

func TestRBACDenied(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	rbac := apierrors.NewForbidden(pods, "", errors.New(`User "viewer" cannot create resource "pods" in API group "" in the namespace "app"`))
	policy := apierrors.NewForbidden(pods, "x", errors.New("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"))
	if !rbacDenied(rbac) || rbacDenied(policy) || rbacDenied(nil) {
		t.Errorf("rbacDenied: RBAC %v, policy %v, nil %v; want true, false, false", rbacDenied(rbac), rbacDenied(policy), rbacDenied(nil))
	}
}

// TestPodForCreate: a running pod is created again with its spec, labels
// and annotations under a generated name, without what the API server and
// the scheduler set.
func TestPodForCreate(t *testing.T) {
	running := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-5d9c-x", Namespace: "app", UID: "u", ResourceVersion: "7", Generation: 1,
			CreationTimestamp: metav1.Now(), Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"},
			OwnerReferences: controlledBy("ReplicaSet", "web-5d9c"), ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
		Spec: corev1.PodSpec{
			NodeName:            "node-1",
			Containers:          []corev1.Container{{Name: "app", Image: "app:1"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
			ServiceAccountName:  "web",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	got := podForCreate(running)
	want := metav1.ObjectMeta{GenerateName: "web-5d9c-x-", Namespace: "app", Labels: running.Labels, Annotations: running.Annotations}
	if jsonOf(got.ObjectMeta) != jsonOf(want) {
		t.Errorf("metadata %s\nwant %s", jsonOf(got.ObjectMeta), jsonOf(want))
	}
	if got.Spec.NodeName != "" || got.Spec.EphemeralContainers != nil || got.Spec.ServiceAccountName != "web" || got.Spec.Containers[0].Image != "app:1" {
		t.Errorf("spec %s", jsonOf(got.Spec))
	}
	if jsonOf(got.Status) != jsonOf(corev1.PodStatus{}) || running.Spec.NodeName != "node-1" {
		t.Errorf("status %s kept, or the running pod changed", jsonOf(got.Status))
	}
}

// TestJobForCreate: the selector and template labels the API server
// generates for a Job go, unless the Job chose its selector.
func TestJobForCreate(t *testing.T) {
	generated := map[string]string{batchv1.ControllerUidLabel: "u", "controller-uid": "u", batchv1.JobNameLabel: "once", "job-name": "once", "app": "batch"}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "app", UID: "u"},
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "u"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: generated}},
		},
	}
	got := jobForCreate(job)
	if got.Spec.Selector != nil || jsonOf(got.Spec.Template.Labels) != `{"app":"batch"}` || got.GenerateName != "once-" {
		t.Errorf("job for create: selector %v, template labels %v, generateName %q", got.Spec.Selector, got.Spec.Template.Labels, got.GenerateName)
	}
	if len(job.Spec.Template.Labels) != 5 {
		t.Errorf("the Job read changed: %v", job.Spec.Template.Labels)
	}
	job.Spec.ManualSelector = ptr.To(true)
	if manual := jobForCreate(job); manual.Spec.Selector == nil || len(manual.Spec.Template.Labels) != 5 {
		t.Errorf("manualSelector: selector %v, template labels %v; want both kept", manual.Spec.Selector, manual.Spec.Template.Labels)
	}
}

func TestAuditReport(t *testing.T) {
	rep := auditReport([]string{"b/p", "a/p"}, []AuditResult{
		{Namespace: "app", Kind: "Pod", Name: "web-x", Workload: "deployment/web", Verdict: VerdictRefused},
		{Namespace: "app", Kind: "Deployment", Name: "web", Verdict: VerdictRefused},
		{Namespace: "app", Kind: "Pod", Name: "solo", Workload: "pod/solo", Verdict: VerdictWarned},
		{Namespace: "app", Kind: "Pod", Name: "ok", Workload: "pod/ok", Verdict: VerdictAdmitted},
	})
	if rep.Problems != 3 || rep.RedirectPolicies[0] != "a/p" {
		t.Fatalf("report %+v, want 3 problems, policies sorted", rep)
	}
	wantFix := map[string]string{
		"web":   "kubectl edit deployment/web -n app   # make its pod template meet the RedirectPolicy the message names, or change that RedirectPolicy",
		"web-x": "kubectl edit deployment/web -n app   # make its pod template meet the RedirectPolicy the message names, or change that RedirectPolicy",
		"solo":  "correct the pod's manifest as the message says, then: kubectl delete pod solo -n app && kubectl apply -f <its manifest>   # or change the RedirectPolicy it names",
		"ok":    "",
	}
	order := []string{}
	for _, r := range rep.Results {
		order = append(order, r.Name)
		if r.Fix != wantFix[r.Name] {
			t.Errorf("%s: fix %q\nwant %q", r.Name, r.Fix, wantFix[r.Name])
		}
	}
	if jsonOf(order) != `["web","web-x","ok","solo"]` {
		t.Errorf("order %v, want by kind, then pods by workload and name", order)
	}
}
