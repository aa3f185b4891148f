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

// Package cluster runs meshinit's local single-node Kubernetes cluster for
// end-to-end tests, built from upstream parts on this machine, without
// Docker: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kubelet and kube-proxy at KubernetesVersion (`make tools-cluster` builds
// them), with containerd, runc and the CNI plugins from Debian's packages
// (`hack/install-debian-packages.sh --cluster`). Root only.
//
// Start with Up, which is idempotent and returns a Cluster (Kubeconfig,
// LoadImage, Kubectl); Down undoes it. `localcluster up|down`
// (e2e/cmd/localcluster, `make cluster-up`, `make cluster-down`) runs them.
//
// # Isolation
//
// The cluster has its own everything, so it touches nothing else on the
// machine (defaults in Options):
//
//   - state: everything it writes is in /var/lib/meshinit-e2e (state, not
//     a cache: Down removes it), including containerd's root, state, socket,
//     runc's state and the pods' network namespaces, the kubelet's root and
//     pod logs, the CNI configuration and address leases, logs of every
//     component (logs/) and the record of what Up started (state.json);
//   - network: its own address 10.250.0.1/32 on lo, where the API server
//     and the kubelet listen and are advertised (so the `kubernetes`
//     Service works, and the API server reaches the kubelet for
//     `kubectl logs` at the node's InternalIP); its own bridge
//     meshinit-e2e0 with pods in 10.250.1.0/24, no masquerading, so no
//     traffic leaves the machine; Services in 10.250.2.0/24; ports 16xxx
//     (see Ports); etcd and the other components' endpoints on 127.0.0.1;
//   - images: no registry. Up builds the sandbox ("pause") image from
//     e2e/cmd/pause with internal/images' BuildGoImage and imports it;
//     tests build theirs the same way (or with internal/images/oci) and
//     LoadImage them, then run them with imagePullPolicy Never.
//
// What cannot be moved, and how Down cleans it: Kubernetes' iptables chain
// names are fixed (KUBE-SERVICES, ...), so Up refuses to start when another
// node's chains exist, and Down runs `kube-proxy --cleanup` and removes the
// KUBE-FIREWALL chain it leaves; the kubelet is told not to make its own
// (makeIPTablesUtilChains: false). The bridge CNI plugin turns on IP
// forwarding and the kubelet sets its kernel tunables (kernel.panic,
// vm.overcommit_memory, ...): Up records those settings and Down restores
// them. Fixed paths: containerd's shim sockets (/run/containerd/s/<hash of
// socket, namespace, id>), libcni's cache (/var/lib/cni/results), the
// kubelet's links to pod logs (/var/log/containers) and device plugin
// socket (/var/lib/kubelet/device-plugins), the pods' cgroups
// (/sys/fs/cgroup/*/k8s.io/<id>: with its QoS cgroups off, the kubelet
// gives containerd no parent): Down removes exactly the cluster's entries,
// and each of these directories if Up found it absent.
//
// # Stopping
//
// Down stops the controllers and the kubelet, force-removes every
// container through the cluster's containerd (nothing restarts them), then
// stops the rest (SIGTERM, SIGKILL after 10 s: the API server can hang on
// once etcd is gone), stops leftover shims, force-deletes through runc's
// state any container that outlived containerd (if containerd died first,
// nothing else knows them), and removes the mounts, the bridge, the address
// and the state directory. It stops only processes it
// recorded (by pid and start time) and shims serving its containerd.
//
// # DNS
//
// There is no cluster DNS: the kubelet has no clusterDNS and an empty
// resolvConf, so pods resolve nothing. meshinit's tests do not need it:
// the API server calls webhooks through their Service by looking up its
// endpoints itself, in-cluster clients find the API server through
// KUBERNETES_SERVICE_HOST (an IP), and tests address pods and Services by
// IP. Add CoreDNS here if a test ever needs names.
//
// # Sharing
//
// One cluster per machine at a time (the iptables chains). Up and Down of
// the same StateDir are serialized across processes, and a running healthy
// cluster is reused, so test packages may all call Up; but Down stops it
// for everyone.
package cluster
