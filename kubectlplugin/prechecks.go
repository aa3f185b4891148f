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
	"fmt"
	"maps"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/webhook"
)

// policyMinVersion is the oldest Kubernetes that serves
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, which
// injector policy needs.
const policyMinVersion = ">=1.36.0-0"

// preChecks are `check --pre`'s, in order.
func preChecks(p PreInstall) []Finding {
	var out []Finding
	for _, c := range []func(PreInstall) []Finding{preVersion, preAPIs, preRender, preRBAC, preOtherMeshes, prePodSecurity, preRuntimes} {
		out = append(out, c(p)...)
	}
	for _, d := range codes {
		if why, unread := p.Unread[d.Code]; unread {
			out = append(out, info(d.Code, "RBAC", "not all checked: "+why))
		}
	}
	return out
}

// Kinds meshinit's objects need served, by group/version/Kind.
var neededKinds = []string{
	"apiextensions.k8s.io/v1/CustomResourceDefinition",
	"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
	"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding",
	"admissionregistration.k8s.io/v1/MutatingWebhookConfiguration",
}

// Kinds injector policy needs served.
var policyKinds = []string{
	"admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
	"admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding",
}

func preVersion(p PreInstall) []Finding {
	v := p.Server.GitVersion
	obj := "Kubernetes " + v
	if !chartutil.IsCompatibleRange(p.ChartKubeVersion, v) {
		return []Finding{problem(CodeKubernetesVersion, obj, "the chart needs "+p.ChartKubeVersion+" (its kubeVersion): helm install refuses this cluster", "upgrade the cluster to Kubernetes 1.32 or newer")}
	}
	if p.Injector == "policy" && !chartutil.IsCompatibleRange(policyMinVersion, v) {
		return []Finding{problem(CodeKubernetesVersion, obj, "injector policy needs Kubernetes 1.36 or newer (MutatingAdmissionPolicy v1)", "install with --set injector=webhook, or upgrade the cluster")}
	}
	if !chartutil.IsCompatibleRange(policyCompileRaceFixed, v) {
		return []Finding{warning(CodeKubernetesVersion, obj,
			"kube-apiserver 1.32 and 1.33 can crash (fatal error: concurrent map read and map write) when it compiles a ValidatingAdmissionPolicy with variables while it evaluates another (kubernetes/kubernetes#135757): "+
				"meshinit's policies declare hundreds of variables, so installing or upgrading meshinit, or changing any ValidatingAdmissionPolicy, while pods are being created can take an API server down",
			"upgrade the cluster to Kubernetes 1.34 or newer; until then, install and upgrade meshinit and change ValidatingAdmissionPolicies while few pods are created, with API servers that restart by themselves")}
	}
	return []Finding{ok(CodeKubernetesVersion, obj, "within the chart's kubeVersion "+p.ChartKubeVersion)}
}

// policyCompileRaceFixed: the API servers that evaluate admission policies
// without reading what another policy's compilation writes. k8s.io/apiserver
// v0.32 to v0.35 share the variables' type between every policy, unlocked
// (kubernetes/kubernetes#135757; still in v0.33.13, v0.34.13 and v0.35.10,
// the newest we could read), but from v0.34 (cel-go v0.26) a program is
// planned once, when its policy compiles, and policies compile one at a
// time, so only v0.32 and v0.33, which plan again at each evaluation, read
// it while another policy compiles; v0.36 gives each policy its own.
const policyCompileRaceFixed = ">=1.34.0-0"

