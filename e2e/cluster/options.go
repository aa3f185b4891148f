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
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// KubernetesVersion is the version of the binaries the cluster runs, built
// by `make tools-cluster` (the Makefile and hack/tools/go.mod pin it too).
const KubernetesVersion = "v1.37.2"

// Options say where the cluster lives. Each field's zero value means its
// default; every default is chosen so that the cluster shares nothing with
// another cluster or program on the machine.
type Options struct {
	// Name is the node's name and the CNI network's name.
	// Default: "meshinit-e2e".
	Name string
	// StateDir holds everything the cluster writes: certificates,
	// kubeconfigs, etcd's data, containerd's root and state, the kubelet's
	// root, logs and the record of what was started. Down removes it.
	// Default: /var/lib/meshinit-e2e.
	StateDir string
	// BinDir holds kube-apiserver, kubectl, etcd, kubelet,
	// kube-controller-manager, kube-scheduler and kube-proxy.
	// Default: $MESHINIT_CACHE/kubernetes-<KubernetesVersion>/bin, with
	// MESHINIT_CACHE defaulting to /var/cache/meshinit (what
	// `make tools-cluster` fills).
	BinDir string
	// Address is the cluster's own IPv4 address, added as a /32 on lo: the
	// API server and the kubelet listen and are advertised there.
	// Default: 10.250.0.1.
	Address netip.Addr
	// PodCIDR is the node's pod subnet, served by the bridge.
	// Default: 10.250.1.0/24.
	PodCIDR netip.Prefix
	// ServiceCIDR is the Service ClusterIP range; its first address is
	// the `kubernetes` Service. Default: 10.250.2.0/24.
	ServiceCIDR netip.Prefix
	// Bridge is the name of the pods' bridge (at most 15 bytes).
	// Default: "meshinit-e2e0".
	Bridge string
	// Ports the components listen on. Default: see Ports.
	Ports Ports
	// SandboxImage is the name containerd gives the pod sandbox ("pause")
	// image, which Up builds and imports. Default:
	// "localhost/meshinit-e2e/pause:v1".
	SandboxImage string
	// Go is the go command that builds the sandbox image's program.
	// Default: $GO, else "go".
	Go string
	// Logf receives one line per step of Up and Down. Default: discard.
	Logf func(format string, args ...any) `json:"-"`
}

// Ports of the components. Each default is the upstream default port with
// its leading digits replaced by 16, below Linux's ephemeral port range.
type Ports struct {
	// APIServer is kube-apiserver's secure port on Address. Default: 16443.
	APIServer uint16
	// EtcdClient and EtcdPeer are etcd's ports on 127.0.0.1.
	// Default: 16379 and 16380.
	EtcdClient, EtcdPeer uint16
	// ControllerManager and Scheduler are their secure ports on 127.0.0.1.
	// Default: 16257 and 16259.
	ControllerManager, Scheduler uint16
	// Kubelet is the kubelet's API on Address. Default: 16250.
	Kubelet uint16
	// KubeletHealthz is the kubelet's healthz on 127.0.0.1. Default: 16248.
	KubeletHealthz uint16
	// ProxyMetrics and ProxyHealthz are kube-proxy's on 127.0.0.1.
	// Default: 16249 and 16256.
	ProxyMetrics, ProxyHealthz uint16
}

