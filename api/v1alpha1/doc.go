// Package v1alpha1 holds the Go types of meshinit's policy-parameter API,
// group meshinit.io, version v1alpha1: the [RedirectPolicy] kind, which the
// ValidatingAdmissionPolicy in charts/meshinit reads as its parameters.
//
// Start with [RedirectPolicySpec]. The CRD manifest
// (charts/meshinit/crds/meshinit.io_redirectpolicies.yaml) and
// zz_generated.deepcopy.go are generated from these types by controller-gen
// (`make generate`); never edit them by hand. Like cert-manager's API
// packages, this one imports only k8s.io/apimachinery.
//
// +kubebuilder:object:generate=true
// +groupName=meshinit.io
package v1alpha1
