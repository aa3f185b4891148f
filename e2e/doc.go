// Package e2e holds meshinit's end-to-end tests: the Helm chart installed
// on a real cluster, pods whose traffic the redirector sends to a test
// proxy, and the policy refusing what it should, each checked by what can be
// observed from outside (connections, objects, admission errors).
//
// The tests run against the cluster KUBECONFIG names, or else bring up the
// local single-node cluster (e2e/cluster) and take it down at the end unless
// it was already running. They build every image they need (redirector,
// webhook, test app) and load it into the cluster's containerd, so the
// cluster must be the local one or share its containerd socket. They skip,
// saying why, when not root or when the cluster's binaries or containerd are
// missing (`make tools-cluster`, `hack/install-debian-packages.sh --cluster`).
package e2e
