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

import "slices"

// Code names what a Finding is about, stably: a runbook, an alert or a
// script can link to it (docs/codes/<code>.md, generated from codes by
// hack/docs). A code is never reused for something else; one that is no
// longer checked stays documented as retired.
type Code string

// Area is a group of codes: MI10xx the control plane, MI11xx the data
// plane, MI12xx the checks before installing, MI13xx versions.
type Area string

const (
	AreaControlPlane Area = "control plane"
	AreaDataPlane    Area = "data plane"
	AreaPreInstall   Area = "pre-install"
	AreaVersion      Area = "version"
)

// The codes. Each is documented in codes, below.
const (
	CodeRedirectPolicyAPI  Code = "MI1001"
	CodeEnforcingPolicy    Code = "MI1002"
	CodeCABundleGuard      Code = "MI1003"
	CodeTypeChecked        Code = "MI1004"
	CodePolicyBound        Code = "MI1005"
	CodeBindingOrphaned    Code = "MI1006"
	CodeInjector           Code = "MI1007"
	CodeMutatingPolicy     Code = "MI1008"
	CodeWebhookConfig      Code = "MI1009"
	CodeWebhookDeployment  Code = "MI1010"
	CodeWebhookEndpoints   Code = "MI1011"
	CodeCertificateTrusted Code = "MI1012"
	CodeCertificateRead    Code = "MI1013"
	CodeCertificateExpiry  Code = "MI1014"
	CodeCAExpiry           Code = "MI1015"
	CodeRedirectorTrust    Code = "MI1016"

	CodePodCurrent       Code = "MI1101"
	CodePodStale         Code = "MI1102"
	CodePodMissing       Code = "MI1103"
	CodePodPodSecurity   Code = "MI1104"
	CodePodRefused       Code = "MI1105"
	CodePodLeftAlone     Code = "MI1106"
	CodeRedirectFailing  Code = "MI1107"
	CodeRedirectRestarts Code = "MI1108"
	CodeSecondRedirector Code = "MI1109"
	CodeRedirectPending  Code = "MI1110"
	CodeAuditRefused     Code = "MI1111"

	CodeKubernetesVersion Code = "MI1201"
	CodeAdmissionAPIs     Code = "MI1202"
	CodeMutatingPolicyAPI Code = "MI1203"
	CodeInstallRBAC       Code = "MI1204"
	CodeOtherMeshPods     Code = "MI1205"
	CodeOtherMeshCNI      Code = "MI1206"
	CodeOptInPodSecurity  Code = "MI1207"
	CodeContainerRuntime  Code = "MI1208"
	CodeChartRenders      Code = "MI1209"

	CodeVersionSkew  Code = "MI1301"
	CodeWebhookSkew  Code = "MI1302"
	CodeChartUnknown Code = "MI1303"
)

// CodeDoc documents a code: what is checked, what a problem (or warning)
// means in one line, and how to fix it. docs/codes/<Code>.md is generated
// from it.
type CodeDoc struct {
	Code  Code   `json:"code"`
	Area  Area   `json:"area"`
	Title string `json:"title"`
	// Checks says what the plugin looks at, and where.
	Checks string `json:"checks"`
	// Reason is the one-line reason a finding with this code is not ok.
	Reason string `json:"reason"`
	// Fix says what to do about it (the finding itself carries the command
	// for the object it names).
	Fix string `json:"fix"`
	// Commands are the plugin commands that report it.
	Commands []string `json:"commands"`
}

