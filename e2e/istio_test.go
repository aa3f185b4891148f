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

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/e2e/cluster"
	"github.com/meshinit/meshinit/e2e/harness"
)

// Istio's names: the injector's MutatingWebhookConfiguration and
// ConfigMaps as its chart (istio-discovery) names them, its namespace
// label, its containers.
const (
	istioWebhook        = "istio-sidecar-injector"
	istioInjectionLabel = "istio-injection"
	istioProxy          = "istio-proxy"
	istioValidation     = "istio-validation"
	istioExcludeOut     = "traffic.sidecar.istio.io/excludeOutboundPorts"
)

// istio is Istio's injector as the test runs it: its binary and the
// objects Istio's own chart renders for it.
type istio struct {
	bin      string // hack/istio-injector's build: istio.io/istio/pkg/kube/inject
	chart    string // istio.io/istio's manifests/charts/istio-control/istio-discovery
	dir      string // the injector's files: config, values, mesh, its certificate
	caBundle []byte
	rendered map[string]map[string]any // "Kind/name": object
}

// buildIstio builds Istio's injector (hack/istio-injector/build.sh: once,
// cached by version) and finds Istio's chart in the module it was built
// from.
func buildIstio(t *testing.T, ctx context.Context) *istio {
	t.Helper()
	began := time.Now()
	cmd := exec.CommandContext(ctx, "nice", "-n", "19", "../hack/istio-injector/build.sh")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/istio-injector/build.sh: %v: %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("hack/istio-injector/build.sh printed %q, want the binary and the module directory", out)
	}
	t.Logf("timing: Istio's injector ready in %.1fs (%s)", time.Since(began).Seconds(), strings.TrimSpace(stderr.String()))
	return &istio{bin: lines[0], chart: filepath.Join(lines[1], "manifests/charts/istio-control/istio-discovery"), dir: t.TempDir()}
}

// render renders Istio's istio-discovery chart (helm template, release
// istiod in istio-system) with vals over the values the test needs: as for
// istio-cni (cni.enabled: no istio-init), the test proxy's image in place
// of proxyv2 (global.proxy.image and global.proxy_init.image take a full
// reference), and the injection webhook at url with the test's CA.
func (i *istio) render(t *testing.T, testProxy, url string, vals map[string]any) {
	t.Helper()
	ch, err := loader.Load(i.chart)
	if err != nil {
		t.Fatalf("Istio's chart: %v", err)
	}
	base := map[string]any{
		"cni": map[string]any{"enabled": true},
		"global": map[string]any{
			"proxy":      map[string]any{"image": testProxy},
			"proxy_init": map[string]any{"image": testProxy},
		},
		"istiodRemote": map[string]any{"injectionURL": url, "injectionCABundle": base64.StdEncoding.EncodeToString(i.caBundle)},
	}
	in := action.NewInstall(&action.Configuration{})
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.ReleaseName, in.Namespace = "istiod", "istio-system"
	in.KubeVersion = &chartutil.KubeVersion{Version: "v" + cluster.KubernetesVersion, Major: "1", Minor: strings.Split(cluster.KubernetesVersion, ".")[1]}
	rel, err := in.Run(ch, mergeValues(vals, base))
	if err != nil {
		t.Fatalf("helm template Istio's istio-discovery: %v", err)
	}
	i.rendered = map[string]map[string]any{}
	for doc := range strings.SplitSeq(rel.Manifest, "\n---") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("Istio's rendered chart: %v\n%s", err, doc)
		}
		if o == nil {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		i.rendered[fmt.Sprintf("%v/%v", o["kind"], md["name"])] = o
	}
}

