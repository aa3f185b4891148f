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
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshinit/meshinit/webhook"
)

// Labels and annotations by which meshinit's objects are found: the chart's
// common labels (charts/meshinit/templates/_helpers.tpl) and the
// annotation Helm puts on every object it installs.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	chartName      = "meshinit"
	// helmNamespace names the release's namespace on cluster-scoped objects.
	helmNamespace = "meta.helm.sh/release-namespace"
	// configKey is the webhook's configuration file in its ConfigMap.
	configKey = "config.yaml"
)

// release is the meshinit installation a command looks at: the chart's
// release name (label app.kubernetes.io/instance; "" for any) and
// namespace, meshinit's own.
type release struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// selector selects the release's objects.
func (r release) selector() metav1.ListOptions {
	s := labelName + "=" + chartName
	if r.Name != "" {
		s += "," + labelInstance + "=" + r.Name
	}
	return metav1.ListOptions{LabelSelector: s}
}

func (r release) String() string {
	return fmt.Sprintf("release %s in namespace %s", r.Name, r.Namespace)
}

// locate finds the installation: in namespace if it is set (the
// --meshinit-namespace flag), else from the cluster-scoped objects the
// chart labels, whose Helm annotation, webhook Service or cluster-wide
// policy binding names meshinit's namespace. Several releases are an error
// that lists them.
func locate(ctx context.Context, kube kubernetes.Interface, namespace string) (release, error) {
	if namespace != "" {
		return release{Namespace: namespace}, nil
	}
	all := release{}.selector()
	found := map[release]bool{}
	add := func(meta metav1.ObjectMeta, namespaces ...string) {
		if ns := meta.Annotations[helmNamespace]; ns != "" {
			namespaces = []string{ns}
		}
		for _, ns := range namespaces {
			if ns != "" {
				found[release{Name: meta.Labels[labelInstance], Namespace: ns}] = true
			}
		}
	}
	admission := kube.AdmissionregistrationV1()
	mwcs, err := admission.MutatingWebhookConfigurations().List(ctx, all)
	if err != nil {
		return release{}, locateError(readError("list", "mutatingwebhookconfigurations.admissionregistration.k8s.io", "", err))
	}
	for _, m := range mwcs.Items {
		for _, w := range m.Webhooks {
			if s := w.ClientConfig.Service; s != nil {
				add(m.ObjectMeta, s.Namespace)
			}
		}
		add(m.ObjectMeta)
	}
	bindings, err := admission.ValidatingAdmissionPolicyBindings().List(ctx, all)
	if err != nil {
		return release{}, locateError(readError("list", "validatingadmissionpolicybindings.admissionregistration.k8s.io", "", err))
	}
	for _, b := range bindings.Items {
		if p := b.Spec.ParamRef; p != nil {
			add(b.ObjectMeta, p.Namespace)
		}
		add(b.ObjectMeta)
	}
	mutating, err := admission.MutatingAdmissionPolicies().List(ctx, all)
	if err != nil && !notServed(err) {
		return release{}, locateError(readError("list", "mutatingadmissionpolicies.admissionregistration.k8s.io", "", err))
	}
	if err == nil {
		for _, m := range mutating.Items {
			add(m.ObjectMeta)
		}
	}
	switch len(found) {
	case 0:
		return release{}, errNotInstalled
	case 1:
		for r := range found {
			return r, nil
		}
	}
	var names []string
	for r := range found {
		names = append(names, r.String())
	}
	slices.Sort(names)
	return release{}, fmt.Errorf("more than one meshinit installation (%s): choose one with --%s", strings.Join(names, "; "), flagMeshinitNamespace)
}

func locateError(err error) error {
	return fmt.Errorf("finding meshinit's namespace: %w (or name it with --%s)", err, flagMeshinitNamespace)
}

// loadConfig reads the webhook's configuration, config.yaml in the
// release's ConfigMap (charts/meshinit/templates/webhook-configmap.yaml),
// with the webhook's own parser, and returns it with the ConfigMap's name;
// a release without a name takes the ConfigMap's.
func loadConfig(ctx context.Context, kube kubernetes.Interface, r *release) (*webhook.Config, string, error) {
	list, err := kube.CoreV1().ConfigMaps(r.Namespace).List(ctx, r.selector())
	if err != nil {
		return nil, "", readError("list", "configmaps", r.Namespace, err)
	}
	var names []string
	var data, instance string
	for _, cm := range list.Items {
		if d, ok := cm.Data[configKey]; ok {
			names, data, instance = append(names, cm.Name), d, cm.Labels[labelInstance]
		}
	}
	switch len(names) {
	case 0:
		return nil, "", fmt.Errorf("no ConfigMap with %s labelled %s in namespace %s: the webhook's configuration, which says what meshinit injects, is missing (is meshinit installed there?)",
			configKey, r.selector().LabelSelector, r.Namespace)
	case 1:
	default:
		return nil, "", fmt.Errorf("ConfigMaps %s in namespace %s all hold %s: choose a release with --%s", strings.Join(names, ", "), r.Namespace, configKey, flagMeshinitNamespace)
	}
	if r.Name == "" {
		r.Name = instance
	}
	c, err := webhook.ParseConfig([]byte(data), r.Namespace)
	if err != nil {
		return nil, names[0], fmt.Errorf("the webhook's configuration, %s in ConfigMap %s/%s: %w", configKey, r.Namespace, names[0], err)
	}
	return &c, names[0], nil
}