func preAPIs(p PreInstall) []Finding {
	var out []Finding
	missing := slices.DeleteFunc(slices.Clone(neededKinds), func(k string) bool { return p.Served[k] })
	if len(missing) > 0 {
		out = append(out, problem(CodeAdmissionAPIs, "APIs", "not served: "+strings.Join(missing, ", ")+": meshinit's objects cannot be created",
			"enable them on the API server (kube-apiserver --runtime-config), or use a cluster that serves them (Kubernetes 1.32 or newer)"))
	} else {
		out = append(out, ok(CodeAdmissionAPIs, "APIs", "served: "+strings.Join(neededKinds, ", ")))
	}
	missing = slices.DeleteFunc(slices.Clone(policyKinds), func(k string) bool { return p.Served[k] })
	switch {
	case len(missing) == 0:
		out = append(out, ok(CodeMutatingPolicyAPI, "APIs", "served: "+strings.Join(policyKinds, ", ")+" (injector policy possible)"))
	case p.Injector == "policy":
		out = append(out, problem(CodeMutatingPolicyAPI, "APIs", "not served: "+strings.Join(missing, ", ")+": injector policy cannot be installed",
			"install with --set injector=webhook, or enable admissionregistration.k8s.io/v1 mutatingadmissionpolicies (Kubernetes 1.36 or newer)"))
	default:
		out = append(out, info(CodeMutatingPolicyAPI, "APIs", "not served: "+strings.Join(missing, ", ")+": injector webhook does not need them; injector policy would"))
	}
	return out
}

func preRender(p PreInstall) []Finding {
	if p.RenderErr != nil {
		return []Finding{problem(CodeChartRenders, "chart", "does not render for this cluster: "+p.RenderErr.Error(), "change the values or the cluster as the error says")}
	}
	return []Finding{ok(CodeChartRenders, "chart", fmt.Sprintf("renders for this cluster with injector %s: %s", p.Injector, plural(len(p.Access), "kind", "kinds")))}
}

func preRBAC(p PreInstall) []Finding {
	if p.RenderErr != nil {
		return []Finding{info(CodeInstallRBAC, "RBAC", "not checked: the chart does not render")}
	}
	var allowed []string
	var out []Finding
	for _, a := range p.Access {
		where := ""
		if a.Namespace != "" {
			where = " in namespace " + a.Namespace
		}
		switch {
		case !a.Served:
			out = append(out, problem(CodeInstallRBAC, a.Kind, "the chart creates "+a.Resource+", which this API server does not serve",
				"install what serves it first (cert-manager for Certificate and Issuer), or change the values that render it"))
		case !a.Allowed:
			missing := a.Missing
			if len(missing) == 0 { // a report from before verbs: create
				missing = []string{"create"}
			}
			verbs := strings.Join(missing, ", ")
			detail := "you may not " + verbs + " " + a.Resource + where
			if a.Reason != "" {
				detail += " (" + a.Reason + ")"
			}
			if a.Kind == releaseRecordKind {
				detail += ": Helm keeps each revision of the release in a Secret there"
			}
			out = append(out, problem(CodeInstallRBAC, a.Kind, detail, fmt.Sprintf("install as a user allowed to %s %s%s (kubectl auth can-i %s %s%s)",
				verbs, a.Resource, where, missing[0], a.Resource, nsFlag(a.Namespace))))
		default:
			allowed = append(allowed, a.Kind)
		}
	}
	if len(out) == 0 {
		return []Finding{ok(CodeInstallRBAC, "RBAC", "you may get, create, patch and delete every kind the chart creates (as helm install, upgrade and uninstall do) and keep Helm's release record: "+strings.Join(allowed, ", "))}
	}
	return out
}

func nsFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}

