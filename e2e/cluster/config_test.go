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
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func testOptions(t *testing.T) *Options {
	t.Helper()
	o := &Options{StateDir: "/srv/e2e-state", BinDir: "/opt/k8s/bin"}
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	return o
}

// Every absolute path a configuration file names is under StateDir, except
// the few that must be elsewhere: a leaked default (/var/lib/containerd,
// /etc/cni/net.d, /var/lib/kubelet, ...) would share state with other
// clusters on the machine.
func TestConfigPathsStayInStateDir(t *testing.T) {
	o := testOptions(t)
	allowed := map[string]bool{"/usr/lib/cni": true}
	tokens := map[string]string{}
	for _, u := range tokenUsers {
		tokens[u] = "token-" + u
	}
	files, err := configFiles(o, []byte("ca"), tokens)
	if err != nil {
		t.Fatal(err)
	}
	comments := regexp.MustCompile(`(?m)^\s*#.*$`)
	paths := regexp.MustCompile(`(?:^|[\s"=]|unix://)(/[A-Za-z0-9._/-]+)`)
	for file, data := range files {
		if !strings.HasPrefix(file, o.StateDir+"/") {
			t.Errorf("%s is written outside %s", file, o.StateDir)
		}
		for _, m := range paths.FindAllStringSubmatch(comments.ReplaceAllString(string(data), ""), -1) {
			if p := m[1]; !strings.HasPrefix(p, o.StateDir+"/") && !allowed[p] {
				t.Errorf("%s names %s, outside %s", file, p, o.StateDir)
			}
		}
	}
	for _, c := range []component{etcd(o), containerd(o), apiServer(o), controllerManager(o), scheduler(o), kubelet(o), kubeProxy(o)} {
		for _, a := range c.args {
			if strings.HasPrefix(a, "/") && !strings.HasPrefix(a, o.StateDir+"/") {
				t.Errorf("%s: argument %s is outside %s", c.name, a, o.StateDir)
			}
		}
	}
}

func TestCNIConfig(t *testing.T) {
	o := testOptions(t)
	var conf struct {
		Name    string
		Plugins []struct {
			Type, Bridge string
			IPMasq       bool
			IPAM         struct {
				Ranges  [][]struct{ Subnet, Gateway string }
				DataDir string
			}
		}
	}
	if err := json.Unmarshal(cniConfig(o), &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Plugins) != 1 {
		t.Fatalf("plugins: %+v, want only the bridge", conf.Plugins)
	}
	p := conf.Plugins[0]
	r := p.IPAM.Ranges[0][0]
	if conf.Name != "meshinit-e2e" || p.Type != "bridge" || p.Bridge != "meshinit-e2e0" || p.IPMasq ||
		r.Subnet != "10.250.1.0/24" || r.Gateway != "10.250.1.1" || p.IPAM.DataDir != "/srv/e2e-state/cni/ipam" {
		t.Errorf("unexpected CNI config: %s", cniConfig(o))
	}
}

// A client built from a component's kubeconfig, as client-go and kubectl
// read it, reaches the API server as that user and trusts the cluster's CA.
func TestKubeconfigNamesTheAPIServer(t *testing.T) {
	o := testOptions(t)
	b, err := clientcmd.Write(kubeconfigOf(o, []byte("ca"), "admin", "secret"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.250.0.1:16443" || cfg.BearerToken != "secret" || string(cfg.CAData) != "ca" {
		t.Errorf("client of host %q, token %q, CA %q; want https://10.250.0.1:16443, secret, ca\n%s", cfg.Host, cfg.BearerToken, cfg.CAData, b)
	}
}

func TestOptionsValidate(t *testing.T) {
	for name, c := range map[string]struct {
		opts Options
		want string
	}{
		"relative state": {Options{StateDir: "state"}, `StateDir "state": want an absolute path`},
		"root state":     {Options{StateDir: "/"}, `StateDir "/"`},
		"ipv6 address":   {Options{Address: netip.MustParseAddr("fd00::1")}, "Address fd00::1: want an IPv4 address"},
		"overlap":        {Options{ServiceCIDR: netip.MustParsePrefix("10.250.1.0/25")}, "PodCIDR 10.250.1.0/24 overlaps ServiceCIDR 10.250.1.0/25"},
		"address in pods": {Options{PodCIDR: netip.MustParsePrefix("10.250.0.0/24")},
			"PodCIDR 10.250.0.0/24 contains Address 10.250.0.1"},
		"unmasked":    {Options{PodCIDR: netip.MustParsePrefix("10.9.0.1/24")}, "PodCIDR 10.9.0.1/24: want an IPv4 network"},
		"long bridge": {Options{Bridge: "a-very-long-bridge"}, `Bridge "a-very-long-bridge": longer than 15 bytes`},
		"same ports":  {Options{Ports: Ports{Kubelet: 16443}}, "Ports: APIServer and Kubelet are both 16443"},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.opts.setDefaults()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestShimSocket(t *testing.T) {
	// As containerd 1.6 names it, computed by hand:
	// printf %s /run/x/containerd.sock/k8s.io/abc | sha256sum
	got := shimSocket("/run/x/containerd.sock", "k8s.io", "abc")
	if want := "/run/containerd/s/4b5f7cdae6b27b26870ef49bd6487e789b767856244ce0a43302a346a1ccae0c"; got != want {
		t.Errorf("shimSocket = %s, want %s", got, want)
	}
}

func TestKubeChainsRemoval(t *testing.T) {
	save := `# Generated by iptables-nft-save v1.8.9 (nf_tables)
*mangle
:PREROUTING ACCEPT [0:0]
COMMIT
*filter
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-PROXY-CANARY - [0:0]
-A INPUT -j KUBE-FIREWALL
-A INPUT -s 10.0.0.0/8 -j ACCEPT
-A OUTPUT -m comment --comment "kubernetes firewall" -j KUBE-FIREWALL
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -j DROP
COMMIT
`
	want := `*filter
-D INPUT -j KUBE-FIREWALL
-D OUTPUT -m comment --comment "kubernetes firewall" -j KUBE-FIREWALL
-F KUBE-FIREWALL
-F KUBE-PROXY-CANARY
-X KUBE-FIREWALL
-X KUBE-PROXY-CANARY
COMMIT
`
	if got := kubeChainsRemoval(save); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := kubeChainsRemoval("*nat\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n"); got != "" {
		t.Errorf("without KUBE-* chains: got %q, want nothing", got)
	}
}
