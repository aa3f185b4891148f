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
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meshinit/meshinit/charts"
)

// releaseNamespace is where the tests install the chart: its RedirectPolicies
// apply to every namespace.
const releaseNamespace = "meshinit-system"

// chartPolicyObjects renders the chart with values and returns the policies'
// objects, in install order: the CRDs (RedirectPolicy, RedirectorTrust), the
// RedirectorTrust naming the trusted redirector images, the ValidatingAdmissionPolicies, their bindings, the default RedirectPolicy
// and, with injector policy, the MutatingAdmissionPolicy and its binding.
// Everything else in the chart (the webhook) is left out.
func chartPolicyObjects(t testing.TB, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs := charts.MustObjects(t, charts.Options{Namespace: releaseNamespace, Values: values, IncludeCRDs: true, APIVersions: []string{mapAPI}}, false)
	out := charts.Find(objs, "CustomResourceDefinition", "")
	for _, kind := range []string{"RedirectorTrust", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "RedirectPolicy", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"} {
		out = append(out, charts.Find(objs, kind, "")...)
	}
	return out
}

// chartPolicy is the chart's ValidatingAdmissionPolicy, rendered with values.
func chartPolicy(t testing.TB, values map[string]any) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	charts.DecodeOne(t, chartPolicyObjects(t, values), "ValidatingAdmissionPolicy", policyName, &vap)
	return &vap
}
