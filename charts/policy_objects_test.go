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

package charts_test

import (
	"fmt"
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
	"github.com/meshinit/meshinit/redirect"
)

// Names of the public contract (docs/configuration.md, "Labels" and "Annotations") the policy reads.
const (
	initContainerName = "meshinit-redirect"
	namespaceLabel    = "meshinit.io/injection"
	podLabel          = "meshinit.io/inject"
	includeInbound    = redirect.AnnotationIncludeInboundPorts
	excludeInbound    = redirect.AnnotationExcludeInboundPorts
	excludeOutbound   = redirect.AnnotationExcludeOutboundPorts
	includeCIDRs      = redirect.AnnotationIncludeOutboundCIDRs
	excludeCIDRs      = redirect.AnnotationExcludeOutboundCIDRs
	includeOutbound   = redirect.AnnotationIncludeOutboundPorts
	excludeUIDs       = redirect.AnnotationExcludeOutboundUIDs
	excludeGIDs       = redirect.AnnotationExcludeOutboundGIDs
	excludeInterfaces = redirect.AnnotationExcludeInboundInterfaces

	proxyUIDAnnotation          = redirect.AnnotationProxyUID
	proxyGIDAnnotation          = redirect.AnnotationProxyGID
	outboundProxyPortAnnotation = redirect.AnnotationOutboundProxyPort
	inboundProxyPortAnnotation  = redirect.AnnotationInboundProxyPort
	captureDNSAnnotation        = redirect.AnnotationCaptureDNS
	dnsProxyPortAnnotation      = redirect.AnnotationDNSProxyPort
)

// podOption changes a test pod.
type podOption func(*corev1.Pod)

func labels(kv ...string) podOption {
	return func(p *corev1.Pod) { p.Labels = merge(p.Labels, kv) }
}

func annotations(kv ...string) podOption {
	return func(p *corev1.Pod) { p.Annotations = merge(p.Annotations, kv) }
}

func merge(m map[string]string, kv []string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func hostNetwork(p *corev1.Pod) { p.Spec.HostNetwork = true }

// withInit appends an init container; a restartPolicy Always makes it a
// native sidecar.
func withInit(c corev1.Container) podOption {
	return func(p *corev1.Pod) { p.Spec.InitContainers = append(p.Spec.InitContainers, *c.DeepCopy()) }
}

// withContainer appends an app container.
func withContainer(c corev1.Container) podOption {
	return func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, *c.DeepCopy()) }
}

// security changes the securityContext of the pod's container (or init
// container) called name.
func security(name string, change func(sc *corev1.SecurityContext)) podOption {
	return func(p *corev1.Pod) {
		for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range list {
				if list[i].Name == name {
					if list[i].SecurityContext == nil {
						list[i].SecurityContext = &corev1.SecurityContext{}
					}
					change(list[i].SecurityContext)
					return
				}
			}
		}
		panic("no container " + name)
	}
}

func runAsUser(name string, uid int64) podOption {
	return security(name, func(sc *corev1.SecurityContext) { sc.RunAsUser = &uid })
}

func runAsGroup(name string, gid int64) podOption {
	return security(name, func(sc *corev1.SecurityContext) { sc.RunAsGroup = &gid })
}

// privileged makes the container privileged, which the API server allows
// only with privilege escalation.
func privileged(name string) podOption {
	return security(name, func(sc *corev1.SecurityContext) { sc.Privileged, sc.AllowPrivilegeEscalation = ptr.To(true), nil })
}

// addCapabilities adds caps to those the container keeps (with hardened,
// none); the API server allows adding SYS_ADMIN only with privilege
// escalation.
func addCapabilities(name string, caps ...corev1.Capability) podOption {
	return security(name, func(sc *corev1.SecurityContext) {
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{}
		}
		sc.Capabilities.Add = caps
		for _, c := range caps {
			if c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" {
				sc.AllowPrivilegeEscalation = nil
			}
		}
	})
}

// podSecurity changes the pod's securityContext.
func podSecurity(change func(sc *corev1.PodSecurityContext)) podOption {
	return func(p *corev1.Pod) {
		if p.Spec.SecurityContext == nil {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		change(p.Spec.SecurityContext)
	}
}

// containers gives the pod n app containers, each with a port.
func containers(n int) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for i := range n {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
				Name: fmt.Sprintf("app-%d", i), Image: "app", SecurityContext: hardened(),
				Ports: []corev1.ContainerPort{{ContainerPort: int32(8000 + i)}},
			})
		}
	}
}

// hardened is the securityContext of a test container that cannot go
// around the proxy where a RedirectPolicy requires ports: no privilege
// escalation, no capabilities (the pod gives it a UID and GID, see pod).
func hardened() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

