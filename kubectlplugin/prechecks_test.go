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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// TestPreChecks: check --pre's pure checks, each problem with its code,
// from a cluster that passes every one.
func TestPreChecks(t *testing.T) {
	cfg, _ := chartConfig(t, charts.MustObjects(t, charts.Options{Namespace: testNamespace}, false))
	good := func() PreInstall {
		p := PreInstall{Injector: "webhook", Namespace: testNamespace, Server: &version.Info{GitVersion: "v1.37.2"}, ChartKubeVersion: ">=1.32.0-0",
			Served: map[string]bool{}, Config: cfg, Runtimes: map[string]int{"containerd://2.1.0": 3},
			Access:     []Access{{Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions.apiextensions.k8s.io", Served: true, Allowed: true}},
			Namespaces: map[string]map[string]string{"app": {webhook.NamespaceLabel: "enabled"}}}
		for _, k := range slices.Concat(neededKinds, policyKinds) {
			p.Served[k] = true
		}
		return p
	}
	withIstio := func(ns string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "istio-init"}}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*PreInstall)
		code   Code
		status Status
		detail string
	}{
		{"healthy", func(*PreInstall) {}, "", "", ""},
		{"Kubernetes 1.31", func(p *PreInstall) { p.Server.GitVersion = "v1.31.4" }, CodeKubernetesVersion, StatusProblem, "the chart needs >=1.32.0-0"},
		{"policy on 1.35", func(p *PreInstall) { p.Injector, p.Server.GitVersion = "policy", "v1.35.1" }, CodeKubernetesVersion, StatusProblem, "injector policy needs Kubernetes 1.36"},
		{"Kubernetes 1.33", func(p *PreInstall) { p.Server.GitVersion = "v1.33.13" }, CodeKubernetesVersion, StatusWarning, "kubernetes/kubernetes#135757"},
		{"Kubernetes 1.32", func(p *PreInstall) { p.Server.GitVersion = "v1.32.13" }, CodeKubernetesVersion, StatusWarning, "can crash"},
		{"Kubernetes 1.34", func(p *PreInstall) { p.Server.GitVersion = "v1.34.4" }, "", "", ""},
		{"no ValidatingAdmissionPolicy", func(p *PreInstall) { delete(p.Served, "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy") },
			CodeAdmissionAPIs, StatusProblem, "not served: admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"},
		{"policy without MutatingAdmissionPolicy", func(p *PreInstall) {
			p.Injector = "policy"
			delete(p.Served, "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy")
		}, CodeMutatingPolicyAPI, StatusProblem, "injector policy cannot be installed"},
		{"the chart does not render", func(p *PreInstall) { p.RenderErr = errors.New("injector=policy needs") }, CodeChartRenders, StatusProblem, "injector=policy needs"},
		{"no RBAC", func(p *PreInstall) { p.Access[0].Allowed = false }, CodeInstallRBAC, StatusProblem, "you may not create customresourcedefinitions.apiextensions.k8s.io"},
		{"upgrade and uninstall not allowed", func(p *PreInstall) {
			p.Access[0].Allowed, p.Access[0].Missing = false, []string{"patch", "delete"}
		}, CodeInstallRBAC, StatusProblem, "you may not patch, delete customresourcedefinitions.apiextensions.k8s.io"},
		{"no release record", func(p *PreInstall) {
			p.Access = append(p.Access, Access{Kind: releaseRecordKind, Resource: "secrets", Namespace: testNamespace, Verbs: releaseVerbs, Missing: []string{"list", "update"}, Served: true})
		}, CodeInstallRBAC, StatusProblem, "you may not list, update secrets in namespace " + testNamespace + ": Helm keeps each revision of the release in a Secret there"},
		{"istio-init in an opted-in namespace", func(p *PreInstall) { p.OtherMeshPods = []corev1.Pod{withIstio("app")} }, CodeOtherMeshPods, StatusProblem, "each would get two redirectors"},
		{"Istio's CNI", func(p *PreInstall) {
			p.CNI = []appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Name: "istio-cni-node", Namespace: "istio-system"}}}
		}, CodeOtherMeshCNI, StatusWarning, "another mesh's CNI plugin"},
		{"baseline in an opted-in namespace", func(p *PreInstall) { p.Namespaces["app"][webhook.EnforceLabel] = "baseline" }, CodeOptInPodSecurity, StatusProblem, "baseline"},
		{"another runtime", func(p *PreInstall) { p.Runtimes = map[string]int{"docker://27.0.1": 1} }, CodeContainerRuntime, StatusWarning, "not tested"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good()
			tc.change(&p)
			var notOK []Finding
			for _, f := range preChecks(p) {
				if d, documented := docOf(f.Code); !documented || d.Area != AreaPreInstall {
					t.Errorf("finding %+v: not a documented pre-install code", f)
				}
				if f.Status == StatusProblem || f.Status == StatusWarning {
					notOK = append(notOK, f)
				}
			}
			if tc.code == "" {
				if len(notOK) > 0 {
					t.Errorf("want no problem or warning: %+v", notOK)
				}
				return
			}
			if !slices.ContainsFunc(notOK, func(f Finding) bool {
				return f.Code == tc.code && f.Status == tc.status && strings.Contains(f.Detail, tc.detail) && f.Fix != ""
			}) {
				t.Errorf("want a %s %s with a fix, saying %q: %+v", tc.status, tc.code, tc.detail, notOK)
			}
		})
	}
}
