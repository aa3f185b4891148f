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
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshinit/meshinit/redirect"
)

// Public names of the opt-in contract (docs/configuration.md, "Labels").
const (
	// NamespaceLabel opts a namespace's pods in with "enabled" and out with
	// "disabled", which no pod overrides. Without it (or with another value)
	// only the pods that opt in are injected.
	NamespaceLabel = "meshinit.io/injection"
	// PodLabel overrides the namespace's choice for one pod, "true" or
	// "false", except in a namespace labelled disabled.
	PodLabel = "meshinit.io/inject"
)

// Reason says why a pod is or is not injected. Reasons are a small fixed
// set, so they double as metric labels.
type Reason string

const (
	ReasonInvalidLabel      Reason = "invalid-label"
	ReasonPodOptedOut       Reason = "pod-opted-out"
	ReasonHostNetwork       Reason = "host-network"
	ReasonExcludedNS        Reason = "excluded-namespace"
	ReasonNamespaceOptedOut Reason = "namespace-opted-out"
	ReasonPodOptedIn        Reason = "pod-opted-in"
	ReasonNamespaceOptedIn  Reason = "namespace-opted-in"
	ReasonNotOptedIn        Reason = "not-opted-in"
	// What stops a pod that opted in (Result.Stopped): an annotation with
	// a value meshinit cannot use, or its namespace's PodSecurity level.
	ReasonInvalidAnnotation Reason = "invalid-annotation"
	ReasonPodSecurity       Reason = "pod-security"
)

// Decision is whether a pod gets the init container, and why. Err is set
// (and Inject false) when the pod states its choice wrongly.
type Decision struct {
	Inject bool
	Reason Reason
	Err    error
}

// subject is what the decision looks at.
type subject struct {
	pod             *corev1.Pod
	namespace       string
	namespaceLabels map[string]string
}

// check decides when it can (ok) and otherwise passes to the next check.
type check func(s subject, c *Config) (d Decision, ok bool)

// checks are tried in order; the first that decides wins. Refusals come
// before opt-ins, so nothing can opt a pod back in once it is ruled out.
var checks = []check{
	func(s subject, _ *Config) (Decision, bool) {
		v, set := s.pod.Labels[PodLabel]
		if set && v != "true" && v != "false" {
			return Decision{Reason: ReasonInvalidLabel,
				Err: fmt.Errorf("invalid label %s %s: must be \"true\" or \"false\"", PodLabel, redirect.QuoteShort(v))}, true
		}
		return Decision{Reason: ReasonPodOptedOut}, v == "false"
	},
	func(s subject, _ *Config) (Decision, bool) {
		return Decision{Reason: ReasonHostNetwork}, s.pod.Spec.HostNetwork
	},
	func(s subject, c *Config) (Decision, bool) {
		return Decision{Reason: ReasonExcludedNS}, c.excluded(s.namespace)
	},
	func(s subject, _ *Config) (Decision, bool) {
		return Decision{Reason: ReasonNamespaceOptedOut}, s.namespaceLabels[NamespaceLabel] == "disabled"
	},
	func(s subject, _ *Config) (Decision, bool) {
		return Decision{Inject: true, Reason: ReasonPodOptedIn}, s.pod.Labels[PodLabel] == "true"
	},
	func(s subject, _ *Config) (Decision, bool) {
		return Decision{Inject: true, Reason: ReasonNamespaceOptedIn}, s.namespaceLabels[NamespaceLabel] == "enabled"
	},
}

// decide runs the checks in order; a pod no check decides is not injected.
func decide(s subject, c *Config) Decision {
	for _, ch := range checks {
		if d, ok := ch(s, c); ok {
			return d
		}
	}
	return Decision{Reason: ReasonNotOptedIn}
}
