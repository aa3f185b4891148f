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

package redirect_test

// Parity tables: for a mesh's preset and a table of pod annotations, the
// connections that reach the proxy and those that go direct are the same
// with meshinit's rules as with the mesh's own tool, each programmed into
// a fresh network namespace of its own, on both iptables backends.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/internal/testproxy"
	"github.com/meshinit/meshinit/redirect"
)

// parityPreset is what the parity tables read of a chart preset
// (charts/meshinit/presets/<mesh>.yaml): the settings the webhook's
// configuration holds with the preset on and no values of the user's
// (charts' TestPresetsAreTheChartsOnlyCopy), and the mesh annotations.
type parityPreset struct {
	Redirect    map[string]string         `json:"redirect"`
	Annotations []redirect.MeshAnnotation `json:"annotations"`
}

func loadParityPreset(t *testing.T, mesh string) (parityPreset, redirect.Config) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "charts", "meshinit", "presets", mesh+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p parityPreset
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatalf("presets/%s.yaml: %v", mesh, err)
	}
	// As webhook/config.go reads the chart's configuration.
	base, err := redirect.FromSettings(p.Redirect, redirect.Defaults())
	if err != nil {
		t.Fatalf("presets/%s.yaml: %v", mesh, err)
	}
	return p, base
}

// meshinitArgs are the redirector's arguments for a pod with annotations,
// as the webhook writes them (webhook/mutate.go: FromPodAnnotations over
// the configuration's settings; webhook/container.go: apply and Args),
// on the backend under test.
func meshinitArgs(t *testing.T, preset parityPreset, base redirect.Config, annotations map[string]string, mode string) []string {
	t.Helper()
	c, err := redirect.FromPodAnnotations(annotations, base, preset.Annotations)
	if err != nil {
		t.Fatalf("the webhook refuses %v: %v", annotations, err)
	}
	return append(append([]string{"apply"}, c.Args()...), "--iptables-mode="+mode)
}

// A parityRow is a pod's annotations, made of the pod's addresses.
type parityRow struct {
	name        string
	annotations func(a parityAddrs) map[string]string
}

// parityAddrs are a pod's addresses as a row's annotations use them.
type parityAddrs struct{ peer, peer2 string }

// A parityDifference is a deliberate difference: on probe, meshinit's
// namespace answers meshinit and the mesh's tool's answers mesh, for the
// reason given (which docs/meshes-<mesh>.md gives too). Answers and probes
// name addresses by role (pod, peer, peer2); each of the three is a
// path.Match pattern ("out uid-5996 *", "peer-*").
type parityDifference struct {
	probe, meshinit, mesh string
	reason                string
}

// A parityMesh is one preset's table.
type parityMesh struct {
	mesh string
	// tool programs the mesh's own redirect for annotations into the
	// pod's namespace, on its backend; it fails t when the tool fails.
	tool        func(t *testing.T, p *pod, annotations map[string]string)
	rows        []parityRow
	differences []parityDifference
	// appPorts are the app's ports probed inbound (and 8080 outbound over
	// loopback and the pod's address), besides the preset's ports left
	// alone and the proxy's ports.
	appPorts []int
	// peerPorts are the ports probed outbound at the peer.
	peerPorts []int
	// identities probed outbound besides the app's, the proxy's UID and
	// the proxy's GID.
	identities []identity
}

// identity is a UID and GID connections are made as, by name.
type identity struct {
	name     string
	uid, gid int
}

// probe is one connection of a table: its name and where it is made.
type probe struct {
	name     string
	inbound  bool // from the peer's namespace as root, else from the pod's
	uid, gid int
	dst      func(p *pod) string
}

