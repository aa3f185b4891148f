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
