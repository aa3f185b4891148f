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

package webhook

import (
	"strconv"
	"strings"

	jsonpatch "gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/meshinit/meshinit/redirect"
)

// Outcome is what a review did to the pod, for responses, logs and metrics.
type Outcome string

const (
	// OutcomeInjected: the init container was added, replaced or moved back
	// to its placement, or the status annotation brought up to date.
	OutcomeInjected Outcome = "injected"
	// OutcomeUnchanged: the pod already carries the same init container at
	// its placement, and the status annotation.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeSkipped: the pod is admitted as it is (not opted in, opted
	// out, or a PodSecurity conflict in warn mode).
	OutcomeSkipped Outcome = "skipped"
	// OutcomeDenied: the pod is refused; Message says why.
	OutcomeDenied Outcome = "denied"
)

// Result of reviewing one pod.
type Result struct {
	Outcome Outcome
	// Reason is the opt-in decision's reason.
	Reason Reason
	// Stopped is what kept a pod that opted in from being injected
	// (ReasonInvalidAnnotation, ReasonPodSecurity), "" when nothing did.
	Stopped Reason
	// Patch turns the pod into the injected pod (OutcomeInjected only).
	Patch []jsonpatch.JsonPatchOperation
	// Message explains a denial.
	Message string
	// Warnings are returned to the client as admission warnings.
	Warnings []string
	// Status is the injection the pod carries afterwards, if any.
	Status *Status
	// Container is the canonical init container the pod carries afterwards
	// (OutcomeInjected and OutcomeUnchanged only).
	Container *corev1.Container
}

// Review is what the webhook does with pod, created in namespace (labelled
// namespaceLabels), under c: the pure core its Handler runs for every
// review, for tools that predict or audit injection without changing
// anything (kubectl meshinit). A pod that already runs is current when the
// Outcome is OutcomeUnchanged: it carries exactly the init container c
// builds for it, at its placement, and the status annotation. c must be
// validated (see [ParseConfig]).
func Review(pod *corev1.Pod, namespace string, namespaceLabels map[string]string, c *Config) Result {
	return mutate(subject{pod: pod, namespace: namespace, namespaceLabels: namespaceLabels}, c)
}

// mutate reviews one pod against the configuration: whether it is injected,
// and the JSON patch that injects it. It is pure: everything it looks at is
// in s and c.
func mutate(s subject, c *Config) Result {
	d := decide(s, c)
	switch {
	case d.Err != nil:
		return Result{Outcome: OutcomeDenied, Reason: d.Reason, Message: "meshinit: " + d.Err.Error()}
	case !d.Inject:
		return Result{Outcome: OutcomeSkipped, Reason: d.Reason}
	}
	rc, err := redirect.FromPodAnnotations(s.pod.Annotations, c.redirect, c.MeshAnnotations)
	if err != nil {
		return Result{Outcome: OutcomeDenied, Reason: d.Reason, Stopped: ReasonInvalidAnnotation,
			Message: "meshinit: pod not injected: " + err.Error()}
	}
	if msg := podSecurityConflict(s.namespace, s.namespaceLabels, c); msg != "" {
		if c.PodSecurity == PodSecurityDeny {
			return Result{Outcome: OutcomeDenied, Reason: d.Reason, Stopped: ReasonPodSecurity, Message: "meshinit: pod not injected: " + msg}
		}
		return Result{Outcome: OutcomeSkipped, Reason: d.Reason, Stopped: ReasonPodSecurity,
			Warnings: []string{"meshinit: pod admitted without traffic redirection: " + msg}}
	}

	container := initContainer(c, rc)
	if at := containerIndex(s.pod.Spec.InitContainers, ContainerName); at >= 0 && s.pod.Spec.InitContainers[at].ImagePullPolicy == corev1.PullAlways {
		// Kept when the container is moved or replaced: AlwaysPullImages
		// set it (and refuses a pod without it), and it is never weaker.
		container.ImagePullPolicy = corev1.PullAlways
	}
	status := c.Status()
	patch := containerPatch(s.pod.Spec.InitContainers, c.Placement, container)
	patch = append(patch, volumePatch(s.pod.Spec.Volumes)...)
	if s.pod.Annotations[StatusAnnotation] != status.String() {
		patch = append(patch, statusPatch(s.pod, status))
	}
	if len(patch) == 0 {
		return Result{Outcome: OutcomeUnchanged, Reason: d.Reason, Status: &status, Container: &container}
	}
	return Result{Outcome: OutcomeInjected, Reason: d.Reason, Patch: patch, Status: &status, Container: &container}
}

