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

package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RedirectorTrust names the redirector images meshinit's policies accept in
// an init container named meshinit-redirect: the chart keeps one in its
// release namespace, which the redirector trust policy reads as its param,
// and any other image there is refused. Writing it is trusting an image:
// only the chart (current) and its upgrade and rollback hook (previous) do.
//
// It is a custom resource, not a ConfigMap, because kube-apiserver stops the
// informer of a built-in paramKind for good once no binding uses that kind
// for a moment (kubernetes/kubernetes#130887): after one uninstall, a policy
// reading a ConfigMap sees it as it was then, or misses it and fetches it on
// every request. The informer of a custom resource paramKind is started
// anew for each use.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=meshinit
// +kubebuilder:printcolumn:name="Current",type=string,JSONPath=`.spec.current`
// +kubebuilder:printcolumn:name="Previous",type=string,JSONPath=`.spec.previous`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RedirectorTrust struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the trusted images.
	Spec RedirectorTrustSpec `json:"spec"`
}

// RedirectorTrustSpec names the redirector images meshinit's policies accept,
// each compared with a pod's image as written (no normalisation).
type RedirectorTrustSpec struct {
	// Current is the redirector image of the installed release, written by
	// Helm from the chart.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Current string `json:"current"`
	// Previous is the redirector image of the release installed before the
	// last upgrade or rollback, written by the chart's hook before Helm
	// changed anything (meshinit-webhook trust-redirector), so that pods
	// either version injects are admitted while one replaces the other.
	// Never rendered by the chart, so Helm's three-way merge keeps it.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Previous string `json:"previous,omitempty"`
}

// RedirectorTrustList is a list of RedirectorTrusts.
//
// +kubebuilder:object:root=true
type RedirectorTrustList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RedirectorTrust `json:"items"`
}
