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

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshinit/meshinit/webhook"
)

// scope is which namespaces a command looks at: one, or all ("").
type scope struct{ namespace string }

func (s scope) where() string {
	if s.namespace == "" {
		return "all namespaces"
	}
	return "namespace " + s.namespace
}

// meshed reports whether meshinit looks at a pod (or a pod template):
// every pod of a namespace labelled meshinit.io/injection=enabled, and pods
// labelled meshinit.io/inject=true anywhere. What the webhook then does
// with it is its own decision (webhook.Review).
func meshed(namespaceLabels, podLabels map[string]string) bool {
	return namespaceLabels[webhook.NamespaceLabel] == "enabled" || podLabels[webhook.PodLabel] == "true"
}

// running reports whether a pod still runs or will: not finished, not
// being deleted.
func running(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// meshedPods is what `pods` and `audit` look at: the running pods meshinit
// looks at in the scope, and the labels of their namespaces.
type meshedPods struct {
	Pods       []corev1.Pod
	Namespaces map[string]map[string]string
}

// gatherMeshedPods lists the namespaces and pods of the scope and keeps
// the running pods meshinit looks at, and those that ended because their
// meshinit-redirect failed.
func gatherMeshedPods(ctx context.Context, c *clients, s scope) (meshedPods, error) {
	out := meshedPods{Namespaces: map[string]map[string]string{}}
	if s.namespace != "" {
		ns, err := c.kube.CoreV1().Namespaces().Get(ctx, s.namespace, metav1.GetOptions{})
		if err != nil {
			return out, readError("get", "namespaces", "", err)
		}
		out.Namespaces[ns.Name] = ns.Labels
	} else {
		list, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, readError("list", "namespaces", "", err)
		}
		for _, ns := range list.Items {
			out.Namespaces[ns.Name] = ns.Labels
		}
	}
	pods, err := c.kube.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out, readError("list", "pods", s.namespace, err)
	}
	for _, p := range pods.Items {
		if (running(&p) || failed(&p)) && meshed(out.Namespaces[p.Namespace], p.Labels) {
			out.Pods = append(out.Pods, p)
		}
	}
	return out, nil
}

// gatherOwners reads the controllers of the ReplicaSets and Jobs that own
// pods, listing them in the scope only when a pod has one.
func gatherOwners(ctx context.Context, c *clients, s scope, pods []corev1.Pod) (owners, error) {
	o := owners{}
	kinds := map[string]bool{}
	for i := range pods {
		if ref := metav1.GetControllerOfNoCopy(&pods[i]); ref != nil {
			kinds[ref.Kind] = true
		}
	}
	if kinds["ReplicaSet"] {
		err := collect(ctx, s.namespace, "replicasets.apps", c.kube.AppsV1().ReplicaSets(s.namespace).List, func(l *appsv1.ReplicaSetList) {
			for _, rs := range l.Items {
				o.add("ReplicaSet", rs.ObjectMeta)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if kinds["Job"] {
		err := collect(ctx, s.namespace, "jobs.batch", c.kube.BatchV1().Jobs(s.namespace).List, func(l *batchv1.JobList) {
			for _, j := range l.Items {
				o.add("Job", j.ObjectMeta)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// collect lists a resource (its plural and group, for errors) in namespace
// ("" for all) and hands the list to each.
func collect[L any](ctx context.Context, namespace, resource string, list func(context.Context, metav1.ListOptions) (L, error), each func(L)) error {
	l, err := list(ctx, metav1.ListOptions{})
	if err != nil {
		return readError("list", resource, namespace, err)
	}
	each(l)
	return nil
}

// podsReport is `pods`: every running pod meshinit looks at in the scope,
// classified under the installed configuration, by workload.
func podsReport(ctx context.Context, c *clients, r release, s scope) (PodsReport, error) {
	cfg, _, err := loadConfig(ctx, c.kube, &r)
	if err != nil {
		return PodsReport{}, err
	}
	in, err := gatherMeshedPods(ctx, c, s)
	if err != nil {
		return PodsReport{}, err
	}
	o, err := gatherOwners(ctx, c, s, in.Pods)
	if err != nil {
		return PodsReport{}, err
	}
	reports := make([]PodReport, len(in.Pods))
	for i := range in.Pods {
		reports[i], _ = classifyPod(&in.Pods[i], in.Namespaces[in.Pods[i].Namespace], cfg)
	}
	return groupPods(in.Pods, reports, o), nil
}
