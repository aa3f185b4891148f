package cluster

import (
	"encoding/json"
	"net/netip"
	"regexp"
	"strings"
	"testing"
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
	files := configFiles(o, []byte("ca"), tokens)
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

func TestKubeconfigNamesTheAPIServer(t *testing.T) {
	o := testOptions(t)
	got := string(kubeconfigYAML(o, []byte("ca"), "admin", "secret"))
	for _, want := range []string{"server: https://10.250.0.1:16443\n", "token: secret\n", "certificate-authority-data: Y2E=\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, got)
		}
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
