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

// Package harness is what the end-to-end tests (package e2e), the pod
// start-up benchmark and `make demo` (e2e/cmd/demo) share: a cluster to run
// on (the one KUBECONFIG names, or the local one from e2e/cluster),
// meshinit's images built exactly as `make images` builds them
// (internal/images) and loaded into the node's containerd, the chart
// installed, upgraded, tested and uninstalled with Helm's Go packages as
// `helm upgrade --install`, `helm test` and `helm uninstall` do, and the
// test pods (the test app and test proxy) with ways to look at them.
//
// Every function returns errors rather than failing a test, so that the
// demo can print them; the tests wrap what they use.
package harness
