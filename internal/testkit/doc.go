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

// Package testkit is what meshinit's tests share, so that each exists once:
//
//   - [StartAPIServer] and [Shared]: a kube-apiserver and etcd
//     (controller-runtime's envtest, from the binaries in
//     KUBEBUILDER_ASSETS) with an admin's config, kubeconfig file and
//     kubectl, extra API server flags and an audit log where a test needs
//     them; [NeedAPIServer] and [NeedRoot] skip a test, saying why, where
//     what it needs is missing (`make test`, as CI runs it as root, has it
//     all, so nothing skips there);
//   - [Namespace], creating one ready for pods, and [RunName], naming it
//     afresh in each run of go test -count=N on a shared API server;
//   - [Eventually], to wait for a condition, and [FreePort];
//   - [PatchingWebhook], another mutating webhook beside meshinit's;
//   - [Golden], comparing output with a file in testdata, -update rewriting
//     it.
//
// The objects the chart renders are found with package charts' own helpers
// (MustObjects, Find, DecodeOne, MustObject), so a test kit user does not
// link Helm unless it renders the chart.
//
// It is imported by tests only.
package testkit
