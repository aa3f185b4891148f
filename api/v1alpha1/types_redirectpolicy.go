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
	// them in traffic.meshinit.io/exclude-inbound-ports, its
	// traffic.meshinit.io/include-inbound-ports must be "*" (the default) or
	// list them, and neither proxy port may be one of them (the inbound
	// rules return both). While any port is required, a pod may not opt
	// out, use hostNetwork or arrive without meshinit's init container,
	// whatever Interception says, and its containers may not keep
	// capabilities beyond a short list (see Interception). Under
	// Interception Required every port is required. Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RequiredInboundPorts []Port `json:"requiredInboundPorts,omitempty"`

	// RequiredOutboundPorts must reach the proxy outbound: a pod may not list
	// them in traffic.meshinit.io/exclude-outbound-ports, and its
	// traffic.meshinit.io/include-outbound-ports must cover them. While any
	// is required, every container but meshinit's and the chart's trusted
	// proxy containers must also run as an explicit UID and GID other than
	// the proxy's (runAsUser, runAsGroup), with allowPrivilegeEscalation
	// false: the redirect rules exempt the proxy's UID and GID. With port
	// 53 (or Interception Required), a pod may not capture less DNS than
	// the chart (traffic.meshinit.io/capture-dns). Default: none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +optional
	RequiredOutboundPorts []Port `json:"requiredOutboundPorts,omitempty"`
	// AllowedOutboundCIDRExclusions are the destinations a pod may send
	// around the proxy while RequiredOutboundPorts is set or Interception is
	// Required: every entry of its
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
	// AllowProxyPortOverride lets a pod set the proxy's outbound port
	// (traffic.meshinit.io/outbound-proxy-port, which the inbound rules
	// return too) while any port is required, its inbound port
	// (inbound-proxy-port) while inbound ports are, and its DNS proxy port
	// (dns-proxy-port) while outbound port 53 is, to other values than the
	// chart's (Interception Required requires every port). Without it, a
	// pod could point a proxy port at an app port, or captured DNS at a
	// listener of its own, taking that traffic around the proxy. Even with
	// it, a proxy port may not be a required inbound port. Default: false.
	// +optional
	AllowProxyPortOverride bool `json:"allowProxyPortOverride,omitempty"`

	// Interception says how much must reach the proxy: under Required every
	// port, both ways; under AllowOptOut and Optional the ports listed.
	// Wherever anything is required, a pod in an opted-in namespace may not
	// opt out (label meshinit.io/inject=false), use hostNetwork or arrive
	// without meshinit's init container; every container but meshinit's and
	// the trusted proxy containers must drop ALL capabilities (adding back
	// at most AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD,
	// NET_BIND_SERVICE, SETFCAP, SETPCAP, SYS_CHROOT) and keep procMount
	// Default; and the pod may not use hostPID, hostIPC or volumes the node
	// serves. Where nothing is required, AllowOptOut lets a pod opt out or
	// use hostNetwork but still refuses one that arrives without meshinit's
	// container, and privileged containers or ones adding NET_ADMIN,
	// NET_RAW, SYS_ADMIN or ALL; Optional checks nothing. Default: Required.
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
	// InterceptionRequired requires every port, both ways: a pod in an
	// opted-in namespace may not opt out, use hostNetwork, arrive without
	// meshinit's init container (say, because the webhook was unavailable
	// and its failurePolicy is Ignore) or with a container of that name that
	// is not meshinit's, list any port in an exclude list or narrow an
	// include list; and its containers are held to what RequiredInboundPorts
	// and RequiredOutboundPorts hold them to.
	InterceptionRequired Interception = "Required"
	// InterceptionAllowOptOut requires the ports listed. With none listed,
	// it admits pods that opt out with label meshinit.io/inject=false and
	// hostNetwork pods, but refuses an intercepted pod without meshinit's
	// init container and containers that are privileged or add NET_ADMIN,
	// NET_RAW, SYS_ADMIN or ALL.
	InterceptionAllowOptOut Interception = "AllowOptOut"
	// InterceptionOptional requires the ports listed; with none listed, it
	// checks nothing.
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
