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

// Package webhook is meshinit's mutating admission webhook: it adds the
// meshinit-redirect init container, which runs the redirector, to the pods
// that opt in.
//
// Start with [Handler], an admission.Handler for
// sigs.k8s.io/controller-runtime/pkg/webhook. It decodes the pod and calls
// the pure core, mutate, which
//
//   - decides whether the pod is injected (decide.go: a short ordered list
//     of checks: the pod label meshinit.io/inject, hostNetwork, excluded
//     namespaces, the namespace label meshinit.io/injection);
//   - reads the pod's traffic.meshinit.io/* annotations through package
//     redirect (invalid values deny the pod, naming annotation and value);
//   - checks the namespace's enforced PodSecurity level (podsecurity.go);
//   - builds the init container in typed Go (container.go) and the JSON
//     patch that puts it at its placement with the meshinit.io/status
//     annotation (status.go). The webhook is authoritative: an init
//     container of that name is kept only when it is exactly the one built,
//     at its placement; the annotation is never trusted.
//
// [Config] is the injection configuration file; [Serve] runs the HTTPS
// server with health, readiness and metrics endpoints. The server
// (webhookserver.go) bounds request headers and connections; reviews reach
// the handler through a limiter (limit.go) that bounds the memory their
// bodies hold, whoever sends them. The command is
// webhook/cmd/meshinit-webhook; its subcommand trust-redirector (trust.go)
// is the chart's pre-upgrade and pre-rollback hook, which adds the target
// redirector image to the RedirectorTrust the chart's policies read. The
// manifests that register the webhook live in the Helm chart,
// charts/meshinit.
//
// The chart's other injector (injector: policy) does the same inside the
// API server, in CEL written after this package's code
// (charts/meshinit/templates/_inject.tpl); TestPolicyInjectorAgrees runs
// this package's golden pods through both on a real API server, and the
// charts package's tests compare them in-process case by case.
package webhook