func preOtherMeshes(p PreInstall) []Finding {
	var out []Finding
	byNamespace := map[string][]string{}
	for _, pod := range p.OtherMeshPods {
		byNamespace[pod.Namespace] = append(byNamespace[pod.Namespace], pod.Name+" ("+strings.Join(secondRedirectors(pod.Spec), ", ")+")")
	}
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		pods := byNamespace[ns]
		detail := fmt.Sprintf("%s with another traffic redirector: %s", plural(len(pods), "pod", "pods"), strings.Join(first(pods, 3), ", "))
		if _, optedIn := p.Namespaces[ns]; optedIn {
			out = append(out, problem(CodeOtherMeshPods, "namespace "+ns, detail+"; opted in, each would get two redirectors",
				"take namespace "+ns+" out of the other mesh, or do not opt it in"))
		} else {
			out = append(out, info(CodeOtherMeshPods, "namespace "+ns, detail+"; not opted in: keep it so"))
		}
	}
	if len(byNamespace) == 0 {
		out = append(out, ok(CodeOtherMeshPods, "pods", "no pod runs another mesh's redirector"))
	}
	for _, d := range p.CNI {
		out = append(out, warning(CodeOtherMeshCNI, "DaemonSet "+d.Namespace+"/"+d.Name, "another mesh's CNI plugin: it redirects its mesh's pods, and a pod in both meshes gets two redirects",
			"opt in only namespaces the other mesh does not cover"))
	}
	return out
}

func first(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("%d more", len(s)-n))
}

// prePodSecurity judges each namespace to be opted in by the webhook's own
// Review, under the configuration the chart would install, of a pod
// there: does its PodSecurity level let meshinit-redirect run?
func prePodSecurity(p PreInstall) []Finding {
	if len(p.Namespaces) == 0 {
		return []Finding{info(CodeOptInPodSecurity, "namespaces", "none to check: none is labelled "+webhook.NamespaceLabel+"=enabled yet (name those you will opt in with --opt-in)")}
	}
	if p.Config == nil {
		return []Finding{info(CodeOptInPodSecurity, "namespaces", "not checked: the chart does not render")}
	}
	var out []Finding
	for _, ns := range slices.Sorted(maps.Keys(p.Namespaces)) {
		labels := maps.Clone(p.Namespaces[ns])
		if labels == nil {
			labels = map[string]string{}
		}
		labels[webhook.NamespaceLabel] = "enabled"
		probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		r := webhook.Review(probe, ns, labels, p.Config)
		obj := "namespace " + ns
		switch {
		case r.Stopped == webhook.ReasonPodSecurity:
			msg := strings.TrimPrefix(strings.Join(append(r.Warnings, r.Message), "; "), "meshinit: ")
			out = append(out, problem(CodeOptInPodSecurity, obj, strings.Trim(msg, "; "),
				fmt.Sprintf("kubectl label namespace %s %s=privileged --overwrite   # and keep baseline with the chart's guard (docs/podsecurity.md)", ns, webhook.EnforceLabel)))
		case r.Outcome == webhook.OutcomeInjected:
			out = append(out, ok(CodeOptInPodSecurity, obj, "its PodSecurity labels let meshinit-redirect run"))
		default:
			out = append(out, info(CodeOptInPodSecurity, obj, fmt.Sprintf("meshinit would not inject there (%s)", r.Reason)))
		}
	}
	return out
}

// preRuntimes lists the nodes' container runtimes: containerd and CRI-O
// give a non-root container the capabilities it adds; others are not
// tested.
func preRuntimes(p PreInstall) []Finding {
	var out []Finding
	for _, rt := range slices.Sorted(maps.Keys(p.Runtimes)) {
		obj := "runtime " + rt
		detail := plural(p.Runtimes[rt], "node", "nodes")
		if strings.HasPrefix(rt, "containerd://") || strings.HasPrefix(rt, "cri-o://") {
			out = append(out, ok(CodeContainerRuntime, obj, detail+": grants added capabilities to non-root containers"))
		} else {
			out = append(out, warning(CodeContainerRuntime, obj, detail+": not tested with meshinit; if the redirector logs `not permitted to change iptables`, set the chart value inject.privileged=true",
				"kubectl meshinit pods -A   # after installing: a failing meshinit-redirect shows there"))
		}
	}
	if len(out) == 0 {
		out = append(out, info(CodeContainerRuntime, "nodes", "no node: runtimes not checked"))
	}
	return out
}
