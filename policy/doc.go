// Package policy holds the tests of meshinit's ValidatingAdmissionPolicy; the
// policy itself is YAML in the Helm chart (charts/meshinit/templates/policy-*),
// and its parameters are RedirectPolicy objects (api/v1alpha1).
package policy