// containerPatch puts container at its placement among inits. The webhook
// is authoritative: an init container of the same name is kept only when it
// is the same container (sameContainer: content, not what the pod says
// about it) at the placement's index; one at that index that differs is
// replaced, one elsewhere (a later webhook put an init container before or
// after it) is removed and container added at the placement.
func containerPatch(inits []corev1.Container, p Placement, container corev1.Container) []jsonpatch.JsonPatchOperation {
	const path = "/spec/initContainers"
	at := containerIndex(inits, container.Name)
	want := 0
	if p == PlaceLast {
		want = len(inits) - 1
	}
	var ops []jsonpatch.JsonPatchOperation
	switch {
	case len(inits) == 0:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, []corev1.Container{container})}
	case at < 0:
	case at == want && sameContainer(inits[at], container):
		return nil
	case at == want:
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("replace", path+"/"+strconv.Itoa(at), container)}
	default:
		ops = append(ops, jsonpatch.NewOperation("remove", path+"/"+strconv.Itoa(at), nil))
	}
	if p == PlaceLast {
		return append(ops, jsonpatch.NewOperation("add", path+"/-", container))
	}
	return append(ops, jsonpatch.NewOperation("add", path+"/0", container))
}

// sameContainer reports whether the init container a pod carries is the
// canonical one, up to what the API server's own admission plugins change in
// a container they see after meshinit added it (on reinvocation):
// AlwaysPullImages sets imagePullPolicy Always (and refuses a pod where it is
// not), LimitRanger adds the namespace's default requests and limits for
// resources the container does not name. Neither changes what the
// redirector runs or what it may do; putting the canonical values back would
// undo them (AlwaysPullImages would then refuse the pod).
func sameContainer(have, canonical corev1.Container) bool {
	want := canonical.DeepCopy()
	if have.ImagePullPolicy == corev1.PullAlways {
		want.ImagePullPolicy = corev1.PullAlways
	}
	want.Resources.Limits = withDefaults(want.Resources.Limits, have.Resources.Limits)
	want.Resources.Requests = withDefaults(want.Resources.Requests, have.Resources.Requests)
	return equality.Semantic.DeepEqual(have, *want)
}

// withDefaults is want with the entries of have for resources want does not
// name (the defaults a LimitRange added).
func withDefaults(want, have corev1.ResourceList) corev1.ResourceList {
	for name, q := range have {
		if _, ok := want[name]; !ok {
			if want == nil {
				want = corev1.ResourceList{}
			}
			want[name] = q
		}
	}
	return want
}

// volumePatch gives the pod the volume meshinit's container mounts
// (TokenBlockVolume): added when missing, replaced when a volume of that name
// is anything but the empty directory.
func volumePatch(volumes []corev1.Volume) []jsonpatch.JsonPatchOperation {
	const path = "/spec/volumes"
	want := tokenBlockVolume()
	for i, v := range volumes {
		switch {
		case v.Name != want.Name:
		case equality.Semantic.DeepEqual(v, want):
			return nil
		default:
			return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("replace", path+"/"+strconv.Itoa(i), want)}
		}
	}
	if len(volumes) == 0 {
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path, []corev1.Volume{want})}
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", path+"/-", want)}
}

// statusPatch sets the status annotation ("add" replaces an existing value).
func statusPatch(pod *corev1.Pod, s Status) jsonpatch.JsonPatchOperation {
	if len(pod.Annotations) == 0 {
		return jsonpatch.NewOperation("add", "/metadata/annotations", map[string]string{StatusAnnotation: s.String()})
	}
	return jsonpatch.NewOperation("add", statusPath, s.String())
}

// statusPath is the JSON pointer of the status annotation (RFC 6901: "~"
// is escaped as "~0", "/" as "~1").
var statusPath = "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(StatusAnnotation)

func containerIndex(cs []corev1.Container, name string) int {
	for i, c := range cs {
		if c.Name == name {
			return i
		}
	}
	return -1
}
