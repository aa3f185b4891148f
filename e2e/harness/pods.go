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

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// Labels, annotations and names meshinit's users see (docs/configuration.md, "Labels" and "Annotations").
const (
	InjectionLabel = "meshinit.io/injection"
	InjectLabel    = "meshinit.io/inject"
	RedirectName   = "meshinit-redirect"
	ExcludeInbound = "traffic.meshinit.io/exclude-inbound-ports"
	CaptureDNS     = "traffic.meshinit.io/capture-dns"
	// StatusAnnotation is what the webhook writes on the pods it injects.
	StatusAnnotation = "meshinit.io/status"
	// testServer is the test images' program (internal/testproxy).
	testServer = "/usr/local/bin/testserver"
)

// PodSecurityLabel opts a namespace in to the chart's PodSecurity guard
// (docs/podsecurity.md); EnforceLabel is the PodSecurity plugin's own.
const (
	PodSecurityLabel = "meshinit.io/pod-security"
	EnforceLabel     = "pod-security.kubernetes.io/enforce"
)

// proxyUser runs a container as the proxy UID and GID (the redirector's
// default 1337), whose connections are not redirected.
var proxyUser = map[string]any{"runAsUser": 1337, "runAsGroup": 1337}

// AppPod is a pod whose traffic a proxy handles: the test app listening on
// 8080 and 8081, and the test proxy as two containers (UID 1337, named to
// the policy as proxy containers by Install), one on the outbound port
// 15001 and one on the inbound port 15006, each answering with its name and
// the original destination.
func (i Images) AppPod(name string, labels, annotations map[string]string) string {
	return pod(name, labels, annotations,
		container("app", i.TestApp, nil, "-listen", ":8080,:8081", "-name", "app"),
		container("proxy-out", i.TestProxy, proxyUser, "-listen", ":15001", "-name", "proxy-out"),
		container("proxy-in", i.TestProxy, proxyUser, "-listen", ":15006", "-name", "proxy-in"),
	)
}

// DNSAppPod is AppPod with DNS capture on (capture-dns=all) and a third
// proxy container, proxy-dns (UID 1337), answering DNS over UDP and TCP on
// the DNS proxy port 15053 with its name. It listens at 127.0.0.1, where
// REDIRECT delivers the pod's own packets: a UDP socket bound to the
// wildcard address would answer from the pod's IP, which conntrack does not
// take for the answer to the redirected query.
func (i Images) DNSAppPod(name string) string {
	return pod(name, nil, map[string]string{CaptureDNS: "all"},
		container("app", i.TestApp, nil, "-listen", ":8080,:8081", "-name", "app"),
		container("proxy-out", i.TestProxy, proxyUser, "-listen", ":15001", "-name", "proxy-out"),
		container("proxy-in", i.TestProxy, proxyUser, "-listen", ":15006", "-name", "proxy-in"),
		container("proxy-dns", i.TestProxy, proxyUser, "-listen", ":15098", "-dns", "127.0.0.1:15053", "-name", "proxy-dns"),
	)
}

// NameserverPod is the cluster's stand-in nameserver (the local cluster has
// none): the test app answering DNS over UDP and TCP on port 53 with name
// (the pod lowers net.ipv4.ip_unprivileged_port_start, a safe sysctl, so
// any user may bind it).
func (i Images) NameserverPod(name string) string {
	var p map[string]any
	if err := json.Unmarshal([]byte(pod(name, nil, nil, container(name, i.TestApp, nil, "-listen", ":8080", "-dns", ":53", "-name", name))), &p); err != nil {
		panic(err)
	}
	p["spec"].(map[string]any)["securityContext"] = map[string]any{
		"sysctls": []any{map[string]any{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}},
	}
	return manifest(p)
}

// PlainPod runs the test app alone, answering on 8080 as name: a client to
// dial from, or a pod to see admitted or not.
func (i Images) PlainPod(name string, labels, annotations map[string]string) string {
	return pod(name, labels, annotations, container(name, i.TestApp, nil, "-listen", ":8080", "-name", name))
}

// HostPathPod is PlainPod with the node's root file system mounted: what
// PodSecurity baseline exists to refuse.
func (i Images) HostPathPod(name string) string {
	var p map[string]any
	if err := json.Unmarshal([]byte(i.PlainPod(name, nil, nil)), &p); err != nil {
		panic(err)
	}
	p["spec"].(map[string]any)["volumes"] = []any{map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}}}
	return manifest(p)
}

// RequiredInboundPortPolicy is a RedirectPolicy in ns that requires
// inbound port to be intercepted and lets pods opt out of injection
// (AllowOptOut, as the tests install the chart's default RedirectPolicy).
func RequiredInboundPortPolicy(ns, name string, port int) string {
	return redirectPolicy(ns, name, "requiredInboundPorts", port)
}

// RequiredOutboundPortPolicy is RequiredInboundPortPolicy for an outbound
// port: it also keeps every container but the proxy's off the proxy's UID.
func RequiredOutboundPortPolicy(ns, name string, port int) string {
	return redirectPolicy(ns, name, "requiredOutboundPorts", port)
}

func redirectPolicy(ns, name, field string, port int) string {
	return manifest(map[string]any{
		"apiVersion": "meshinit.io/v1alpha1", "kind": "RedirectPolicy",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{field: []int{port}, "interception": "AllowOptOut"},
	})
}

// ForgedAppPod is AppPod bringing its own init container under meshinit's
// name (the redirector's image printing its version: no rules at all) and
// the meshinit.io/status annotation copied from an injected pod: what a
// pod's author would try to keep its traffic away from the proxy.
func (i Images) ForgedAppPod(name, status string) string {
	var p map[string]any
	if err := json.Unmarshal([]byte(i.AppPod(name, nil, map[string]string{StatusAnnotation: status})), &p); err != nil {
		panic(err)
	}
	p["spec"].(map[string]any)["initContainers"] = []any{container(RedirectName, i.Redirector, nil, "version")}
	return manifest(p)
}

