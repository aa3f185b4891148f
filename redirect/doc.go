// Package redirect is meshinit's traffic-redirect library, shared by the
// admission webhook (which turns pod annotations into redirector flags) and the
// redirector init container (which turns those flags into iptables rules).
//
// Everything flows through one [Config]:
//
//	webhook's redirect map --FromSettings--> Config (the cluster's base)
//	pod annotations --FromAnnotations--> Config --Args--> redirector flags
//	redirector flags --ParseFlags--> Config --NewPlan--> Plan --Apply--> kernel
//
// Start with [Config] and [Defaults]. The settings table in settings.go is the
// single place that names each setting's flag and annotation, so the webhook
// and the redirector can never disagree. [NewPlan] is pure: it decides the
// chains and rules. Only [Apply] and [Cleanup] run iptables binaries. Before
// changing anything, Apply reads both backends' tables and refuses when
// rules of another owner would take the traffic first (conflicts.go, a pure
// decision over the parsed iptables-save).
package redirect
