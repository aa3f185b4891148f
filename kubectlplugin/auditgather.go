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
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// dryRunParallel bounds the dry-run creates in flight.
const dryRunParallel = 4

// subject is one object `audit` creates again in a server-side dry run.
type subject struct {
	result   AuditResult
	resource string         // "pods", "deployments", ...
	client   rest.Interface // of the resource's API group
	object   runtime.Object
}

// auditRun is `audit`: every running pod meshinit looks at in the scope
// (see meshed), and every workload whose pod template it would look at,
// created again by the API server in a server-side dry run, so that every
// admission step in force now (meshinit's webhook, the
// ValidatingAdmissionPolicies with the RedirectPolicies they read, and any
// other) answers.
func auditRun(ctx context.Context, c *clients, r release, s scope) (AuditReport, error) {
	in, err := gatherMeshedPods(ctx, c, s)
	if err != nil {
		return AuditReport{}, err
	}
	o, err := gatherOwners(ctx, c, s, in.Pods)
	if err != nil {
		return AuditReport{}, err
	}
	var subjects []subject
	for i := range in.Pods {
		p := &in.Pods[i]
		subjects = append(subjects, subject{
			result:   AuditResult{Namespace: p.Namespace, Kind: "Pod", Name: p.Name, Workload: workloadOf(p, o).String()},
			resource: "pods", client: c.dryRun.CoreV1().RESTClient(), object: podForCreate(p),
		})
	}
	workloads, err := gatherWorkloads(ctx, c, s, in.Namespaces)
	if err != nil {
		return AuditReport{}, err
	}
	subjects = append(subjects, workloads...)
	policies, err := redirectPolicies(ctx, c, r, s)
	if err != nil {
		return AuditReport{}, err
	}

	results := make([]AuditResult, len(subjects))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dryRunParallel)
	for i, sub := range subjects {
		g.Go(func() error {
			res := sub.client.Post().Namespace(sub.result.Namespace).Resource(sub.resource).
				Param("dryRun", metav1.DryRunAll).Param("fieldManager", "kubectl-meshinit").
				Body(sub.object).Do(gctx)
			err := res.Error()
			if rbacDenied(err) {
				return readError("create (server-side dry run)", sub.resource, sub.result.Namespace, err)
			}
			var warnings []string
			for _, w := range res.Warnings() {
				warnings = append(warnings, w.Text)
			}
			results[i] = sub.result
			results[i].Verdict, results[i].Message = verdict(warnings, err)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return AuditReport{}, err
	}
	return auditReport(policies, results), nil
}

// rbacDenied reports whether the authorizer refused a request (rather than
// admission refusing its object).
func rbacDenied(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot create resource")
}

// gatherWorkloads lists the workloads of the scope whose pod template
// meshinit looks at: Deployments, StatefulSets, DaemonSets, CronJobs, and
// the ReplicaSets and Jobs no other workload controls (those are checked
// through it).
func gatherWorkloads(ctx context.Context, c *clients, s scope, namespaces map[string]map[string]string) ([]subject, error) {
	apps, batch := c.dryRun.AppsV1(), c.dryRun.BatchV1()
	var mu sync.Mutex
	var out []subject
	add := func(kind, resource string, client rest.Interface, meta metav1.ObjectMeta, podLabels map[string]string, object runtime.Object) {
		controlled := metav1.GetControllerOfNoCopy(&meta) != nil
		if !meshed(namespaces[meta.Namespace], podLabels) || (controlled && (kind == "ReplicaSet" || kind == "Job")) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, subject{result: AuditResult{Namespace: meta.Namespace, Kind: kind, Name: meta.Name}, resource: resource, client: client, object: object})
	}
	ns := s.namespace
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return collect(gctx, ns, "deployments.apps", apps.Deployments(ns).List, func(l *appsv1.DeploymentList) {
			for i := range l.Items {
				d := &l.Items[i]
				add("Deployment", "deployments", apps.RESTClient(), d.ObjectMeta, d.Spec.Template.Labels, deploymentForCreate(d))
			}
		})
	})
	g.Go(func() error {
		return collect(gctx, ns, "statefulsets.apps", apps.StatefulSets(ns).List, func(l *appsv1.StatefulSetList) {
			for i := range l.Items {
				d := &l.Items[i]
				add("StatefulSet", "statefulsets", apps.RESTClient(), d.ObjectMeta, d.Spec.Template.Labels, statefulSetForCreate(d))
			}
		})
	})
	g.Go(func() error {
		return collect(gctx, ns, "daemonsets.apps", apps.DaemonSets(ns).List, func(l *appsv1.DaemonSetList) {
			for i := range l.Items {
				d := &l.Items[i]
				add("DaemonSet", "daemonsets", apps.RESTClient(), d.ObjectMeta, d.Spec.Template.Labels, daemonSetForCreate(d))
			}
		})
	})
	g.Go(func() error {
		return collect(gctx, ns, "replicasets.apps", apps.ReplicaSets(ns).List, func(l *appsv1.ReplicaSetList) {
			for i := range l.Items {
				d := &l.Items[i]
				add("ReplicaSet", "replicasets", apps.RESTClient(), d.ObjectMeta, d.Spec.Template.Labels, replicaSetForCreate(d))
			}
		})
	})
	g.Go(func() error {
		return collect(gctx, ns, "jobs.batch", batch.Jobs(ns).List, func(l *batchv1.JobList) {
			for i := range l.Items {
				d := &l.Items[i]
				add("Job", "jobs", batch.RESTClient(), d.ObjectMeta, d.Spec.Template.Labels, jobForCreate(d))
			}
		})
	})
	g.Go(func() error {
		return collect(gctx, ns, "cronjobs.batch", batch.CronJobs(ns).List, func(l *batchv1.CronJobList) {
			for i := range l.Items {
				d := &l.Items[i]
				add("CronJob", "cronjobs", batch.RESTClient(), d.ObjectMeta, d.Spec.JobTemplate.Spec.Template.Labels, cronJobForCreate(d))
			}
		})
	})
	return out, g.Wait()
}

// redirectPolicies names the RedirectPolicies that apply in the scope:
// meshinit's namespace's (cluster-wide) and the scope's own.
func redirectPolicies(ctx context.Context, c *clients, r release, s scope) ([]string, error) {
	res := c.dynamic.Resource(v1alpha1.SchemeGroupVersion.WithResource("redirectpolicies"))
	namespaces := []string{""}
	if s.namespace != "" {
		namespaces = []string{r.Namespace, s.namespace}
		if r.Namespace == s.namespace {
			namespaces = namespaces[:1]
		}
	}
	var names []string
	for _, ns := range namespaces {
		list, err := res.Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the API server does not serve RedirectPolicies (%s): the CRD is missing; kubectl meshinit check says more", v1alpha1.SchemeGroupVersion)
		}
		if err != nil {
			return nil, readError("list", "redirectpolicies."+v1alpha1.GroupName, ns, err)
		}
		for _, p := range list.Items {
			names = append(names, p.GetNamespace()+"/"+p.GetName())
		}
	}
	return names, nil
}
