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
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// PreInstall is what `check --pre` looks at, as read from a cluster
// meshinit is not installed in yet (gatherPreInstall); preChecks are pure
// functions of it.
type PreInstall struct {
	// Injector is the chart value injector to install with; Namespace the
	// namespace helm install goes to.
	Injector  string
	Namespace string
	// Server is the API server's version.
	Server *version.Info
	// ChartKubeVersion is the chart's kubeVersion constraint (Chart.yaml).
	ChartKubeVersion string
	// Served are the kinds the API server serves, by group/version/Kind.
	Served map[string]bool
	// RenderErr is why the chart (built into the plugin) does not render
	// for this cluster, as helm install would render it; nil when it does.
	RenderErr error
	// Access is what a SelfSubjectAccessReview answered for each kind the
	// chart creates, and where.
	Access []Access
	// Config is the webhook configuration the chart would install
	// (webhook.ParseConfig of its ConfigMap), nil when it did not render.
	Config *webhook.Config
	// Namespaces are the labels of the namespaces that would be opted in
	// (labelled already, or named with --opt-in), by name; a name missing
	// from the cluster has nil labels.
	Namespaces map[string]map[string]string
	// OtherMeshPods are pods with a second redirector (secondRedirectors):
	// in namespaces to be opted in, any; elsewhere, other meshes' only.
	OtherMeshPods []corev1.Pod
	// CNI are DaemonSets of other meshes' CNI plugins.
	CNI []appsv1.DaemonSet
	// Runtimes are the container runtimes of the nodes, and how many
	// nodes run each.
	Runtimes map[string]int
	// Unread says, by the code whose check needed it, what RBAC did not
	// let the user read: someone about to install usually may, but
	// check --pre still says what it can.
	Unread map[Code]string
}