func (o *Options) setDefaults() error {
	if o.Name == "" {
		o.Name = "meshinit-e2e"
	}
	if o.StateDir == "" {
		o.StateDir = "/var/lib/meshinit-e2e"
	}
	if o.BinDir == "" {
		cache := os.Getenv("MESHINIT_CACHE")
		if cache == "" {
			cache = "/var/cache/meshinit"
		}
		o.BinDir = filepath.Join(cache, "kubernetes-"+KubernetesVersion, "bin")
	}
	if !o.Address.IsValid() {
		o.Address = netip.MustParseAddr("10.250.0.1")
	}
	if !o.PodCIDR.IsValid() {
		o.PodCIDR = netip.MustParsePrefix("10.250.1.0/24")
	}
	if !o.ServiceCIDR.IsValid() {
		o.ServiceCIDR = netip.MustParsePrefix("10.250.2.0/24")
	}
	if o.Bridge == "" {
		o.Bridge = "meshinit-e2e0"
	}
	p := &o.Ports
	for _, d := range []struct {
		port *uint16
		def  uint16
	}{
		{&p.APIServer, 16443}, {&p.EtcdClient, 16379}, {&p.EtcdPeer, 16380},
		{&p.ControllerManager, 16257}, {&p.Scheduler, 16259},
		{&p.Kubelet, 16250}, {&p.KubeletHealthz, 16248},
		{&p.ProxyMetrics, 16249}, {&p.ProxyHealthz, 16256},
	} {
		if *d.port == 0 {
			*d.port = d.def
		}
	}
	if o.SandboxImage == "" {
		o.SandboxImage = "localhost/meshinit-e2e/pause:v1"
	}
	if o.Go == "" {
		o.Go = os.Getenv("GO")
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o.validate()
}

func (o *Options) validate() error {
	var errs []error
	if !filepath.IsAbs(o.StateDir) || filepath.Clean(o.StateDir) == "/" {
		errs = append(errs, fmt.Errorf("StateDir %q: want an absolute path other than /", o.StateDir))
	}
	if !o.Address.Is4() {
		errs = append(errs, fmt.Errorf("Address %s: want an IPv4 address", o.Address))
	}
	for _, c := range []struct {
		field  string
		prefix netip.Prefix
	}{{"PodCIDR", o.PodCIDR}, {"ServiceCIDR", o.ServiceCIDR}} {
		if !c.prefix.Addr().Is4() || c.prefix.Bits() > 29 || c.prefix.Masked() != c.prefix {
			errs = append(errs, fmt.Errorf("%s %s: want an IPv4 network of at least 8 addresses", c.field, c.prefix))
		} else if c.prefix.Contains(o.Address) {
			errs = append(errs, fmt.Errorf("%s %s contains Address %s", c.field, c.prefix, o.Address))
		}
	}
	if o.PodCIDR.Overlaps(o.ServiceCIDR) {
		errs = append(errs, fmt.Errorf("PodCIDR %s overlaps ServiceCIDR %s", o.PodCIDR, o.ServiceCIDR))
	}
	if len(o.Bridge) > 15 {
		errs = append(errs, fmt.Errorf("Bridge %q: longer than 15 bytes", o.Bridge))
	}
	seen := map[uint16]string{}
	for _, p := range o.Ports.list() {
		if other, ok := seen[p.port]; ok {
			errs = append(errs, fmt.Errorf("Ports: %s and %s are both %d", other, p.name, p.port))
		}
		seen[p.port] = p.name
	}
	return errors.Join(errs...)
}

type namedPort struct {
	name string
	port uint16
}

func (p Ports) list() []namedPort {
	return []namedPort{
		{"APIServer", p.APIServer}, {"EtcdClient", p.EtcdClient}, {"EtcdPeer", p.EtcdPeer},
		{"ControllerManager", p.ControllerManager}, {"Scheduler", p.Scheduler},
		{"Kubelet", p.Kubelet}, {"KubeletHealthz", p.KubeletHealthz},
		{"ProxyMetrics", p.ProxyMetrics}, {"ProxyHealthz", p.ProxyHealthz},
	}
}

// Paths inside StateDir.
func (o *Options) path(elem ...string) string {
	return filepath.Join(append([]string{o.StateDir}, elem...)...)
}

// kubeconfig is the admin kubeconfig: the one Cluster.Kubeconfig returns.
func (o *Options) kubeconfig() string { return o.path("kubeconfig") }

// componentKubeconfig is the kubeconfig of one component (its own token).
func (o *Options) componentKubeconfig(component string) string {
	return o.path("kubeconfigs", component)
}

// containerdSocket is the gRPC socket of the cluster's own containerd.
func (o *Options) containerdSocket() string { return o.path("containerd", "containerd.sock") }

// kubernetesServiceIP is the first address of ServiceCIDR.
func (o *Options) kubernetesServiceIP() netip.Addr { return o.ServiceCIDR.Addr().Next() }

// gateway is the bridge's address: the first address of PodCIDR.
func (o *Options) gateway() netip.Addr { return o.PodCIDR.Addr().Next() }
