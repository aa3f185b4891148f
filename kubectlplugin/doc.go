// Package kubectlplugin is `kubectl meshinit` (the binary
// kubectl-meshinit, cmd/kubectl-meshinit): the command that tells an
// operator what is wrong with meshinit in a cluster and what to run about
// it.
//
//   - check: the installation (checks.go, certchecks.go);
//   - pods: the pods of opted-in namespaces, current, stale or not injected
//     and why, by workload with the command that updates them (pods.go,
//     workloads.go);
//   - audit: the running pods and workload templates the RedirectPolicies
//     in force now would refuse, as the API server itself answers a
//     server-side dry-run create of each (audit.go);
//   - explain POD: a pod's redirect settings and the iptables rules they
//     program (explain.go).
//
// As in cert-manager's check: gatherers read the cluster (install.go,
// served.go, podsgather.go, auditgather.go), pure functions of what they
// read decide (the checks, classifyPod, groupPods, verdict, explain), and
// print.go renders tables or JSON. No rule is written twice: whether a pod
// is injected and with which init container is webhook.Review, the
// webhook's own pure core, under the webhook's configuration as the chart
// installed it (webhook.ParseConfig); the rules are redirect.NewPlan's,
// as `redirector print` shows them; certificates are parsed by package
// certs. Start with Main (main.go).
package kubectlplugin
