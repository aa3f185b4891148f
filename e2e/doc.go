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

// Package e2e holds meshinit's end-to-end tests: the Helm chart installed
// on a real cluster, pods whose traffic the redirector sends to a test
// proxy, and the policy refusing what it should, each checked by what can be
// observed from outside (connections, objects, admission errors).
//
// The tests run against the cluster KUBECONFIG names, or else bring up the
// local single-node cluster (e2e/cluster) and take it down at the end unless
// it was already running. They build meshinit's images as `make images` does
// and load them into the node's containerd (for another cluster: push them
// to the registry prefix MESHINIT_E2E_REGISTRY, or load them through the
// node socket MESHINIT_E2E_CONTAINERD), and install the chart with Helm's Go
// packages;
// e2e/harness holds all of that, shared with `make demo`. They skip, saying
// why, when not root or when the cluster's binaries or containerd are missing
// (`make tools-cluster`, `hack/install-debian-packages.sh --cluster`).
package e2e
