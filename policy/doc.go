// Package policy holds the tests of meshinit's ValidatingAdmissionPolicy. The
// policy itself is YAML in the Helm chart, its only copy
// (charts/meshinit/templates/policy-*.yaml), and its parameters are
// RedirectPolicy objects (api/v1alpha1; CRD in charts/meshinit/crds/). The
// tests render the chart with internal/chart and install what it renders.
//
// # What the policy enforces
//
// The policy runs inside the API server, after every mutating admission
// webhook. So it holds even when the meshinit webhook is down and its
// failurePolicy is Ignore: a pod that the webhook should have injected but
// did not is rejected (unless its RedirectPolicy says interception is
// Optional), instead of running without its traffic going through the proxy.
//
// It checks pods on CREATE, and the pod templates of Deployments,
// StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs on CREATE and on
// any UPDATE that changes the template (so `kubectl apply` of a bad
// Deployment fails at once, while an old workload can still be scaled,
// relabelled or deleted). It never looks at kube-system, the release
// namespace, or namespaces labelled meshinit.io/injection=disabled.
//
// A pod (or template) is intercepted as the webhook decides: its namespace
// has meshinit.io/injection=enabled or it has label meshinit.io/inject=true;
// it does not have meshinit.io/inject=false; it does not use hostNetwork.
// For each RedirectPolicy that applies, the policy rejects:
//
//   - a pod or template labelled meshinit.io/inject=false in an opted-in
//     namespace, when interception is Required;
//   - an intercepted pod without the meshinit-redirect init container, unless
//     interception is Optional. Pods only: the webhook mutates pods, never
//     templates, so a template cannot be expected to carry the container;
//   - on an intercepted pod or template, traffic.meshinit.io/exclude-inbound-ports
//     or traffic.meshinit.io/exclude-outbound-ports listing a required port
//     (a range or "*" that covers it counts), and
//     traffic.meshinit.io/include-inbound-ports that is not "*" and leaves one
//     out;
//   - a port-list annotation that cannot be read (so its required ports
//     cannot be checked), when the RedirectPolicy requires ports in that
//     direction.
//
// The CEL reads port lists exactly as redirect.ParsePortList does; one table
// of values (portlists_test.go) is run through both, in-process and through a
// real API server.
//
// # Which RedirectPolicies apply: additive, never replacing
//
// Two bindings evaluate the policy once per RedirectPolicy they select: the
// -cluster binding every RedirectPolicy in the release namespace (the chart
// creates one named "default"), for all namespaces; the -namespace binding
// every RedirectPolicy in the request's own namespace. A request must pass
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
// most required ports (64 each way) and a pod of 100 containers, three
// annotation lists of 100 entries each use about 2.4% of the budget and of
// 1,000 entries (half of them ranges) about 24% (TestCostHeadroom -v prints
// the figures). Checking a required port against a range costs more than
// against a single port: with 64 required ports, a list of about 2,000
// ranges makes one expression reach its per-call limit, and the request is
// then rejected (failurePolicy Fail).
package policy
