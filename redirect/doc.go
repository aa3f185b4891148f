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
