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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The components that talk to the API server, each with its own token and
// kubeconfig (the admin's is StateDir/kubeconfig).
var tokenUsers = []string{"admin", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}

// configFiles returns every configuration file the cluster needs, by path,
// given the CA certificate (PEM) and a token per entry of tokenUsers. It
// touches nothing, so tests can read what Up would write.
func configFiles(o *Options, caPEM []byte, tokens map[string]string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var csv strings.Builder
	for _, user := range tokenUsers {
		fmt.Fprintf(&csv, "%s,%s,%s,\"system:masters\"\n", tokens[user], user, user)
		file := o.componentKubeconfig(user)
		if user == "admin" {
			file = o.kubeconfig()
		}
		b, err := clientcmd.Write(kubeconfigOf(o, caPEM, user, tokens[user]))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig of %s: %w", user, err)
		}
		files[file] = b
	}
	files[o.path("pki", "tokens.csv")] = []byte(csv.String())
	files[o.path("containerd", "config.toml")] = containerdConfig(o)
	files[o.path("cni", "net.d", "10-"+o.Name+".conflist")] = cniConfig(o)
	files[o.path("kubelet.yaml")] = kubeletConfig(o)
	return files, nil
}

func writeFiles(files map[string][]byte) error {
	for file, data := range files {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) apiServerURL() string {
	return fmt.Sprintf("https://%s:%d", o.Address, o.Ports.APIServer)
}

// kubeconfigOf is the kubeconfig of user, who authenticates with token and
// trusts the cluster's CA (caPEM).
func kubeconfigOf(o *Options, caPEM []byte, user, token string) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[o.Name] = &clientcmdapi.Cluster{Server: o.apiServerURL(), CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[o.Name] = &clientcmdapi.Context{Cluster: o.Name, AuthInfo: user}
	cfg.CurrentContext = o.Name
	return *cfg
}

// containerdConfig is a containerd 1.6 config (version 2) that keeps every
// path of its own under StateDir: root, state, sockets, runc's state, the
// CNI configuration and the pods' network namespaces. The other settings
// are containerd's defaults.
func containerdConfig(o *Options) []byte {
	return fmt.Appendf(nil, `version = 2
root = %[1]q
state = %[2]q
# Not needed here.
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

# The CRI plugin needs it loaded, though it runs no task of it.
[plugins."io.containerd.runtime.v1.linux"]
  runtime_root = %[7]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  # Where a host forbids lowering oom_score_adj, without this every sandbox
  # fails with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  # Pods' network namespaces under state, not /var/run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[6]q
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # runc's own state, /run/containerd/runc by default.
        Root = %[7]q
        SystemdCgroup = false
`, o.path("containerd", "root"), o.path("containerd", "state"), o.containerdSocket(),
		o.path("containerd", "opt"), o.SandboxImage, o.path("cni", "net.d"), o.path("containerd", "runc"))
}

// cniConfig is one bridge network: host-local addresses from PodCIDR (kept
// under StateDir), the bridge as the pods' gateway, hairpin so a pod reaches
// itself through its Service. No masquerading and no port mapping: pods
// only talk to this machine, so the CNI plugins add no iptables rules.
func cniConfig(o *Options) []byte {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       o.Name,
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      o.Bridge,
			"isGateway":   true,
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": o.PodCIDR.String(), "gateway": o.gateway().String()}}},
				"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				"dataDir": o.path("cni", "ipam"),
			},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		panic(err) // only maps of strings, bools and slices
	}
	return append(b, '\n')
}

// kubeletConfig is the kubelet's KubeletConfiguration: what a plain host
// without systemd needs (cgroup v1 allowed, with cgroupfs; no QoS cgroups
// or node allocatable; swap allowed; no eviction), every path under
// StateDir, and no iptables or kernel tunables the cluster does not need.
func kubeletConfig(o *Options) []byte {
	return fmt.Appendf(nil, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]s
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%[5]s
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: false
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# No cluster DNS: pods get an empty resolv.conf (see doc.go).
resolvConf: ""
clusterDomain: cluster.local
podLogsDir: %[6]s
volumePluginDir: %[7]s
# Only for other components' benefit (KUBE-IPTABLES-HINT, KUBE-FIREWALL);
# kube-proxy makes what the cluster needs.
makeIPTablesUtilChains: false
`, o.Address, o.Ports.Kubelet, o.Ports.KubeletHealthz, o.pkiPath("ca.crt"), o.containerdSocket(),
		o.path("pod-logs"), o.path("kubelet", "volume-plugins"))
}