// podUser is the UID and GID test pods run as: not the proxy's.
const podUser = 4000

// pod is a minimal valid pod that a RedirectPolicy admits: its app
// container hardened, the pod running as podUser; name is also its app
// label.
func pod(name string, opts ...podOption) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](podUser), RunAsGroup: ptr.To[int64](podUser)},
			Containers:      []corev1.Container{{Name: "app", Image: "app", SecurityContext: hardened()}},
			RestartPolicy:   corev1.RestartPolicyAlways,
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func template(p *corev1.Pod) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: p.Annotations}, Spec: p.Spec}
}

func selector(p *corev1.Pod) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}
}

// workloads are the kinds the policy checks by their pod template, each
// built around a pod (which becomes the template).
var workloads = []struct {
	kind string
	of   func(p *corev1.Pod) client.Object
}{
	{"Deployment", func(p *corev1.Pod) client.Object {
		return &appsv1.Deployment{TypeMeta: typeMeta(appsv1.SchemeGroupVersion, "Deployment"), ObjectMeta: metaOf(p),
			Spec: appsv1.DeploymentSpec{Selector: selector(p), Template: template(p)}}
	}},
	{"StatefulSet", func(p *corev1.Pod) client.Object {
		return &appsv1.StatefulSet{TypeMeta: typeMeta(appsv1.SchemeGroupVersion, "StatefulSet"), ObjectMeta: metaOf(p),
			Spec: appsv1.StatefulSetSpec{Selector: selector(p), Template: template(p)}}
	}},
	{"DaemonSet", func(p *corev1.Pod) client.Object {
		return &appsv1.DaemonSet{TypeMeta: typeMeta(appsv1.SchemeGroupVersion, "DaemonSet"), ObjectMeta: metaOf(p),
			Spec: appsv1.DaemonSetSpec{Selector: selector(p), Template: template(p)}}
	}},
	{"ReplicaSet", func(p *corev1.Pod) client.Object {
		return &appsv1.ReplicaSet{TypeMeta: typeMeta(appsv1.SchemeGroupVersion, "ReplicaSet"), ObjectMeta: metaOf(p),
			Spec: appsv1.ReplicaSetSpec{Selector: selector(p), Template: template(p)}}
	}},
	{"Job", func(p *corev1.Pod) client.Object {
		return &batchv1.Job{TypeMeta: typeMeta(batchv1.SchemeGroupVersion, "Job"), ObjectMeta: metaOf(p),
			Spec: jobSpec(p)}
	}},
	{"CronJob", func(p *corev1.Pod) client.Object {
		return &batchv1.CronJob{TypeMeta: typeMeta(batchv1.SchemeGroupVersion, "CronJob"), ObjectMeta: metaOf(p),
			Spec: batchv1.CronJobSpec{Schedule: "@hourly", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec(p)}}}
	}},
}

// templateOf returns a workload's pod template.
func templateOf(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.ReplicaSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template
	}
	panic(fmt.Sprintf("%T is not a workload", obj))
}

func jobSpec(p *corev1.Pod) batchv1.JobSpec {
	t := template(p)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return batchv1.JobSpec{Template: t}
}

func typeMeta(gv schema.GroupVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gv.String(), Kind: kind}
}

// metaOf is a workload's metadata for pod p: p's name and namespace, and
// its label meshinit.io/inject, which outside opted-in namespaces selects
// the workload for the policy (policy-bindings.yaml), as charts commonly
// give a workload its pods' labels.
func metaOf(p *corev1.Pod) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}
	if v, ok := p.Labels[podLabel]; ok {
		m.Labels = map[string]string{podLabel: v}
	}
	return m
}

// kindOf and resourceOf name a test object's kind and resource.
func kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gvks[0], nil
}

func resourceOf(kind string) string { return strings.ToLower(kind) + "s" }

// namespace is a namespace object with labels.
func namespace(name string, kv ...string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: merge(map[string]string{"kubernetes.io/metadata.name": name}, kv)},
	}
}

// redirectPolicy is a RedirectPolicy as unstructured, the form the API
// server hands the policy as params.
func redirectPolicy(ns, name string, spec v1alpha1.RedirectPolicySpec) *unstructured.Unstructured {
	rp := &v1alpha1.RedirectPolicy{
		TypeMeta:   typeMeta(v1alpha1.SchemeGroupVersion, "RedirectPolicy"),
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       spec,
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rp)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func ports(ps ...int) []v1alpha1.Port {
	out := make([]v1alpha1.Port, len(ps))
	for i, p := range ps {
		out[i] = v1alpha1.Port(p)
	}
	return out
}