// ProxyUIDPod is PlainPod running as the proxy's UID and GID, whose
// connections the redirect rules never touch.
func (i Images) ProxyUIDPod(name string) string {
	return pod(name, nil, nil, container(name, i.TestApp, proxyUser, "-listen", ":8080", "-name", name))
}

// Deployment is a one-replica Deployment in ns of the test app on 8080,
// its pod template annotated with annotations.
func (i Images) Deployment(ns, name string, annotations map[string]string) string {
	labels := map[string]string{"app": name}
	return manifest(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels, "annotations": annotations},
				"spec":     map[string]any{"containers": []any{container("app", i.TestApp, nil, "-listen", ":8080")}},
			},
		},
	})
}

// container is a container running image with args, with securityContext
// or, when nil, hardened: no privilege escalation, no capabilities (what a
// RedirectPolicy requiring ports asks of a container that is not a proxy;
// the test app binds no privileged port, and its image's user is its own,
// 65532).
func container(name, image string, securityContext map[string]any, args ...string) map[string]any {
	c := map[string]any{"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "args": args}
	if securityContext == nil {
		securityContext = hardened
	}
	c["securityContext"] = securityContext
	return c
}

// hardened is the securityContext of the tests' app containers.
var hardened = map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}}

// pod is a pod of containers that stops at once when deleted.
func pod(name string, labels, annotations map[string]string, containers ...map[string]any) string {
	return manifest(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": labels, "annotations": annotations},
		"spec":     map[string]any{"terminationGracePeriodSeconds": 1, "containers": containers},
	})
}

// manifest is o as JSON, which kubectl reads as YAML.
func manifest(o map[string]any) string {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Namespace is a namespace's manifest.
func Namespace(name string, labels map[string]string) string {
	return manifest(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}})
}

// WaitReady waits for a pod to be Ready and returns its IP. The error of
// a pod that does not get Ready holds its status.
func (c *Cluster) WaitReady(ctx context.Context, ns, name string) (string, error) {
	if _, err := c.Kubectl(ctx, "", "-n", ns, "wait", "pod/"+name, "--for", "condition=Ready", "--timeout", "180s"); err != nil {
		status, _ := c.Kubectl(ctx, "", "-n", ns, "get", "pod", name, "-o", "jsonpath={.status}")
		return "", fmt.Errorf("%w\nstatus: %s", err, status)
	}
	return c.Kubectl(ctx, "", "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.podIP}")
}

// InitContainers lists the names of a pod's init containers.
func (c *Cluster) InitContainers(ctx context.Context, ns, name string) ([]string, error) {
	out, err := c.Kubectl(ctx, "", "-n", ns, "get", "pod", name, "-o", "jsonpath={.spec.initContainers[*].name}")
	return strings.Fields(out), err
}

// Dial connects from a container of a pod running a test image to addr and
// returns the line it was answered with: a test server's name, and
// "orig=<address>" when the connection was redirected to it.
func (c *Cluster) Dial(ctx context.Context, ns, pod, container, addr string) (string, error) {
	out, err := c.Kubectl(ctx, "", "-n", ns, "exec", pod, "-c", container, "--", testServer, "-dial", addr, "-timeout", "20s")
	if err != nil {
		return "", fmt.Errorf("dial %s from %s/%s: %w", addr, pod, container, err)
	}
	return out, nil
}

// AskDNS sends a DNS query over network (udp or tcp) to addr from a pod's
// container and returns the answer's text: the name of the server that
// answered.
func (c *Cluster) AskDNS(ctx context.Context, ns, pod, container, network, addr string) (string, error) {
	out, err := c.Kubectl(ctx, "", "-n", ns, "exec", pod, "-c", container, "--", testServer, "-dial", addr, "-dns-over", network, "-timeout", "20s")
	if err != nil {
		return "", fmt.Errorf("DNS over %s to %s from %s/%s: %w", network, addr, pod, container, err)
	}
	return out, nil
}

// NATRules is the nat table of a pod's network namespace
// (`iptables-save -t nat` there, nft or legacy, whichever holds meshinit's
// chains), read from the node: the local cluster only.
func (c *Cluster) NATRules(ctx context.Context, ns, pod string) (string, error) {
	if c.local == nil {
		return "", fmt.Errorf("reading pod %s/%s's rules needs the node: only on the local cluster", ns, pod)
	}
	id, err := c.Kubectl(ctx, "", "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	if err != nil {
		return "", err
	}
	id = strings.TrimPrefix(id, "containerd://")
	pid, err := exec.CommandContext(ctx, "ctr", "--address", c.Containerd, "-n", "k8s.io", "task", "ls").Output()
	if err != nil {
		return "", fmt.Errorf("ctr task ls: %w", err)
	}
	for line := range strings.SplitSeq(string(pid), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == id {
			// The redirector chose nft unless legacy tables held rules.
			var out []byte
			for _, save := range []string{"iptables-nft-save", "iptables-legacy-save"} {
				out, err = exec.CommandContext(ctx, "nsenter", "--net=/proc/"+f[1]+"/ns/net", save, "-t", "nat").CombinedOutput()
				if err != nil {
					return "", fmt.Errorf("%s in pod %s/%s: %w: %s", save, ns, pod, err, out)
				}
				if strings.Contains(string(out), "MESHINIT") {
					break
				}
			}
			return string(out), nil
		}
	}
	return "", fmt.Errorf("no running task for pod %s/%s's container %s", ns, pod, id)
}
