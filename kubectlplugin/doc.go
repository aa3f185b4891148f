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

// Package kubectlplugin is `kubectl meshinit` (the binary
// kubectl-meshinit, cmd/kubectl-meshinit): the command that tells an
// operator what is wrong with meshinit in a cluster and what to run about
// it.
//
//   - check: the installation (checks.go, certchecks.go), and the data
//     plane summed up (dataplane.go);
//   - check --pre: a cluster before installing (preinstall.go gathers,
//     prechecks.go decides, with the chart built into the plugin and the
//     webhook's own Review);
//   - pods: the pods of opted-in namespaces, current, stale, failing or not
//     injected and why, with their meshinit-redirect's status and other
//     redirectors (podstatus.go), by workload with the command that updates
//     them (pods.go, workloads.go);
//   - audit: the running pods and workload templates the RedirectPolicies
//     in force now would refuse, as the API server itself answers a
//     server-side dry-run create of each (audit.go);
//   - explain POD: a pod's redirect settings and the iptables rules they
//     program (explain.go);
//   - version: the plugin's, the chart's and the webhook's versions
//     (version.go).
//
// Every Finding has a stable Code (codes.go), documented in docs/codes/,
// which hack/docs generates from Codes. Output is a table, or kubectl's
// printers (output.go); completion.go sets up shell completion.
//
// As in cert-manager's check: gatherers read the cluster (install.go,
// served.go, podsgather.go, auditgather.go), pure functions of what they
// read decide (the checks, classifyPod, groupPods, verdict, explain), and
// print.go renders the tables. No rule is written twice: whether a pod
// is injected and with which init container is webhook.Review, the
// webhook's own pure core, under the webhook's configuration as the chart
// installed it (webhook.ParseConfig); the rules are redirect.NewPlan's,
// as `redirector print` shows them; certificates are parsed by package
// certs. Start with Main (main.go).
package kubectlplugin