// mergeValues is vals over base, recursively.
func mergeValues(vals, base map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range vals {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(vm, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// object returns the rendered object kind/name.
func (i *istio) object(t *testing.T, kindName string) map[string]any {
	t.Helper()
	o, ok := i.rendered[kindName]
	if !ok {
		keys := make([]string, 0, len(i.rendered))
		for k := range i.rendered {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Fatalf("Istio's chart rendered no %s (it rendered %v)", kindName, keys)
	}
	return o
}

// configMapData is the data of the rendered ConfigMap name.
func (i *istio) configMapData(t *testing.T, name string) map[string]string {
	t.Helper()
	data := map[string]string{}
	for k, v := range i.object(t, "ConfigMap/"+name)["data"].(map[string]any) {
		data[k] = v.(string)
	}
	return data
}

// certificate makes a CA and a serving certificate for 127.0.0.1, written
// as the injector's cert.pem and key.pem; the CA is i.caBundle.
func (i *istio) certificate(t *testing.T) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e Istio injector CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2),
		Subject: pkix.Name{CommonName: "istiod"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	i.caBundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	write(t, filepath.Join(i.dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}))
	write(t, filepath.Join(i.dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs Istio's injector on addr with the rendered chart's injection
// ConfigMap (istio-sidecar-injector: config, values) and mesh configuration
// (istio: mesh), as istiod mounts them, and ENABLE_NATIVE_SIDECARS native;
// it is stopped when the test ends.
func (i *istio) start(t *testing.T, ctx context.Context, addr string, native bool) {
	t.Helper()
	dir := filepath.Join(i.dir, fmt.Sprintf("native-%v", native))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	inj := i.configMapData(t, istioWebhook)
	write(t, filepath.Join(dir, "config"), []byte(inj["config"]))
	write(t, filepath.Join(dir, "values"), []byte(inj["values"]))
	write(t, filepath.Join(dir, "mesh"), []byte(i.configMapData(t, "istio")["mesh"]))
	logs, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(i.bin, "-config", filepath.Join(dir, "config"), "-values", filepath.Join(dir, "values"),
		"-mesh", filepath.Join(dir, "mesh"), "-listen", addr,
		"-cert", filepath.Join(i.dir, "cert.pem"), "-key", filepath.Join(i.dir, "key.pem"))
	cmd.Env = append(os.Environ(), fmt.Sprintf("ENABLE_NATIVE_SIDECARS=%v", native))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("Istio's injector (native sidecars %v) logged:\n%s", native, tail(string(b), 60))
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(i.caBundle)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if err := eventually(ctx, 30*time.Second, func() error {
		resp, err := client.Get("https://" + addr + "/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}); err != nil {
		b, _ := os.ReadFile(logs.Name())
		t.Fatalf("Istio's injector does not serve on %s: %v\n%s", addr, err, b)
	}
}

// manifestJSON is o as JSON, which kubectl reads as a manifest.
func manifestJSON(o map[string]any) string {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// webhookConfig is Istio's chart's MutatingWebhookConfiguration, renamed
// (the API server calls mutating webhooks in the order of their
// configurations' names) and pointed at url.
func (i *istio) webhookConfig(t *testing.T, name, url string) string {
	t.Helper()
	b, err := json.Marshal(i.object(t, "MutatingWebhookConfiguration/"+istioWebhook))
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	_ = json.Unmarshal(b, &o)
	o["metadata"].(map[string]any)["name"] = name
	for _, w := range o["webhooks"].([]any) {
		w.(map[string]any)["clientConfig"].(map[string]any)["url"] = url
	}
	b, _ = json.Marshal(o)
	return string(b)
}

// istioPreset is the chart's Istio preset (charts/meshinit/presets/istio.yaml).
func istioPreset(t *testing.T) map[string]any {
	t.Helper()
	ch, err := charts.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ch.Files {
		if f.Name == "presets/istio.yaml" {
			var p map[string]any
			if err := yaml.Unmarshal(f.Data, &p); err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatal("the chart has no presets/istio.yaml")
	return nil
}

// podShape is what the test compares between webhook orders: the pod's
// init containers and containers by name (with restartPolicy Always for a
// native sidecar), and meshinit-redirect's arguments.
func podShape(t *testing.T, podJSON string) string {
	t.Helper()
	var p struct {
		Spec struct {
			InitContainers []struct {
				Name          string   `json:"name"`
				Args          []string `json:"args"`
				RestartPolicy string   `json:"restartPolicy"`
			} `json:"initContainers"`
			Containers []struct {
				Name string `json:"name"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(podJSON), &p); err != nil {
		t.Fatalf("pod: %v\n%s", err, podJSON)
	}
	var b strings.Builder
	b.WriteString("init:")
	for _, c := range p.Spec.InitContainers {
		b.WriteString(" " + c.Name)
		if c.RestartPolicy == "Always" {
			b.WriteString("(sidecar)")
		}
	}
	b.WriteString("; containers:")
	for _, c := range p.Spec.Containers {
		b.WriteString(" " + c.Name)
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == redirectName {
			fmt.Fprintf(&b, "; %s %s", redirectName, strings.Join(c.Args, " "))
		}
	}
	return b.String()
}

// TestIstioComposition runs Istio's real sidecar injector
// (istio.io/istio/pkg/kube/inject at the version hack/istio-injector pins,
// with the injection template, values and webhook configuration Istio's
// own chart renders, configured as for istio-cni) next to meshinit
// installed with mesh=istio, on the local cluster. Istio's proxy image
// cannot run here: its template's image is the test proxy's, which, run
// with pilot-agent's command lines, stands in for istio-proxy (outbound
// 15001, inbound 15006, /healthz/ready on 15021, as UID 1337) and for
// istio-validation (Istio's check that a redirect is in place). For native
// sidecars and classic ones, and with either webhook called first, a pod
// in a namespace opted in to both gets both injections and becomes Ready;
// its inbound and outbound connections reach the proxy with their original
// destination; Istio's own ports and the proxy's own connections go direct;
// and the pod is the same whichever webhook ran first. A server-side dry
// run shows both injections, and the RedirectPolicy's refusal of Istio's
// exclusion annotation on a required port.
func TestIstioComposition(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Minute)
	defer cancel()
	began := time.Now()
	e := setup(t, ctx)
	if !e.IsLocal() {
		t.Skip("skipped: Istio's injector runs on this host, where only the local cluster's API server reaches it")
	}
	ist := buildIstio(t, ctx)
	img := e.images
	ist.certificate(t)
	const nativeAddr, classicAddr = "127.0.0.1:15117", "127.0.0.1:15118"
	ist.render(t, img.TestProxy, "https://"+nativeAddr+"/inject", nil)
	step := time.Now()
	ist.start(t, ctx, nativeAddr, true)
	ist.start(t, ctx, classicAddr, false)
	t.Logf("timing: Istio's injectors serving %.1fs", time.Since(step).Seconds())

	// meshinit with the Istio preset; the harness's trusted proxies (its
	// own test pods') replaced by the preset's, with the test proxy's
	// image in place of Istio's proxyv2.
	preset := istioPreset(t)
	var trusted []any
	for _, p := range preset["proxyContainers"].([]any) {
		entry := map[string]any{}
		for k, v := range p.(map[string]any) {
			entry[k] = v
		}
		entry["image"] = img.TestProxy
		trusted = append(trusted, entry)
	}
	step = time.Now()
	e.install(t, ctx, map[string]any{"mesh": "istio", "policy": map[string]any{"proxyContainers": trusted}})
	t.Cleanup(func() { e.uninstall(t, context.Background()) })
	t.Logf("timing: meshinit installed with mesh=istio %.1fs", time.Since(step).Seconds())

	plain := e.createNamespace(t, ctx, "e2e-istio-plain", nil)
	mustCreate := func(t *testing.T, ns, manifest string) {
		t.Helper()
		if _, err := e.Kubectl(ctx, manifest, "-n", ns, "create", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, plain, img.PlainPod("client", nil, nil))
	clientIP := e.ready(t, ctx, plain, "client")

	istioConfigs := []string{istioWebhook, "zz-" + istioWebhook}
	t.Cleanup(func() {
		for _, name := range istioConfigs {
			_, _ = e.Kubectl(context.Background(), "", "delete", "mutatingwebhookconfiguration", name, "--ignore-not-found")
		}
	})

	// A namespace opted in to both, with the root certificate istiod's
	// namespace controller would write there (istio-proxy mounts it).
	optedIn := func(t *testing.T, prefix string) string {
		t.Helper()
		ns := e.createNamespace(t, ctx, prefix, map[string]string{istioInjectionLabel: "enabled", injectionLabel: "enabled"})
		e.apply(t, ctx, manifestJSON(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "istio-ca-root-cert", "namespace": ns},
			"data":     map[string]any{"root-cert.pem": string(ist.caBundle)}}))
		return ns
	}

	shapes := map[bool]map[string]string{true: {}, false: {}}
	for _, native := range []bool{true, false} {
		addr := map[bool]string{true: nativeAddr, false: classicAddr}[native]
		kind := map[bool]string{true: "native sidecars", false: "classic sidecars"}[native]
		// Istio's configuration is named istio-sidecar-injector, before
		// meshinit's (meshinit); zz-istio-sidecar-injector comes after it.
		for _, first := range []string{"istio", "meshinit"} {
			name := map[string]string{"istio": istioConfigs[0], "meshinit": istioConfigs[1]}[first]
			other := map[string]string{"istio": istioConfigs[1], "meshinit": istioConfigs[0]}[first]
			t.Run(fmt.Sprintf("%s, %s's webhook called first", kind, first), func(t *testing.T) {
				step := time.Now()
				defer func() { t.Logf("timing: %.1fs", time.Since(step).Seconds()) }()
				e.must(t, ctx, "delete", "mutatingwebhookconfiguration", other, "--ignore-not-found")
				e.apply(t, ctx, ist.webhookConfig(t, name, "https://"+addr+"/inject"))
				ns := optedIn(t, "e2e-istio")
				app := img.PlainPod("app", nil, nil)
				// The API server sees the webhook configuration after a moment.
				var dry string
				if err := eventually(ctx, 60*time.Second, func() error {
					out, err := e.Kubectl(ctx, app, "-n", ns, "create", "--dry-run=server", "-f", "-", "-o", "json")
					if err != nil {
						return err
					}
					dry = out
					if s := podShape(t, out); !strings.Contains(s, istioProxy) || !strings.Contains(s, redirectName) {
						return fmt.Errorf("dry-run pod %s: want both %s and %s", s, istioProxy, redirectName)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				shape := podShape(t, dry)
				t.Logf("pod: %s", shape)
				shapes[native][first] = shape
				if strings.Contains(shape, "istio-init") {
					t.Errorf("Istio injected istio-init, configured as for istio-cni: %s", shape)
				}
				if native != strings.Contains(shape, istioProxy+"(sidecar)") {
					t.Errorf("%s: pod %s", kind, shape)
				}
				if t.Failed() {
					t.FailNow()
				}
				mustCreate(t, ns, app)
				ip := e.ready(t, ctx, ns, "app")
				if got, want := e.dial(t, ctx, plain, "client", "client", ip+":8080"), "istio-proxy/inbound orig="+ip+":8080"; got != want {
					t.Errorf("inbound to the app's port 8080 answered %q, want %q", got, want)
				}
				if got, want := e.dial(t, ctx, ns, "app", "app", clientIP+":8080"), "istio-proxy/outbound orig="+clientIP+":8080"; got != want {
					t.Errorf("the app's outbound to %s:8080 answered %q, want %q", clientIP, got, want)
				}
				// Istio's own inbound ports (pilot-agent's 15020, Envoy's
				// 15090) are not redirected; nor is the proxy's own traffic.
				for _, port := range []string{"15020", "15090"} {
					if got, want := e.dial(t, ctx, plain, "client", "client", ip+":"+port), "istio-proxy/"+port; got != want {
						t.Errorf("inbound to Istio's port %s answered %q, want %q", port, got, want)
					}
				}
				if got := e.dial(t, ctx, ns, "app", istioProxy, clientIP+":8080"); got != "client" {
					t.Errorf("istio-proxy's own outbound to %s:8080 answered %q, want %q", clientIP, got, "client")
				}
				if t.Failed() {
					if rules, err := e.NATRules(ctx, ns, "app"); err == nil {
						t.Logf("app's nat rules:\n%s", rules)
					}
				}
			})
		}
	}
	for _, native := range []bool{true, false} {
		if a, b := shapes[native]["istio"], shapes[native]["meshinit"]; a != "" && b != "" && a != b {
			t.Errorf("native sidecars %v: the pod differs with the order of the webhooks:\nIstio's first:    %s\nmeshinit's first: %s", native, a, b)
		}
	}

	t.Run("a server-side dry run shows both injections and the RedirectPolicy's refusal of Istio's exclusion of a required port", func(t *testing.T) {
		// One Istio injector, as in a cluster: two would inject istio-proxy twice.
		e.must(t, ctx, "delete", "mutatingwebhookconfiguration", istioConfigs[1], "--ignore-not-found")
		e.apply(t, ctx, ist.webhookConfig(t, istioConfigs[0], "https://"+nativeAddr+"/inject"))
		ns := optedIn(t, "e2e-istio-policy")
		e.apply(t, ctx, harness.RequiredOutboundPortPolicy(ns, "require-8080", 8080))
		want := "port 8080 is required by RedirectPolicy " + ns + "/require-8080 and cannot be listed in " + istioExcludeOut
		// Where a RedirectPolicy requires an outbound port, every container
		// but the trusted proxies runs as an explicit UID other than the
		// proxy's.
		ownUID := func(manifest string) string {
			var p map[string]any
			if err := json.Unmarshal([]byte(manifest), &p); err != nil {
				t.Fatal(err)
			}
			for _, c := range p["spec"].(map[string]any)["containers"].([]any) {
				sc := c.(map[string]any)["securityContext"].(map[string]any)
				sc["runAsUser"], sc["runAsGroup"] = 1000, 1000
			}
			return manifestJSON(p)
		}
		excluded := ownUID(img.PlainPod("excludes-8080", nil, map[string]string{istioExcludeOut: "8080"}))
		// The API server's policy informer sees a new RedirectPolicy after
		// a moment.
		if err := eventually(ctx, 60*time.Second, func() error {
			_, err := e.Kubectl(ctx, excluded, "-n", ns, "apply", "--dry-run=server", "-f", "-")
			if err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("kubectl apply --dry-run=server: %v; want an error containing %q", err, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		allowed := ownUID(img.PlainPod("allowed", nil, nil))
		out, err := e.Kubectl(ctx, allowed, "-n", ns, "apply", "--dry-run=server", "-f", "-", "-o", "json")
		if err != nil {
			// What Istio injected, as the API server stores it: what the
			// preset's policy.proxyContainers entries must trust.
			free := optedIn(t, "e2e-istio-free")
			injected, _ := e.Kubectl(ctx, allowed, "-n", free, "apply", "--dry-run=server", "-f", "-", "-o", "json")
			t.Fatalf("kubectl apply --dry-run=server of a pod excluding nothing: %v\nthe pod where no RedirectPolicy requires a port:\n%s", err, injected)
		}
		shape := podShape(t, out)
		if !strings.Contains(shape, istioProxy) || !strings.Contains(shape, istioValidation) || !strings.Contains(shape, redirectName) {
			t.Errorf("dry-run pod %s: want %s, %s and %s", shape, istioProxy, istioValidation, redirectName)
		}
	})
	t.Logf("timing: total %.1fs", time.Since(began).Seconds())
}
