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

// Package v1alpha1 holds the Go types of meshinit's policy-parameter API,
// group meshinit.io, version v1alpha1: the [RedirectPolicy] kind, which the
// ValidatingAdmissionPolicy in charts/meshinit reads as its parameters, and
// the [RedirectorTrust] kind, the redirector images the chart's policies
// accept (one object, in the release namespace, that the chart and its
// upgrade hook write).
//
// Start with [RedirectPolicySpec]. The CRD manifests
// (charts/meshinit/crds/) and
// zz_generated.deepcopy.go are generated from these types by controller-gen
// (`make generate`); never edit them by hand. Like cert-manager's API
// packages, this one imports only k8s.io/apimachinery.
//
// +kubebuilder:object:generate=true
// +groupName=meshinit.io
package v1alpha1