func parityProbes(m parityMesh, base redirect.Config) []probe {
	puid, pgid := int(base.ProxyUID), int(base.ProxyGID)
	var out []probe
	for _, id := range append([]identity{{"app", appUID, appUID}, {"proxy-uid", puid, appUID}, {"proxy-gid", appUID, pgid}}, m.identities...) {
		for _, port := range m.peerPorts {
			out = append(out, probe{fmt.Sprintf("out %s peer:%d", id.name, port), false, id.uid, id.gid,
				func(p *pod) string { return hostPort(p.peerIP, port) }})
		}
		out = append(out,
			probe{fmt.Sprintf("out %s peer2:%d", id.name, m.peerPorts[0]), false, id.uid, id.gid,
				func(p *pod) string { return hostPort(p.peerIP2, m.peerPorts[0]) }},
			probe{fmt.Sprintf("out %s 127.0.0.1:%d", id.name, m.appPorts[0]), false, id.uid, id.gid,
				func(p *pod) string { return hostPort("127.0.0.1", m.appPorts[0]) }},
			probe{fmt.Sprintf("out %s pod:%d", id.name, m.appPorts[0]), false, id.uid, id.gid,
				func(p *pod) string { return hostPort(p.podIP, m.appPorts[0]) }})
	}
	for _, port := range inboundPorts(m, base) {
		out = append(out, probe{fmt.Sprintf("in pod:%d", port), true, 0, 0,
			func(p *pod) string { return hostPort(p.podIP, port) }})
	}
	return out
}

// inboundPorts are the app's ports, the preset's ports left alone and the
// proxy's two ports.
func inboundPorts(m parityMesh, base redirect.Config) []int {
	ports := slices.Clone(m.appPorts)
	for _, a := range strings.Split(base.IgnoredInboundPorts.String(), ",") {
		if n, err := strconv.Atoi(a); err == nil {
			ports = append(ports, n)
		}
	}
	return append(ports, int(base.OutboundProxyPort), int(base.InboundProxyPort))
}

// startParityServers runs the proxy's two listeners, the app's ports and
// the ports left alone in the pod, and the peer's ports.
func startParityServers(p *pod, m parityMesh, base redirect.Config) {
	out, in := int(base.OutboundProxyPort), int(base.InboundProxyPort)
	p.serve(p.podNS, out, "proxy-outbound")
	p.serve(p.podNS, in, "proxy-inbound")
	for _, port := range inboundPorts(m, base) {
		if port != out && port != in {
			p.serve(p.podNS, port, fmt.Sprintf("app-%d", port))
		}
	}
	for _, port := range m.peerPorts {
		p.serve(p.peerNS, port, fmt.Sprintf("peer-%d", port))
	}
}

// run makes every probe in p and returns the answers by probe name, with
// the pod's addresses named by role.
func (p *pod) run(probes []probe) map[string]string {
	p.t.Helper()
	roles := strings.NewReplacer(p.peerIP2+":", "peer2:", p.peerIP+":", "peer:", p.podIP+":", "pod:")
	out := map[string]string{}
	for _, pr := range probes {
		var got string
		if pr.inbound {
			got = askOrError(p.peerNS, pr.dst(p))
		} else {
			got = p.client(pr.uid, pr.gid, "tcp", pr.dst(p))
		}
		out[pr.name] = roles.Replace(got)
	}
	return out
}

// askOrError is what a connection from ns to addr was answered, or
// "error: ..." when none came.
func askOrError(ns netns.NsHandle, addr string) string {
	line, err := inNS(ns, 0, 0, func() (string, error) {
		return testproxy.Ask(func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 3*time.Second) })
	})
	if err != nil {
		return "error: " + err.Error()
	}
	return line
}