var codes = []CodeDoc{
	{CodeRedirectPolicyAPI, AreaControlPlane, "The RedirectPolicy API is served", "The API server's discovery for meshinit.io/v1alpha1 lists redirectpolicies (the CRD charts/meshinit/crds/meshinit.io_redirectpolicies.yaml).",
		"RedirectPolicies cannot be created, and the ValidatingAdmissionPolicy cannot read them: with policy.failurePolicy Fail it refuses every pod it matches.",
		"Apply the CRD again: Helm installs CRDs but never upgrades or re-creates them.", []string{"check"}},
	{CodeEnforcingPolicy, AreaControlPlane, "A ValidatingAdmissionPolicy enforces RedirectPolicies", "Among the release's ValidatingAdmissionPolicies, one whose paramKind is meshinit.io/v1alpha1 RedirectPolicy.",
		"RedirectPolicies are not enforced: a pod author can take traffic around the proxy.",
		"helm upgrade the release with policy.enabled=true.", []string{"check"}},
	{CodeCABundleGuard, AreaControlPlane, "The caBundle guard is present", "In webhook mode, a ValidatingAdmissionPolicy of the release matching mutatingwebhookconfigurations (webhook-cabundle-policy.yaml).",
		"Nothing keeps the webhook's ServiceAccount to the caBundle of its MutatingWebhookConfiguration: a stolen webhook token could rewrite where reviews go.",
		"helm upgrade the release: it creates the policy again.", []string{"check"}},
	{CodeTypeChecked, AreaControlPlane, "A ValidatingAdmissionPolicy is type-checked without warnings", "status.typeChecking of each of the release's ValidatingAdmissionPolicies, which kube-controller-manager fills in for the current generation.",
		"The policy was not type-checked yet, or its CEL does not type-check against this API server's types (a chart made for another Kubernetes version).",
		"Wait a minute and check again; if it stays, look at kube-controller-manager. With warnings, install a chart made for this Kubernetes version.", []string{"check"}},
	{CodePolicyBound, AreaControlPlane, "A ValidatingAdmissionPolicy is bound in every scope it needs", "The release's ValidatingAdmissionPolicyBindings: each policy has one; the RedirectPolicy one reads meshinit's namespace's RedirectPolicies and each namespace's own, for namespaces that opt in and for labelled pods.",
		"A policy without a binding is not enforced; a missing scope leaves some RedirectPolicies unenforced.",
		"helm upgrade the release: it creates the bindings again.", []string{"check"}},
	{CodeBindingOrphaned, AreaControlPlane, "A binding names an existing policy", "Each of the release's ValidatingAdmissionPolicyBindings names a ValidatingAdmissionPolicy that exists.",
		"The binding binds nothing: what it should enforce is not enforced.",
		"helm upgrade the release: it creates the policy again.", []string{"check"}},
	{CodeInjector, AreaControlPlane, "There is an injector", "The release's MutatingWebhookConfiguration (webhook mode) or MutatingAdmissionPolicy (policy mode).",
		"Neither exists: no pod gets meshinit-redirect.",
		"helm upgrade the release.", []string{"check"}},
	{CodeMutatingPolicy, AreaControlPlane, "The MutatingAdmissionPolicy is bound and injects the installed configuration", "In policy mode, a MutatingAdmissionPolicyBinding binds it, and its status annotation names the hash of the configuration in the webhook's ConfigMap.",
		"Unbound, it injects nothing; with another configuration, `pods` and `explain` judge pods by settings it does not inject.",
		"helm upgrade the release.", []string{"check"}},
	{CodeWebhookConfig, AreaControlPlane, "The webhook's configuration parses", "config.yaml of the release's ConfigMap, read with the webhook's own parser (webhook.ParseConfig).",
		"The webhook cannot start with it; `pods` and `explain` cannot say what meshinit injects.",
		"helm upgrade the release.", []string{"check", "pods", "explain"}},
	{CodeWebhookDeployment, AreaControlPlane, "The webhook Deployment is available", "In webhook mode, the release's webhook Deployment: its arguments parse, it has replicas, and it is Available with ready replicas.",
		"Reviews fail: pods in opted-in namespaces are refused (failurePolicy Fail) or start without meshinit-redirect (Ignore).",
		"kubectl describe the Deployment and read its logs; scale it up with helm upgrade --set webhook.replicas=2.", []string{"check"}},
	{CodeWebhookEndpoints, AreaControlPlane, "The webhook Service has ready endpoints", "The Service the MutatingWebhookConfiguration sends reviews to exists and its EndpointSlices hold ready addresses.",
		"The API server cannot reach the webhook.",
		"Look at the webhook pods, their events and logs.", []string{"check"}},
	{CodeCertificateTrusted, AreaControlPlane, "The caBundle trusts the served certificate", "Every webhook's caBundle parses and verifies the certificate each replica serves (read as the API server reads it, or from its Secret) for `<service>.<namespace>.svc`.",
		"The API server refuses the webhook's TLS: every review fails.",
		"Put the CA of the served certificate into the caBundle as the certificate mode does (the finding names the command).", []string{"check"}},
	{CodeCertificateRead, AreaControlPlane, "The serving certificate can be read", "The certificate the webhook's endpoints serve, or, where pod addresses are unreachable, its Secret.",
		"It cannot be checked from here.",
		"Run check where the webhook pods' addresses are reachable, or as a user who may get the Secret.", []string{"check"}},
	{CodeCertificateExpiry, AreaControlPlane, "The serving certificate is valid for 7 days more", "NotBefore and NotAfter of each certificate the webhook serves.",
		"Expired or expiring within 7 days: it was not renewed (renewal happens with a third of its lifetime left).",
		"Issue a new serving certificate as the certificate mode does (the finding names the command).", []string{"check"}},
	{CodeCAExpiry, AreaControlPlane, "The CA is valid for 7 days more", "NotBefore and NotAfter of the caBundle CA that signed the serving certificate.",
		"Expired or expiring within 7 days: it was not renewed.",
		"Issue a new CA as the certificate mode does (the finding names the command).", []string{"check"}},
	{CodeRedirectorTrust, AreaControlPlane, "The policies trust the redirector image meshinit injects", "The API server serves RedirectorTrusts (meshinit.io/v1alpha1, the CRD charts/meshinit/crds/meshinit.io_redirectortrusts.yaml), the paramKind of the redirector trust policy (`<fullname>-redirector-trust`, trust-redirector.yaml). The RedirectorTrust its bindings name as their parameters (`<fullname>-redirector-trust` in the release namespace): it exists; `spec.current` (rendered by Helm) names an image; the image the injector gives meshinit-redirect (the webhook's configuration) is `spec.current` or `spec.previous` (written by the chart's pre-upgrade and pre-rollback hook). Reading it needs get on redirectortrusts.meshinit.io, that name, in the release namespace.",
		"Without the RedirectorTrust the API server refuses every create and update of a pod or workload those bindings select, with or without meshinit's init container (parameterNotFoundAction Deny: it looks the parameters up before the match conditions). Without the injector's image in it, the pods the injector gives meshinit-redirect are refused (\"init container meshinit-redirect is not meshinit's\"). Without the CRD, an API server that resolved the policy's paramKind before finds no RedirectorTrust either; one that starts without the CRD cannot resolve it and, with the policy's failurePolicy Fail, refuses every create and update of a pod or workload the policy matches, in every namespace.",
		"helm upgrade the release: it renders the RedirectorTrust again, with this release's image as `spec.current`. Without the CRD, first apply the chart's CRDs again (`kubectl apply --server-side -f charts/meshinit/crds/`): Helm installs CRDs but never upgrades or re-creates them.", []string{"check"}},

	{CodePodCurrent, AreaDataPlane, "The pod is current", "The webhook's own Review of the running pod under the installed configuration answers unchanged: it carries exactly the meshinit-redirect and status annotation the injector gives it now.",
		"Nothing: this code is the ok state.", "Nothing to do.", []string{"pods", "check", "explain"}},
	{CodePodStale, AreaDataPlane, "The pod's injection is stale", "Review of the running pod under the installed configuration would change it: its meshinit-redirect (image, arguments, other fields, position) or the configuration hash in its meshinit.io/status annotation differ from what the injector builds now.",
		"The pod runs with the settings of an older configuration (e.g. before a helm upgrade changed the chart's inject values).",
		"Create its pods again: kubectl rollout restart for a workload, delete and re-create a bare pod.", []string{"pods", "check", "explain"}},
	{CodePodMissing, AreaDataPlane, "An opted-in pod runs without injection", "A running pod of a namespace labelled meshinit.io/injection=enabled (or labelled meshinit.io/inject=true) that Review would inject, without meshinit-redirect.",
		"Its traffic does not go through the proxy: it was created before it opted in, or while the injector was down or failed (failurePolicy Ignore).",
		"Create its pods again (the finding names the command).", []string{"pods", "check", "explain"}},
	{CodePodPodSecurity, AreaDataPlane, "PodSecurity keeps an opted-in pod uninjected", "Review warns that the namespace's PodSecurity level (baseline, restricted) forbids the init container's NET_ADMIN and NET_RAW.",
		"The pod runs without a redirect.",
		"Label the namespace pod-security.kubernetes.io/enforce=privileged and let the chart's guard keep baseline (docs/podsecurity.md), then create the pods again.", []string{"pods", "check", "explain"}},
	{CodePodRefused, AreaDataPlane, "The injector would refuse the pod now", "Review denies the running pod: an invalid traffic.meshinit.io annotation or label.",
		"When its pods are created again, they are refused.",
		"Correct the pod template as the finding says.", []string{"pods", "check", "explain"}},
	{CodePodLeftAlone, AreaDataPlane, "The pod is left alone as it asked", "Review skips the pod: it opted out (meshinit.io/inject=false), uses the host network, or is in a namespace meshinit never injects.",
		"Nothing: information.", "Nothing to do.", []string{"pods", "check", "explain"}},
	{CodeRedirectFailing, AreaDataPlane, "meshinit-redirect fails", "The pod's status for its meshinit-redirect init container: waiting in CrashLoopBackOff (or another error: image pull, config), or terminated with a non-zero exit code; its termination message says why.",
		"The redirect is not in place, so the pod does not start (Init:CrashLoopBackOff, Init:Error).",
		"Read `kubectl logs <pod> -c meshinit-redirect --previous` and the termination message (`kubectl meshinit explain <pod>` shows it); docs/operations.md has the causes by symptom.", []string{"pods", "check", "explain"}},
	{CodeRedirectRestarts, AreaDataPlane, "meshinit-redirect restarted before it succeeded", "The restart count of the pod's meshinit-redirect, which terminated with exit 0 in the end.",
		"It failed at least once before it succeeded: something on the node (iptables lock, kernel modules) was not ready.",
		"Nothing if it stays rare; read the node's iptables state and the kubelet's events otherwise.", []string{"pods", "explain"}},
	{CodeSecondRedirector, AreaDataPlane, "A second traffic redirector in the pod", "The pod's other init containers: another mesh's (istio-init, linkerd-init, kuma-init, consul-connect-inject-init), or any other with NET_ADMIN or privileged; and a termination message saying rules of another owner were in the way.",
		"Two redirectors rewrite each other's NAT rules: traffic may reach the wrong proxy, or none.",
		"Run one traffic redirect per pod: take the pod out of the other mesh's injection, or opt it out of meshinit (meshinit.io/inject=false).", []string{"pods", "check", "explain"}},
	{CodeRedirectPending, AreaDataPlane, "meshinit-redirect has not finished yet", "The pod's status for its meshinit-redirect: not started (PodInitializing) or running.",
		"Information: the pod is starting. If it stays, the node or an image pull is slow.", "Nothing, unless it stays: `kubectl describe pod <pod>`.", []string{"pods", "explain"}},
	{CodeAuditRefused, AreaDataPlane, "The RedirectPolicies in force would refuse the object", "A server-side dry-run create of the running pod or workload template, answered by every admission step in force.",
		"When its pods are created again, they are refused (or warned about, under a [Warn] binding).",
		"Correct the pod template as the message says.", []string{"audit"}},

	{CodeKubernetesVersion, AreaPreInstall, "The Kubernetes version is supported", "The API server's version against the chart's kubeVersion (Chart.yaml), and 1.36 or newer for injector policy; a warning on 1.32 and 1.33, whose API servers can crash compiling an admission policy (kubernetes/kubernetes#135757).",
		"The chart does not install there, or its CRD's validation rules are refused. On 1.32 and 1.33: an API server can exit (fatal error: concurrent map read and map write) when meshinit's policies, or any ValidatingAdmissionPolicy with variables, are created or changed while pods are admitted.",
		"Upgrade the cluster. On 1.32 and 1.33: install and upgrade meshinit, and change ValidatingAdmissionPolicies, while few pods are created.", []string{"check --pre"}},
	{CodeAdmissionAPIs, AreaPreInstall, "The admission APIs meshinit needs are served", "Discovery for admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding and MutatingWebhookConfiguration, and apiextensions.k8s.io/v1 CustomResourceDefinition.",
		"Without them meshinit's objects cannot be created: RedirectPolicies would not be enforced.",
		"Use Kubernetes 1.32 or newer with these APIs enabled (kube-apiserver --runtime-config).", []string{"check --pre"}},
	{CodeMutatingPolicyAPI, AreaPreInstall, "MutatingAdmissionPolicy is served (injector policy)", "Discovery for admissionregistration.k8s.io/v1 MutatingAdmissionPolicy and its binding.",
		"injector=policy cannot be installed (the chart refuses to render); injector=webhook needs none.",
		"Install with injector=webhook, or enable the API (Kubernetes 1.36 or newer).", []string{"check --pre"}},
	{CodeInstallRBAC, AreaPreInstall, "You may install, upgrade and uninstall what the chart creates", "A SelfSubjectAccessReview for each verb Helm uses on every kind the chart renders for this cluster, in the namespace it goes to: get, create, patch and delete (install checks for existing objects and creates them; upgrade and rollback patch what changed and delete what no longer renders; uninstall deletes). And get, list, create, update and delete on Secrets in the release's namespace, where Helm keeps each revision of the release; create on the namespace when it does not exist (--create-namespace). A problem names the kind and the verbs missing. Not asked: update (only helm upgrade --force) and list and watch (only --wait).",
		"helm install fails part way, or a later helm upgrade or uninstall does.",
		"Install as a user who may do these (cluster-admin), or have them granted.", []string{"check --pre"}},
	{CodeOtherMeshPods, AreaPreInstall, "Pods with another mesh's redirector", "Pods whose init containers include another mesh's redirector (istio-init, linkerd-init, kuma-init, consul-connect-inject-init) or another container with NET_ADMIN.",
		"In a namespace that opts in, such a pod gets two redirectors that rewrite each other's rules.",
		"Take those namespaces out of the other mesh, or do not opt them in.", []string{"check --pre"}},
	{CodeOtherMeshCNI, AreaPreInstall, "Another mesh's CNI plugin", "DaemonSets of other meshes' CNI plugins (istio-cni-node, linkerd-cni, kuma-cni, consul-cni), which redirect the traffic of their mesh's pods.",
		"A pod in both meshes gets two redirects.",
		"Opt in only namespaces the other mesh does not cover.", []string{"check --pre"}},
	{CodeOptInPodSecurity, AreaPreInstall, "PodSecurity lets namespaces that opt in run meshinit-redirect", "The PodSecurity labels of the namespaces that would be opted in (labelled meshinit.io/injection=enabled, or named with --opt-in), judged by the webhook's own Review with the configuration the chart would install.",
		"Pods there would be admitted without the redirect (or refused with inject.podSecurity=deny).",
		"Label such a namespace pod-security.kubernetes.io/enforce=privileged and keep baseline with the chart's guard (docs/podsecurity.md).", []string{"check --pre"}},
	{CodeContainerRuntime, AreaPreInstall, "The nodes' container runtimes", "status.nodeInfo.containerRuntimeVersion of each node: the redirector, non-root, needs the runtime to grant the capabilities it adds (NET_ADMIN, NET_RAW) to its permitted set.",
		"A runtime that does not grant added capabilities to non-root containers makes the redirector fail with `not permitted to change iptables`.",
		"Use containerd or CRI-O; or the chart value inject.privileged=true.", []string{"check --pre"}},
	{CodeChartRenders, AreaPreInstall, "The chart renders for this cluster", "The chart built into this plugin, rendered as helm install would with this API server's version and APIs.",
		"helm install would fail with the same error.",
		"Change the values or the cluster as the error says.", []string{"check --pre"}},

	{CodeVersionSkew, AreaVersion, "The plugin and the chart are the same minor version", "The plugin's version against the chart's (the app.kubernetes.io/version and helm.sh/chart labels of the release's objects).",
		"The plugin judges the cluster by another release's code: findings may be wrong.",
		"Use the plugin of the installed release.", []string{"version"}},
	{CodeWebhookSkew, AreaVersion, "The running webhook is the chart's", "The images the webhook pods run against the Deployment's template and the chart's appVersion.",
		"Replicas of another version still run: a rollout is under way or stuck, and reviews may differ by replica.",
		"kubectl rollout status the webhook Deployment.", []string{"version"}},
	{CodeChartUnknown, AreaVersion, "The chart's version is known", "The app.kubernetes.io/version and helm.sh/chart labels of the release's objects.",
		"Not installed by the chart (or its labels were removed): versions cannot be compared.",
		"Install with the chart.", []string{"version"}},
}

// Codes documents every code, in order.
func Codes() []CodeDoc { return slices.Clone(codes) }

// docOf is code's CodeDoc.
func docOf(c Code) (CodeDoc, bool) {
	i := slices.IndexFunc(codes, func(d CodeDoc) bool { return d.Code == c })
	if i < 0 {
		return CodeDoc{}, false
	}
	return codes[i], true
}
