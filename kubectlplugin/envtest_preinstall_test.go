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
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/internal/testkit"
	"github.com/meshinit/meshinit/webhook"
)

// TestPreInstallAgainstAPIServer runs check --pre against real API
// servers where meshinit is not installed: one serving every API it needs,
// where it passes for both injectors, finds a namespace to be opted in
// whose PodSecurity forbids the redirect, another mesh's pods there, and a
// user without the RBAC to install; and one started without
// MutatingAdmissionPolicy, where injector policy fails with MI1203 and
// injector webhook passes.
func TestPreInstallAgainstAPIServer(t *testing.T) {
	t.Run("every API served", func(t *testing.T) {
		e := newAPIServerEnv(t)
		e.mustPlugin(t, 0, []string{"MI1201", "within the chart's kubeVersion", "MI1204", "you may get, create, patch and delete every kind the chart creates", "Secret (Helm release record)",
			"MutatingWebhookConfiguration", "no problems: helm install can go ahead"}, "check", "--pre")
		e.mustPlugin(t, 0, []string{"MI1203", "injector policy possible", "no problems"}, "check", "--pre", "--injector", "policy")

		// A namespace to be opted in that enforces baseline, with a pod
		// that has istio-init.
		e.createNamespace(t, "strict", map[string]string{webhook.EnforceLabel: "baseline"})
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "meshed", Namespace: "strict"}, Spec: podSpec()}
		pod.Spec.InitContainers = []corev1.Container{{Name: "istio-init", Image: "docker.io/istio/proxyv2:1.24.0"}}
		e.createPod(t, pod, false)
		out := e.mustPlugin(t, 1, nil, "check", "--pre", "--opt-in", "strict", "-o", "json")
		var rep CheckReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		for _, c := range []Code{CodeOptInPodSecurity, CodeOtherMeshPods} {
			if !slices.ContainsFunc(rep.Findings, func(f Finding) bool {
				return f.Code == c && f.Status == StatusProblem && f.Object == "namespace strict"
			}) {
				t.Errorf("check --pre --opt-in strict: no problem %s about namespace strict", c)
			}
		}
		// Not opted in, the other mesh's pod is information only.
		e.mustPlugin(t, 0, []string{"MI1205", "not opted in: keep it so"}, "check", "--pre")

		out, _, code := e.plugin(t, e.server.UserKubeconfig(t, "viewer"), "check", "--pre", "-o", "json")
		if code != 1 {
			t.Errorf("check --pre as a user without RBAC: exit %d, want 1", code)
		}
		rep = CheckReport{}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Findings, func(f Finding) bool {
			return f.Code == CodeInstallRBAC && f.Status == StatusProblem && f.Object == "CustomResourceDefinition"
		}) {
			t.Errorf("check --pre as a user without RBAC: no MI1204 problem about CustomResourceDefinition:\n%s", out)
		}

		// A user who may create (and get and list) everything, but not
		// patch or delete: helm install would work, helm upgrade and
		// uninstall would not, nor would Helm update its release record.
		ctx := context.Background()
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "creator"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "create"}}}}
		if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "creator"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "creator"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "creator"}}}
		if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		creator := e.server.UserKubeconfig(t, "creator")
		testkit.Eventually(t, 30*time.Second, "check --pre as a user who may only create", func() error {
			out, _, code := e.plugin(t, creator, "check", "--pre", "-o", "json")
			if code != 1 {
				return fmt.Errorf("exit %d, want 1", code)
			}
			rep := CheckReport{}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				return err
			}
			want := map[string]string{
				"CustomResourceDefinition":     "you may not patch, delete customresourcedefinitions.apiextensions.k8s.io",
				"MutatingWebhookConfiguration": "you may not patch, delete mutatingwebhookconfigurations.admissionregistration.k8s.io",
				"Deployment":                   "you may not patch, delete deployments.apps in namespace meshinit-system",
				releaseRecordKind:              "you may not update, delete secrets in namespace meshinit-system",
			}
			for _, f := range rep.Findings {
				if f.Code == CodeInstallRBAC && f.Status == StatusProblem && strings.HasPrefix(f.Detail, want[f.Object]) && want[f.Object] != "" {
					delete(want, f.Object)
				}
			}
			if len(want) > 0 {
				return fmt.Errorf("no MI1204 problem for %v:\n%s", want, out)
			}
			return nil
		})
	})

	t.Run("MutatingAdmissionPolicy not served", func(t *testing.T) {
		// Without the API, its admission plugin, on by default, would wait
		// for it forever and keep the API server from getting ready.
		server := testkit.StartAPIServer(t, testkit.Options{Flags: []string{
			"runtime-config=admissionregistration.k8s.io/v1/mutatingadmissionpolicies=false,admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=false",
			"disable-admission-plugins=MutatingAdmissionPolicy"}})
		e := &apiServerEnv{server: server}
		e.mustPlugin(t, 1, []string{"PROBLEM", "MI1203", "not served: admissionregistration.k8s.io/v1/MutatingAdmissionPolicy", "MI1209", "injector=policy needs an API server that serves"},
			"check", "--pre", "--injector", "policy")
		e.mustPlugin(t, 0, []string{"MI1203", "injector webhook does not need them", "no problems"}, "check", "--pre")
	})
}
