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

// Package charts is meshinit's Helm chart as Go sees it: the chart's files
// (charts/meshinit, embedded in the package) loaded and rendered with Helm's
// Go packages. Tests and tools use it so every manifest has exactly one copy:
// the chart's template. Start with [Render] and [Objects].
//
// The package's tests are every test of what the chart renders: whole
// renders against golden files (testdata/golden), helm lint, the values
// schema, the workloads and access rules, an install with Helm into a real
// API server, the policy injector (inject_*_test.go, see below) and the
// ValidatingAdmissionPolicy (policy_*_test.go), which the rest of this
// comment describes.
//
// # The policy injector
//
// With injector: policy the chart injects meshinit's init container with a
// MutatingAdmissionPolicy instead of the webhook, and refuses what the
// webhook refuses with two ValidatingAdmissionPolicies (their CEL:
// meshinit/templates/_inject.tpl). The tests hold the two injectors side by
// side in-process (inject_twins_test.go: the webhook's handler with the
// chart's config file behind its selectors; the policies' CEL compiled as
// the API server compiles it) and compare every opt-in decision, every list
// value of the shared tables in every annotation, Validate's rules, and the
// chart's values (inject_agreement_test.go); bound the CEL's cost
// (inject_cost_test.go); run the RedirectPolicy's tests in policy mode
// against a second API server (inject_cluster_test.go); and check that a
// later webhook reordering init containers gets meshinit's policy
// reinvoked (inject_reinvocation_test.go). In policy mode the
// RedirectPolicy's policy leaves a pod the injector refuses to that
// refusal: the API server reports the first denial of its policies, in no
// fixed order.
//
// # The ValidatingAdmissionPolicy
//
// The policy is YAML in the chart, its only copy
// (meshinit/templates/policy-*.yaml), and its parameters are RedirectPolicy
// objects (api/v1alpha1; CRD in meshinit/crds/). Its tests render the chart
// and install what it renders into a real API server, or evaluate it
// in-process.
//
// # What the policy enforces
//
// The policy runs inside the API server, after every mutating admission
// webhook. So it holds even when the meshinit webhook is down and its
// failurePolicy is Ignore: a pod that the webhook should have injected but
// did not is rejected (wherever its RedirectPolicy requires a port, and
// under AllowOptOut), instead of running without its traffic going through
// the proxy.
//
// It checks pods on CREATE, and on UPDATE (pods/ephemeralcontainers too)
// when any of their container lists changes (the API server lets images
// change, and the kubelet then restarts the container; ephemeral containers
// run in the pod's network namespace); and the pod templates of
// Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs on
// CREATE and on any UPDATE that changes the template (so `kubectl apply` of
// a bad Deployment fails at once, while an old workload can still be
// scaled, relabelled or deleted). It never looks at kube-system, the
// release namespace, or namespaces labelled meshinit.io/injection=disabled.
//
// A pod (or template) is intercepted as the webhook decides: its namespace
// has meshinit.io/injection=enabled or it has label meshinit.io/inject=true;
// it does not have meshinit.io/inject=false; it does not use hostNetwork.
//
// What a RedirectPolicy requires: under interception Required every port in
// both directions, otherwise the ports it lists. meshinit's init container
// is recognised by what it runs, never by its name or the meshinit.io/status
// annotation: the chart's image (inject.image), no command, exactly
// the arguments the chart configures the webhook to write
// (redirect.Config.Args: `apply` and one --key=value per setting, in the
// settings table's order; the settings only the cluster sets equal to the
// chart's values, the lists a pod sets read below; then --log-format=json
// with inject.logFormat json), no env but the pod's namespace, name
// and UID from the downward API (redirect.PodEnv, exactly), no envFrom,
// devices, working directory, restartPolicy, lifecycle or probes, no mount
// but its own meshinit-no-api-token; and, with inject.placement
// first, the first init container. For each RedirectPolicy that applies,
// the policy rejects:
//
//   - wherever anything is required, a pod or template labelled
//     meshinit.io/inject=false in an opted-in namespace, or using
//     hostNetwork where it would be intercepted (its namespace opted in, or
//     labelled meshinit.io/inject=true);
//   - an intercepted pod without meshinit's init container, or with an init
//     container named meshinit-redirect that is not meshinit's, wherever
//     anything is required or interception is AllowOptOut. Pods only: the
//     webhook mutates pods, never templates, so a template cannot be
//     expected to carry the container;
//   - on an intercepted pod or template, a container other than meshinit's
//     (ephemeral ones too) that is privileged, names a capability with
//     anything but ASCII among those it adds, adds more than 16 or drops
//     more than 64, or adds NET_ADMIN, NET_RAW,
//     SYS_ADMIN or ALL (compared upper-cased, without CAP_), unless nothing
//     is required and interception is Optional; where a port is required,
//     one that is not a trusted proxy container (policy-trust.tpl:
//     policy.proxyContainers, for what it runs and where) and does not drop
//     ALL, adds anything but the addable capabilities, sets procMount other
//     than Default or mounts a trusted container's volume writable; where
//     outbound ports are required, one that also does not run as an
//     explicit UID and GID other than the proxy's (its own runAsUser and
//     runAsGroup or the pod's) or allows privilege escalation; and a pod
//     using hostPID, hostIPC or a volume the node serves
//     (policy-containers.tpl; docs/attackers-checklist.md says why);
//   - in the lists a pod sets, in its annotations and (once injected) in
//     meshinit's arguments: traffic.meshinit.io/exclude-inbound-ports or
//     exclude-outbound-ports listing a required port (a range or "*" that
//     covers it counts; under Required, any entry); include-inbound-ports or
//     include-outbound-ports that is not "*" and leaves one out (under
//     Required, any but "*"); while outbound ports are required,
//     exclude-outbound-cidrs with an entry outside every
//     allowedOutboundCIDRExclusions entry, and include-outbound-cidrs other
//     than "*" narrowing an IP family the allowed ones do not cover whole;
//     a required inbound port that the rule plan never captures (either
//     proxy port, as annotated or in the arguments, or an ignored port:
//     redirect.Config.InboundCaptured, compared in policy_direction_test.go);
//   - a list that cannot be read (so what it takes around the proxy cannot be
//     checked), when the RedirectPolicy requires ports in its direction.
//     Every list is refused first when over the list limits (4096 bytes,
//     256 entries), at a cost that does not grow with its size.
//
// The CEL reads port lists exactly as redirect.ParsePortList does and CIDR
// lists as redirect.ParseCIDRList does (both refuse IPv4-mapped IPv6
// addresses, which Kubernetes' cidr() and ip() cannot read); one table of values
// for each (policy_portlists_test.go, policy_cidrlists_test.go) is run through both,
// in-process and through a real API server. What the policy expects of
// meshinit's container is checked against the redirect package and the
// webhook, run in-process with the same chart values (policy_settings_test.go).
//
// # Which RedirectPolicies apply: additive, never replacing
//
// Two bindings evaluate the policy once per RedirectPolicy they select: the
// -cluster binding every RedirectPolicy in the release namespace (the chart
// creates one named "default"), for all namespaces; the -namespace binding
// every RedirectPolicy in the request's own namespace. Each is rendered
// twice, with the two ways a pod opts in, so that nothing else is evaluated:
// for every pod and workload of a namespace labelled
// meshinit.io/injection=enabled, and (-labelled) for the pods and workloads
// labelled meshinit.io/inject=true elsewhere (a workload by its own labels). A request must pass
// every evaluation, so a namespace's RedirectPolicy adds to the cluster-wide
// ones and can never relax them: the strictest interception wins and the
// required ports add up. Denials name the RedirectPolicy that required them.
// When a binding selects no RedirectPolicy it admits
// (parameterNotFoundAction: Allow): nothing is required until a
// RedirectPolicy says so. Without the RedirectPolicy CRD the policy cannot be
// evaluated, and failurePolicy (Fail by default) rejects every request it
// matches: uninstall the chart before deleting the CRD.
//
// # Cost
//
// One evaluation may cost celconfig.RuntimeCELCostBudget (10,000,000) in
// total, and each expression celconfig.PerCallLimit (1,000,000). With the
// most required ports (64 each way) and allowed CIDRs (64), a pod of 110
// containers and all ten lists (five annotations, five arguments) at the
// most entries allowed (interception AllowOptOut: under Required the lists
// cost less) uses about 21% of the budget, messages included
// (TestCostHeadroom -v prints the figures). A list over the limits is
// refused at a cost that does not depend on its size (TestCostOfPaddedLists),
// so padding cannot exhaust the budget and slip through under
// policy.failurePolicy Ignore.
//
// # The PodSecurity guard
//
// meshinit/templates/podsecurity-*.yaml is a second ValidatingAdmissionPolicy:
// PodSecurity baseline or restricted, as the PodSecurity admission plugin's
// checks at v1.37 decide it, in namespaces labelled meshinit.io/pod-security,
// exempting exactly meshinit's init container (recognised by the
// RedirectPolicy's policy's own CEL, meshinit.policy.redirectVariables) from
// the capabilities check. Its tests (podsecurity_*_test.go) compare it with
// the plugin's own fixtures and checks (k8s.io/pod-security-admission), in
// process and beside the plugin on a real API server; docs/podsecurity.md
// says what it enforces.
package charts
