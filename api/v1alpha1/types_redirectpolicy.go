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
	// them in traffic.meshinit.io/exclude-outbound-ports. With port 53 (or
	// Interception Required), a pod may not capture less DNS than the chart
	// (traffic.meshinit.io/capture-dns). Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RequiredOutboundPorts []Port `json:"requiredOutboundPorts,omitempty"`
	// AllowedOutboundCIDRExclusions are the destinations a pod may send
	// around the proxy while RequiredOutboundPorts is set: every entry of its
	// traffic.meshinit.io/exclude-outbound-cidrs must lie inside one of
	// them, and its traffic.meshinit.io/include-outbound-cidrs (which leaves
	// out every destination it does not list) must be "*" (the default)
	// unless these cover each IP family it narrows whole (0.0.0.0/0,
	// ::/0). Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	AllowedOutboundCIDRExclusions []CIDR `json:"allowedOutboundCIDRExclusions,omitempty"`
	// AllowedOutboundUIDExclusions are the UIDs a pod may list in
	// traffic.meshinit.io/exclude-outbound-uids (whose processes' traffic,
	// DNS included, bypasses the proxy) while RequiredOutboundPorts is set
	// or Interception is Required: every entry must be one of them.
	// Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	AllowedOutboundUIDExclusions []ID `json:"allowedOutboundUIDExclusions,omitempty"`
	// AllowedOutboundGIDExclusions are the same for
	// traffic.meshinit.io/exclude-outbound-gids. Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	AllowedOutboundGIDExclusions []ID `json:"allowedOutboundGIDExclusions,omitempty"`
	// AllowedInboundInterfaceExclusions are the interfaces a pod may list in
	// traffic.meshinit.io/exclude-inbound-interfaces (whose inbound traffic
	// is not captured) while RequiredInboundPorts is set or Interception is
	// Required: every entry must be one of them. Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	AllowedInboundInterfaceExclusions []InterfaceName `json:"allowedInboundInterfaceExclusions,omitempty"`
	// AllowProxyIdentityOverride lets a pod set the proxy's UID and GID
	// (traffic.meshinit.io/proxy-uid, proxy-gid; their traffic is never
	// redirected) to other values than the chart's while
	// RequiredOutboundPorts is set or Interception is Required. Without it,
	// a pod's author could name their own image's UID as the proxy's, which
	// the API server cannot tell from a real proxy. Default: false.
	// +optional
	AllowProxyIdentityOverride bool `json:"allowProxyIdentityOverride,omitempty"`
	// AllowProxyPortOverride lets a pod set the proxy's inbound and outbound
	// ports (traffic.meshinit.io/inbound-proxy-port, outbound-proxy-port)
	// to other values than the chart's while ports are required in that
	// direction or Interception is Required, and its DNS proxy port
	// (traffic.meshinit.io/dns-proxy-port) while outbound port 53 is
	// required or Interception is Required. Without it, a pod could point
	// the inbound proxy port at an app port, or captured DNS at a listener
	// of its own, taking that traffic around the proxy. Default: false.
	// +optional
	AllowProxyPortOverride bool `json:"allowProxyPortOverride,omitempty"`

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

// CIDR is an IP prefix in CIDR notation with no bits set after the prefix
// length, e.g. 10.0.0.0/8 or fd00::/8 (IPv4-mapped IPv6 prefixes are not
// accepted).
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="must be a CIDR such as 10.0.0.0/8 or fd00::/8, with no bits set after the prefix length"
type CIDR string

// ID is a numeric UID or GID.
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=4294967294
type ID int64

// InterfaceName is a network interface name as meshinit accepts it: 1-15
// letters, digits, "_", "." or "-", not starting with "-" or "." (no
// wildcards).
// +kubebuilder:validation:MaxLength=15
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$`
type InterfaceName string

// Interception says whether a pod may run without meshinit's init container.
// +kubebuilder:validation:Enum=Required;AllowOptOut;Optional
type Interception string

const (
	// InterceptionRequired rejects, in an opted-in namespace, a pod or
	// workload pod template that opts out with label meshinit.io/inject=false
	// or uses hostNetwork; an intercepted pod that arrives without meshinit's
	// init container (say, because the webhook was unavailable and its
	// failurePolicy is Ignore), or with a container of that name that is not
	// meshinit's (another image, command or arguments); and, on intercepted
	// pods and templates, containers other than the chart's proxy containers
	// that run as the proxy UID or GID, and containers other than meshinit's
	// that are privileged or add NET_ADMIN, NET_RAW, SYS_ADMIN or ALL.
	InterceptionRequired Interception = "Required"
	// InterceptionAllowOptOut admits pods that opt out with label
	// meshinit.io/inject=false and hostNetwork pods, but otherwise checks
	// what Required checks, except the proxy UID and GID (checked only when
	// the policy requires outbound ports).
	InterceptionAllowOptOut Interception = "AllowOptOut"
	// InterceptionOptional checks only the required ports (and, when
	// outbound ports are required, the CIDR lists and the proxy UID and GID)
	// of intercepted pods; pods that opt out or arrive without the init
	// container are admitted.
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