// runParity runs m's table: for each backend and row, meshinit's
// redirector with the webhook's arguments in one fresh namespace, the
// mesh's tool in another, the same probes in both; the answers must be
// equal but for m's deliberate differences, each of which must occur.
func runParity(t *testing.T, m parityMesh) {
	preset, base := loadParityPreset(t, m.mesh)
	probes := parityProbes(m, base)
	used := map[int]bool{}
	for _, mode := range backends {
		t.Run(mode, func(t *testing.T) {
			for _, row := range m.rows {
				t.Run(row.name, func(t *testing.T) {
					mine := newPod(t, mode)
					theirs := newPod(t, mode)
					// The annotations name addresses by role: the same in
					// both namespaces once the answers are read by role.
					annMine := row.annotations(parityAddrs{mine.peerIP, mine.peerIP2})
					annTheirs := row.annotations(parityAddrs{theirs.peerIP, theirs.peerIP2})
					startParityServers(mine, m, base)
					startParityServers(theirs, m, base)
					if out, err := mine.redirector(nil, meshinitArgs(t, preset, base, annMine, mode)...); err != nil {
						t.Fatalf("redirector: %v\n%s", err, out)
					}
					m.tool(t, theirs, annTheirs)
					a, b := mine.run(probes), theirs.run(probes)
					var table strings.Builder
					fmt.Fprintf(&table, "%-28s | %-40s | %s\n", "probe", "meshinit", m.mesh)
					for _, pr := range probes {
						mark := ""
						if a[pr.name] != b[pr.name] {
							i := slices.IndexFunc(m.differences, func(d parityDifference) bool {
								return match(d.probe, pr.name) && match(d.meshinit, a[pr.name]) && match(d.mesh, b[pr.name])
							})
							if i < 0 {
								t.Errorf("%s: meshinit %q, %s %q: an undocumented difference", pr.name, a[pr.name], m.mesh, b[pr.name])
								mark = "  <- DIFFERS"
							} else {
								used[i] = true
								mark = "  <- deliberate: " + m.differences[i].reason
							}
						}
						fmt.Fprintf(&table, "%-28s | %-40s | %s%s\n", pr.name, a[pr.name], b[pr.name], mark)
					}
					t.Logf("annotations %v:\n%s", annMine, table.String())
				})
			}
		})
	}
	if !t.Failed() {
		for i, d := range m.differences {
			if !used[i] {
				t.Errorf("deliberate difference %q (%s) never occurred: remove it", d.probe, d.reason)
			}
		}
	}
}

// meshCommand builds, once a test binary, the command pkg of the separate
// module in ../<module> (a mesh's own code at the version pinned there) as
// <temp dir>/meshinit-parity/name: one path, replaced by a rename, so runs
// leave no directories behind and a concurrent run keeps the binary it
// started.
func meshCommand(module, pkg, name string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir := filepath.Join(os.TempDir(), "meshinit-parity")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		tmp, err := os.CreateTemp(dir, name+".*")
		if err != nil {
			return "", err
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		cmd := exec.Command("go", "build", "-o", tmp.Name(), pkg)
		cmd.Dir = filepath.Join("..", module)
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s in %s: %v\n%s", pkg, module, err, out)
		}
		bin := filepath.Join(dir, name)
		return bin, os.Rename(tmp.Name(), bin)
	})
}

func match(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return ok && err == nil
}

// istioIptables is Istio's `pilot-agent istio-iptables`, built from
// hack/bench/istio (the version pinned there).
var istioIptables = meshCommand("hack/bench/istio", "./istio-iptables", "istio-iptables")

// istioCNI programs Istio's redirect as istio-cni does for a pod its
// injector injected: the injector writes includeInboundPorts ("*" unless
// set) and excludeInboundPorts (its status port 15020 and the pod's)
// (injection-template.yaml), then istio-cni reads the annotations
// (cni/pkg/plugin/sidecar_redirect.go NewRedirect, with its defaults: all
// CIDRs, outbound port 15020 excluded while excludeOutboundPorts is unset,
// 15020, 15021 and 15090 always excluded inbound) and runs istio-iptables
// with them (sidecar_iptables_linux.go Program), here as pilot-agent
// istio-iptables' flags.
func istioCNI(t *testing.T, p *pod, a map[string]string) {
	t.Helper()
	bin, err := istioIptables()
	if err != nil {
		t.Fatal(err)
	}
	get := func(key, def string) string {
		if v, ok := a["traffic.sidecar.istio.io/"+key]; ok {
			return v
		}
		return def
	}
	mode := a["sidecar.istio.io/interceptionMode"]
	if mode == "" {
		mode = "REDIRECT"
	}
	exclIn := "15020"
	if v := get("excludeInboundPorts", ""); v != "" {
		exclIn += "," + v
	}
	args := []string{
		"-p", "15001", "-z", "15006", "-u", "1337", "-g", "1337", "-m", mode,
		"-i", get("includeOutboundIPRanges", "*"), "-x", get("excludeOutboundIPRanges", ""),
		"-b", get("includeInboundPorts", "*"), "-d", exclIn + ",15020,15021,15090",
		"-o", get("excludeOutboundPorts", "15020"), "-q", get("includeOutboundPorts", ""),
		"--force-iptables-binary", p.mode,
	}
	if out, err := p.redirectorCmd(append([]string{bin}, args...)...); err != nil {
		t.Fatalf("istio-iptables %q: %v\n%s", args, err, out)
	}
}

