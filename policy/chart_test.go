package policy

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshinit/meshinit/charts"
)

// releaseNamespace is where the tests install the chart: its RedirectPolicies
// apply to every namespace.
const releaseNamespace = "meshinit-system"

// chartPolicyObjects renders the chart with values and returns the policy's
// objects, in install order: the RedirectPolicy CRD, the
// ValidatingAdmissionPolicy, its bindings and the default RedirectPolicy.
// Everything else in the chart (the webhook) is left out.
func chartPolicyObjects(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, err := charts.Objects(charts.Options{Namespace: releaseNamespace, Values: values, IncludeCRDs: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, kind := range []string{"CustomResourceDefinition", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "RedirectPolicy"} {
		for _, o := range objs {
			if o.GetKind() == kind && (kind != "CustomResourceDefinition" || o.GetName() == "redirectpolicies.meshinit.io") {
				out = append(out, o)
			}
		}
	}
	return out
}

// chartPolicy is the chart's ValidatingAdmissionPolicy, rendered with values.
func chartPolicy(t *testing.T, values map[string]any) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	for _, o := range chartPolicyObjects(t, values) {
		if o.GetKind() == "ValidatingAdmissionPolicy" {
			var vap admissionregistrationv1.ValidatingAdmissionPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &vap); err != nil {
				t.Fatal(err)
			}
			return &vap
		}
	}
	t.Fatal("the chart renders no ValidatingAdmissionPolicy")
	return nil
}
