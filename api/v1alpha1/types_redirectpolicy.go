package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RedirectPolicy is a set of requirements that meshinit's
// ValidatingAdmissionPolicy enforces on the pods it intercepts, and on the pod
// templates of workloads that create them.
//
// Where a RedirectPolicy lives decides what it applies to: one in meshinit's
// own (release) namespace applies to every namespace; one in any other
// namespace applies to that namespace only. Every RedirectPolicy that applies
// is enforced on its own, so a namespace's policies add to the cluster-wide
// ones and can never relax them. With no RedirectPolicy at all, nothing is
// required and every pod is admitted.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=meshinit
// +kubebuilder:printcolumn:name="Inbound",type=string,JSONPath=`.spec.requiredInboundPorts`
// +kubebuilder:printcolumn:name="Outbound",type=string,JSONPath=`.spec.requiredOutboundPorts`
// +kubebuilder:printcolumn:name="Interception",type=string,JSONPath=`.spec.interception`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RedirectPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says what the policy requires.
	// +kubebuilder:default={}
	// +optional
	Spec RedirectPolicySpec `json:"spec"`
}

// RedirectPolicySpec is what a RedirectPolicy requires of the pods meshinit
// intercepts: pods in namespaces labelled meshinit.io/injection=enabled, and
// pods labelled meshinit.io/inject=true elsewhere.
type RedirectPolicySpec struct {
	// RequiredInboundPorts must reach the proxy inbound: a pod may not list
	// them in traffic.meshinit.io/exclude-inbound-ports, and its
	// traffic.meshinit.io/include-inbound-ports must be "*" (the default) or
	// list them. Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RequiredInboundPorts []Port `json:"requiredInboundPorts,omitempty"`

	// RequiredOutboundPorts must reach the proxy outbound: a pod may not list
	// them in traffic.meshinit.io/exclude-outbound-ports. Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RequiredOutboundPorts []Port `json:"requiredOutboundPorts,omitempty"`

	// Interception says whether a pod in an opted-in namespace may run without
	// meshinit. Default: Required.
	// +kubebuilder:default=Required
	// +optional
	Interception Interception `json:"interception,omitempty"`
}

// Port is a TCP port number.
// +kubebuilder:validation:Minimum=1
// +kubebuilder:validation:Maximum=65535
type Port int32

// Interception says whether a pod may run without meshinit's init container.
// +kubebuilder:validation:Enum=Required;AllowOptOut;Optional
type Interception string

const (
	// InterceptionRequired rejects a pod in an opted-in namespace that opts
	// out with label meshinit.io/inject=false, and an intercepted pod that
	// arrives without the meshinit-redirect init container (say, because the
	// webhook was unavailable and its failurePolicy is Ignore). Workload pod
	// templates that opt out are rejected too.
	InterceptionRequired Interception = "Required"
	// InterceptionAllowOptOut admits pods that opt out with label
	// meshinit.io/inject=false, but still rejects an intercepted pod that
	// arrives without the meshinit-redirect init container.
	InterceptionAllowOptOut Interception = "AllowOptOut"
	// InterceptionOptional checks only the required ports of intercepted
	// pods; pods that opt out or arrive without the init container are
	// admitted.
	InterceptionOptional Interception = "Optional"
)

// RedirectPolicyList is a list of RedirectPolicy objects.
//
// +kubebuilder:object:root=true
type RedirectPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []RedirectPolicy `json:"items"`
}