func annotationsOf(kv ...string) func(parityAddrs) map[string]string {
	return func(parityAddrs) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
}

// TestParityIstio: the Istio preset against istio-cni's redirect.
func TestParityIstio(t *testing.T) {
	const ann = "traffic.sidecar.istio.io/"
	runParity(t, parityMesh{
		mesh:      "istio",
		tool:      istioCNI,
		appPorts:  []int{8080, 9080},
		peerPorts: []int{9090, 9091, 15020},
		rows: []parityRow{
			{"defaults", annotationsOf()},
			{"interceptionMode REDIRECT", annotationsOf("sidecar.istio.io/interceptionMode", "REDIRECT")},
			{"excludeOutboundPorts", annotationsOf(ann+"excludeOutboundPorts", "9091")},
			{"excludeInboundPorts", annotationsOf(ann+"excludeInboundPorts", "9080")},
			{"includeInboundPorts", annotationsOf(ann+"includeInboundPorts", "8080")},
			{"excludeOutboundIPRanges", func(a parityAddrs) map[string]string {
				return map[string]string{ann + "excludeOutboundIPRanges": a.peer2 + "/32"}
			}},
			{"includeOutboundIPRanges", func(a parityAddrs) map[string]string {
				return map[string]string{ann + "includeOutboundIPRanges": a.peer + "/32"}
			}},
			{"all exclusions", func(a parityAddrs) map[string]string {
				return map[string]string{ann + "excludeOutboundPorts": "9091,15020", ann + "excludeInboundPorts": "9080",
					ann + "excludeOutboundIPRanges": a.peer2 + "/32"}
			}},
		},
		differences: []parityDifference{
			{"out app peer:15020", "proxy-outbound orig=peer:15020", "peer-15020",
				"istio-cni excludes outbound port 15020 to every destination while excludeOutboundPorts is unset; " +
					"meshinit excludes no outbound port unless asked (exclude-outbound-ports: 15020 keeps Istio's)"},
			{"in pod:15001", "proxy-outbound", "proxy-inbound orig=pod:15001",
				"meshinit leaves inbound connections to the proxy's own ports alone; istio-iptables sends those to 15001 " +
					"to the inbound listener: the proxy answers either way"},
		},
	})
}

// consulRedirect is Consul's transparent-proxy redirect (consul/sdk's
// iptables.Setup, which consul-cni calls), built from hack/parity/consul.
var consulRedirect = meshCommand("hack/parity/consul", ".", "consul-redirect")