// Access is what SelfSubjectAccessReviews answered for one kind (and
// where): may the user do with it each verb Helm needs?
type Access struct {
	Kind      string `json:"kind"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	// Verbs are the verbs asked (helmVerbs, or releaseVerbs for Helm's
	// release record); Missing those the user may not do, in that order.
	Verbs   []string `json:"verbs"`
	Missing []string `json:"missing,omitempty"`
	// Allowed: the user may do every verb (Missing is empty).
	Allowed bool `json:"allowed"`
	// Served: the API server serves the kind (cert-manager's, with
	// certManager.enabled, may not be).
	Served bool `json:"served"`
	// Reason is the authorizer's reason for the first missing verb.
	Reason string `json:"reason,omitempty"`
}

// helmVerbs are the verbs Helm uses on each kind a chart renders, from
// helm install to upgrade, rollback and uninstall (helm.sh/helm/v3
// pkg/kube, Client.Create, Update and Delete): get (install checks that no
// object is there already; upgrade reads the live object), create, patch
// (upgrade and rollback patch what changed: a three-way merge), delete
// (upgrade deletes what no longer renders; uninstall, and a failed
// --atomic install, delete everything). update is only --force's, and
// list and watch only --wait's: not asked.
var helmVerbs = []string{"get", "create", "patch", "delete"}

// releaseVerbs are the verbs Helm's release record needs: Secrets
// sh.helm.release.v1.<release>.v<revision> in the release's namespace
// (helm.sh/helm/v3 pkg/storage/driver, Secrets: Get, List by label,
// Create, Update, Delete).
var releaseVerbs = []string{"get", "list", "create", "update", "delete"}

// releaseRecordKind names Helm's release record in findings.
const releaseRecordKind = "Secret (Helm release record)"

// otherMeshCNI are the DaemonSets other meshes' CNI plugins run as.
var otherMeshCNI = []string{"istio-cni-node", "linkerd-cni", "kuma-cni", "consul-cni"}

// preCheck is `check --pre`.
func (o *options) preCheck(cmd *cobra.Command) error {
	if err := o.out.validate(); err != nil {
		return err
	}
	if o.injector != "webhook" && o.injector != "policy" {
		return usageError{fmt.Errorf("--injector=%q: want webhook or policy", o.injector)}
	}
	c, err := o.clients()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	p, err := gatherPreInstall(ctx, c, o.injector, o.installNamespace, o.optIn)
	if err != nil {
		return err
	}
	findings := preChecks(p)
	r := release{Name: chartName, Namespace: o.installNamespace}
	rep := CheckReport{r, findings, countProblems(findings)}
	err = o.out.print(cmd.OutOrStdout(), "CheckReport", rep, func(w io.Writer, _ bool) error {
		fmt.Fprintf(w, "Before installing meshinit (injector %s) in namespace %s\n\n", o.injector, clean(o.installNamespace))
		return findingsTable(w, findings, "no problems: helm install can go ahead")
	})
	if err == nil && rep.Problems > 0 {
		err = problemsFound(rep.Problems)
	}
	return err
}

// gatherPreInstall reads what `check --pre` looks at. Reads that fail
// for lack of RBAC are errors naming the verb and resource, as elsewhere.
func gatherPreInstall(ctx context.Context, c *clients, injector, namespace string, optIn []string) (PreInstall, error) {
	p := PreInstall{Injector: injector, Namespace: namespace, Served: map[string]bool{}, Runtimes: map[string]int{}, Unread: map[Code]string{}}
	// unread records a list RBAC forbids, for code's check; other errors
	// end the command.
	unread := func(code Code, verb, resource string, err error) error {
		if !apierrors.IsForbidden(err) {
			return readError(verb, resource, "", err)
		}
		p.Unread[code] = readError(verb, resource, "", err).Error()
		return nil
	}
	dc := c.kube.Discovery()
	var err error
	if p.Server, err = dc.ServerVersion(); err != nil {
		return p, fmt.Errorf("reading the API server's version: %w", err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return p, readError("discover", "APIs", "", err)
	}
	resources := map[string]metav1.APIResource{} // by group/version/Kind
	var apiVersions []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			key := l.GroupVersion + "/" + r.Kind
			p.Served[key], resources[key] = true, r
			apiVersions = append(apiVersions, key)
		}
		apiVersions = append(apiVersions, l.GroupVersion)
	}

	ch, err := charts.Load()
	if err != nil {
		return p, err
	}
	p.ChartKubeVersion = ch.Metadata.KubeVersion
	objs, err := charts.Objects(charts.Options{Namespace: namespace, Values: map[string]any{"injector": injector}, IncludeCRDs: true,
		KubeVersion: p.Server.GitVersion, APIVersions: apiVersions}, false)
	p.RenderErr = err
	// The kinds of the chart's own CRDs are served once helm has created
	// them, before the objects of those kinds.
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
		plural, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		for _, v := range versions {
			m, isMap := v.(map[string]any)
			if !isMap {
				continue
			}
			if name, _, _ := unstructured.NestedString(m, "name"); name != "" {
				resources[group+"/"+name+"/"+kind] = metav1.APIResource{Name: plural, Kind: kind, Namespaced: scope == "Namespaced"}
			}
		}
	}
	seen := map[string]bool{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		// The chart may render more than one ConfigMap (the injection
		// configuration, the metrics dashboard): the one that holds the
		// configuration file, whichever comes first.
		if gvk.Kind == "ConfigMap" && p.Config == nil {
			if data, found, _ := unstructured.NestedString(obj.Object, "data", configKey); found {
				if cfg, err := webhook.ParseConfig([]byte(data), namespace); err == nil {
					p.Config = &cfg
				}
			}
		}
		a := Access{Kind: gvk.Kind, Verbs: helmVerbs}
		r, served := resources[gvk.GroupVersion().String()+"/"+gvk.Kind]
		a.Served, a.Resource = served, strings.ToLower(gvk.Kind)+"s"
		if served {
			a.Resource = r.Name
			if r.Namespaced {
				a.Namespace = cmp.Or(obj.GetNamespace(), namespace)
			}
		}
		if gvk.Group != "" {
			a.Resource += "." + gvk.Group
		}
		key := a.Kind + "/" + a.Resource + "/" + a.Namespace
		if seen[key] {
			continue
		}
		seen[key] = true
		if served {
			if err := mayDo(ctx, c, &a, gvk.GroupVersion().WithResource(r.Name)); err != nil {
				return p, err
			}
		}
		p.Access = append(p.Access, a)
	}
	if p.RenderErr == nil {
		a := Access{Kind: releaseRecordKind, Resource: "secrets", Namespace: namespace, Verbs: releaseVerbs, Served: true}
		if err := mayDo(ctx, c, &a, corev1.SchemeGroupVersion.WithResource("secrets")); err != nil {
			return p, err
		}
		p.Access = append(p.Access, a)
	}
	if _, err := c.kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		// helm install --create-namespace only creates it.
		a := Access{Kind: "Namespace", Resource: "namespaces", Verbs: []string{"create"}, Served: true}
		if err := mayDo(ctx, c, &a, corev1.SchemeGroupVersion.WithResource("namespaces")); err != nil {
			return p, err
		}
		p.Access = append([]Access{a}, p.Access...)
	}

	p.Namespaces = map[string]map[string]string{}
	for _, name := range optIn {
		p.Namespaces[name] = nil
	}
	namespaces, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		if err := unread(CodeOptInPodSecurity, "list", "namespaces", err); err != nil {
			return p, err
		}
		namespaces = &corev1.NamespaceList{}
	}
	for _, ns := range namespaces.Items {
		if _, named := p.Namespaces[ns.Name]; named || ns.Labels[webhook.NamespaceLabel] == "enabled" {
			p.Namespaces[ns.Name] = ns.Labels
		}
	}
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		if err := unread(CodeOtherMeshPods, "list", "pods", err); err != nil {
			return p, err
		}
		pods = &corev1.PodList{}
	}
	for _, pod := range pods.Items {
		_, optedIn := p.Namespaces[pod.Namespace]
		if !running(&pod) {
			continue
		}
		if (optedIn && len(secondRedirectors(pod.Spec)) > 0) || slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool {
			return slices.Contains(otherRedirectors, c.Name)
		}) {
			p.OtherMeshPods = append(p.OtherMeshPods, pod)
		}
	}
	daemonSets, err := c.kube.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		if err := unread(CodeOtherMeshCNI, "list", "daemonsets.apps", err); err != nil {
			return p, err
		}
		daemonSets = &appsv1.DaemonSetList{}
	}
	for _, d := range daemonSets.Items {
		if slices.Contains(otherMeshCNI, d.Name) {
			p.CNI = append(p.CNI, d)
		}
	}
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		if err := unread(CodeContainerRuntime, "list", "nodes", err); err != nil {
			return p, err
		}
		nodes = &corev1.NodeList{}
	}
	for _, n := range nodes.Items {
		p.Runtimes[n.Status.NodeInfo.ContainerRuntimeVersion]++
	}
	return p, nil
}

// mayDo asks the API server, with a SelfSubjectAccessReview for each of
// a.Verbs, whether the user may do it to resource in a.Namespace ("" for
// cluster-scoped), and records the answers in a.
func mayDo(ctx context.Context, c *clients, a *Access, gvr schema.GroupVersionResource) error {
	a.Missing, a.Reason = nil, ""
	for _, verb := range a.Verbs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: a.Namespace},
		}}
		got, err := c.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return readError("create", "selfsubjectaccessreviews.authorization.k8s.io", "", err)
		}
		if !got.Status.Allowed {
			if len(a.Missing) == 0 {
				a.Reason = got.Status.Reason
			}
			a.Missing = append(a.Missing, verb)
		}
	}
	a.Allowed = len(a.Missing) == 0
	return nil
}
