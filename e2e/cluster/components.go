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

package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// A component is one program the cluster runs: its binary (in BinDir, or a
// Debian package's path) and its command line.
type component struct {
	name string
	bin  string
	args []string
}

func (o *Options) bin(name string) string { return filepath.Join(o.BinDir, name) }

func etcd(o *Options) component {
	client := fmt.Sprintf("http://127.0.0.1:%d", o.Ports.EtcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", o.Ports.EtcdPeer)
	return component{name: "etcd", bin: o.bin("etcd"), args: []string{
		"--name", o.Name,
		"--data-dir", o.path("etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", o.Name + "=" + peer,
		// A test cluster: its data dies with it, so skip the fsyncs.
		"--unsafe-no-fsync",
	}}
}

func containerd(o *Options) component {
	return component{name: "containerd", bin: "/usr/bin/containerd", args: []string{
		"--config", o.path("containerd", "config.toml"),
	}}
}

func apiServer(o *Options) component {
	return component{name: "kube-apiserver", bin: o.bin("kube-apiserver"), args: []string{
		"--etcd-servers", fmt.Sprintf("http://127.0.0.1:%d", o.Ports.EtcdClient),
		"--bind-address", o.Address.String(),
		"--advertise-address", o.Address.String(),
		"--secure-port", strconv.Itoa(int(o.Ports.APIServer)),
		"--cert-dir", o.path("kube-apiserver"),
		"--tls-cert-file", o.pkiPath("apiserver.crt"),
		"--tls-private-key-file", o.pkiPath("apiserver.key"),
		"--client-ca-file", o.pkiPath("ca.crt"),
		"--token-auth-file", o.pkiPath("tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", o.pkiPath("sa.key"),
		"--service-account-signing-key-file", o.pkiPath("sa.key"),
		"--service-cluster-ip-range", o.ServiceCIDR.String(),
		// The node is reached at its InternalIP (Address), where the
		// kubelet listens, with a client certificate it trusts: then
		// `kubectl logs` and `exec` work.
		"--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-client-certificate", o.pkiPath("kubelet-client.crt"),
		"--kubelet-client-key", o.pkiPath("kubelet-client.key"),
		"--allow-privileged",
		// /debug/pprof (admins only): make bench-injection profiles admission.
		"--profiling=true",
	}}
}

func controllerManager(o *Options) component {
	kc := o.componentKubeconfig("kube-controller-manager")
	return component{name: "kube-controller-manager", bin: o.bin("kube-controller-manager"), args: []string{
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--service-account-private-key-file", o.pkiPath("sa.key"),
		"--root-ca-file", o.pkiPath("ca.crt"),
		"--service-cluster-ip-range", o.ServiceCIDR.String(),
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(int(o.Ports.ControllerManager)),
		"--cert-dir", o.path("kube-controller-manager"),
		"--profiling=false",
	}}
}

func scheduler(o *Options) component {
	kc := o.componentKubeconfig("kube-scheduler")
	return component{name: "kube-scheduler", bin: o.bin("kube-scheduler"), args: []string{
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--leader-elect=false",
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(int(o.Ports.Scheduler)),
		"--cert-dir", o.path("kube-scheduler"),
		"--profiling=false",
	}}
}

func kubelet(o *Options) component {
	return component{name: "kubelet", bin: o.bin("kubelet"), args: []string{
		"--config", o.path("kubelet.yaml"),
		"--kubeconfig", o.componentKubeconfig("kubelet"),
		"--root-dir", o.path("kubelet"),
		"--cert-dir", o.path("kubelet", "pki"), // not under --root-dir by default
		"--hostname-override", o.Name,
		"--node-ip", o.Address.String(),
	}}
}

func kubeProxy(o *Options) component {
	return component{name: "kube-proxy", bin: o.bin("kube-proxy"), args: kubeProxyArgs(o)}
}

func kubeProxyArgs(o *Options) []string {
	return []string{
		"--kubeconfig", o.componentKubeconfig("kube-proxy"),
		"--hostname-override", o.Name,
		"--proxy-mode", "iptables",
		"--cluster-cidr", o.PodCIDR.String(),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", o.Ports.ProxyMetrics),
		"--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", o.Ports.ProxyHealthz),
		// NodePorts only on the cluster's address, never on the machine's
		// others, and never on 127.0.0.1 (which needs route_localnet).
		"--nodeport-addresses", o.Address.String() + "/32",
		"--iptables-localhost-nodeports=false",
		// Leave the machine's conntrack settings and this process's
		// oom_score_adj alone (a host may forbid lowering it).
		"--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0",
		"--conntrack-tcp-timeout-close-wait", "0",
		"--oom-score-adj", "0",
		"--profiling=false",
	}
}