// iptablesOnly is a directory whose iptables and ip6tables are mode's
// backend, for tools that run whichever "iptables" PATH finds.
func iptablesOnly(t *testing.T, mode string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"iptables", "ip6tables", "iptables-save", "ip6tables-save", "iptables-restore", "ip6tables-restore"} {
		real, err := exec.LookPath(strings.Replace(name, "tables", "tables-"+mode, 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// consulCNI programs Consul's redirect as consul-cni does for a pod that
// consul-k8s's injector injected: the injector writes the redirect's
// configuration into the pod (redirect_traffic.go: proxy UID 5995, its init
// container's UID 5996 exempt, inbound 20000, outbound 15001, the pod's
// exclusion annotations; metrics, the proxy health check and Consul DNS
// off, as by default), and consul-cni passes it to iptables.Setup.
func consulCNI(t *testing.T, p *pod, a map[string]string) {
	t.Helper()
	bin, err := consulRedirect()
	if err != nil {
		t.Fatal(err)
	}
	list := func(key string, first ...string) []string {
		for v := range strings.SplitSeq(a["consul.hashicorp.com/transparent-proxy-"+key], ",") {
			if v = strings.TrimSpace(v); v != "" {
				first = append(first, v)
			}
		}
		return first
	}
	cfg, err := json.Marshal(map[string]any{
		"ProxyUserID": "5995", "ProxyInboundPort": 20000, "ProxyOutboundPort": 15001,
		"ExcludeInboundPorts": list("exclude-inbound-ports"), "ExcludeOutboundPorts": list("exclude-outbound-ports"),
		"ExcludeOutboundCIDRs": list("exclude-outbound-cidrs"), "ExcludeUIDs": list("exclude-uids", "5996"),
	})
	if err != nil {
		t.Fatal(err)
	}
	path := iptablesOnly(t, p.mode) + ":" + os.Getenv("PATH")
	if out, err := p.redirectorCmd("env", "PATH="+path, bin, string(cfg)); err != nil {
		t.Fatalf("consul-redirect %s: %v\n%s", cfg, err, out)
	}
}

// TestParityConsul: the Consul preset against consul-cni's redirect.
func TestParityConsul(t *testing.T) {
	const ann = "consul.hashicorp.com/transparent-proxy-"
	runParity(t, parityMesh{
		mesh:       "consul",
		tool:       consulCNI,
		appPorts:   []int{8080, 9080},
		peerPorts:  []int{9090, 9091},
		identities: []identity{{"uid-5996", 5996, 5996}, {"uid-4242", 4242, 4242}},
		rows: []parityRow{
			{"defaults", annotationsOf()},
			{"exclude-outbound-ports", annotationsOf(ann+"exclude-outbound-ports", "9091")},
			{"exclude-inbound-ports", annotationsOf(ann+"exclude-inbound-ports", "9080")},
			{"exclude-outbound-cidrs", func(a parityAddrs) map[string]string {
				return map[string]string{ann + "exclude-outbound-cidrs": a.peer2 + "/32"}
			}},
			{"exclude-uids", annotationsOf(ann+"exclude-uids", "4242")},
			{"all exclusions", func(a parityAddrs) map[string]string {
				return map[string]string{ann + "exclude-outbound-ports": "9091", ann + "exclude-inbound-ports": "9080",
					ann + "exclude-outbound-cidrs": a.peer2 + "/32", ann + "exclude-uids": "4242"}
			}},
		},
		differences: []parityDifference{
			{"out uid-5996 *", "proxy-outbound orig=*", "peer-*",
				"consul-k8s exempts its init container's UID 5996; meshinit exempts no UID but the proxy's " +
					"(the RedirectPolicy cannot tell Consul's init container from a pod author's)"},
			{"out proxy-gid *", "peer-*", "proxy-outbound orig=*",
				"meshinit exempts the proxy's GID as well as its UID (consul-dataplane runs as both); Consul matches the UID only"},
			{"out * pod:8080", "app-8080", "proxy-outbound orig=pod:8080",
				"meshinit, like istio-iptables, sends the app's connections to the pod's own address straight to it " +
					"(they never leave the pod); Consul returns only 127.0.0.1 and sends them to the outbound listener"},
			{"out proxy-uid pod:8080", "proxy-inbound orig=pod:8080", "app-8080",
				"meshinit, like istio-iptables, sends the proxy's connections to the pod's own address to its inbound " +
					"listener; Consul lets them through to the app"},
			{"in pod:15001", "proxy-outbound", "proxy-inbound orig=pod:15001",
				"meshinit leaves inbound connections to the proxy's own ports alone; Consul sends those to 15001 to " +
					"the inbound listener: the proxy answers either way"},
		},
	})
}
